"""The capabilities catalog: the single source of truth for every backend.

Each entry owns the backend's canonical name, aliases, kind, executable, install hint,
`verified_against` and a `ParamSupport` for every `Param`. Nothing else declares names or
aliases; backend modules look their entry up here. Only implemented backends are registered.
The entries themselves are written in the private `agentport._catalog_data` package (split
only to keep files short); this module is the one public place that indexes and serves them.
Pure data: importing this module imports no backend.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from ._catalog_data import ENTRIES as _ENTRIES
from .core import BackendCapability, ErrorKind, ProviderError, normalize_name

__all__ = ["CATALOG", "all_backends", "get_capability", "resolve_backend"]


def _index(entries: tuple[BackendCapability, ...]) -> dict[str, BackendCapability]:
    index: dict[str, BackendCapability] = {}
    for entry in entries:
        for name in entry.names:
            key = normalize_name(name)
            if key in index:
                raise RuntimeError(f"catalog: name {key!r} is declared twice")
            index[key] = entry
    return index


CATALOG: Mapping[str, BackendCapability] = {e.name: e for e in _ENTRIES}
_BY_NAME = _index(_ENTRIES)


def all_backends() -> tuple[BackendCapability, ...]:
    """Every registered backend, in catalog order."""
    return _ENTRIES


def resolve_backend(name: str) -> str:
    """Canonical name for *name* or one of its aliases (case-, space- and dash-insensitive).

    Raises `ProviderError(ErrorKind.config)` listing the known names and the closest match.
    `auto` is not resolved here (see `agentport.factory`).
    """
    key = normalize_name(name)
    entry = _BY_NAME.get(key)
    if entry is not None:
        return entry.name
    close = difflib.get_close_matches(key, list(_BY_NAME), n=1, cutoff=0.6)
    hint = f" did you mean {_BY_NAME[close[0]].name!r}?" if close else ""
    known = ", ".join(sorted(CATALOG))
    raise ProviderError(
        ErrorKind.config, f"unknown backend {name!r};{hint} known backends: {known}, auto"
    )


def get_capability(name: str) -> BackendCapability:
    """The catalog entry for a backend name or alias."""
    return CATALOG[resolve_backend(name)]
