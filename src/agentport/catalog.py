"""The capabilities catalog: the single source of truth for every backend.

Each entry owns the backend's canonical name, aliases, kind, executable, install hint,
`verified_against` and a `ParamSupport` for every `Param`. Nothing else declares names or
aliases; backend modules look their entry up here. Only implemented backends are registered.
Pure data: importing this module imports no backend.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from .core import (
    BackendCapability,
    BackendKind,
    ErrorKind,
    Param,
    ParamSupport,
    ProviderError,
    normalize_name,
)

__all__ = ["CATALOG", "all_backends", "get_capability", "resolve_backend"]

N, T, I = ParamSupport.NATIVE, ParamSupport.TRANSLATED, ParamSupport.IGNORED  # noqa: E741


def _params(**support: ParamSupport) -> dict[Param, ParamSupport]:
    return {Param(name): value for name, value in support.items()}


_ENTRIES: tuple[BackendCapability, ...] = (
    BackendCapability(
        name="scripted",
        aliases=("script", "fake"),
        kind=BackendKind.test,
        summary="Test double: replies from rules you script (agentport.testing.ScriptedAdapter).",
        module="agentport.testing._backend",
        params=_params(
            system_prompt=N, output_schema=N, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
        ),
        notes={Param.output_schema: "replies are validated against the schema"},
    ),
    BackendCapability(
        name="echo",
        aliases=("test",),
        kind=BackendKind.test,
        summary="Test double: answers with the last user message; also an AgentRuntime.",
        module="agentport.testing._backend",
        supports_runtime=True,
        params=_params(
            system_prompt=I, output_schema=T, temperature=I, max_tokens=I, model=I,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=N, session_resume=N,
            cwd=I, web_search=I,
        ),
        notes={Param.output_schema: "the echoed text is validated against the schema"},
    ),
)  # fmt: skip


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
