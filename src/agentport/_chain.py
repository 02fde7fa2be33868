"""`llm.backend` as an ordered failover chain: parsing and validation (pure).

`"codex"` is a chain of one; `["codex", "claude", "local"]` in a TOML file or
`AGENTPORT_LLM_BACKEND=codex,claude,local` in the environment is a chain of three, tried in
order (`agentport.policies.FailoverAdapter`). Names are resolved through the catalog (aliases
allowed); `auto` may appear once, as the last member. Bad input is a one-line `ValueError` (the
settings loader adds the source and field): an empty chain or member, an unknown name (with
"did you mean"), the same backend twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from .catalog import resolve_backend
from .core import ProviderError

__all__ = ["as_chain", "parse_chain"]


def as_chain(value: str | Sequence[str]) -> tuple[str, ...]:
    """The raw members of *value*: a comma list or a sequence of names, stripped; raises
    `ValueError` for an empty chain or an empty member."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(p, str) for p in parts):
        raise ValueError("every member of the backend chain must be a string")
    names = tuple(p.strip() for p in parts)
    if not names or names == ("",):
        raise ValueError("the backend chain is empty; name at least one backend")
    if any(not n for n in names):
        raise ValueError(f"the backend chain {','.join(names)!r} has an empty member")
    return names


def parse_chain(value: str | Sequence[str]) -> tuple[str, ...]:
    """Canonical backend names of the chain *value*, in order (`auto` kept as is, only as the
    last member). Raises `ValueError` with one line for an empty chain, an unknown backend
    (did you mean) or a duplicate."""
    out: list[str] = []
    names = as_chain(value)
    for i, name in enumerate(names):
        if name.lower() == "auto":
            if i != len(names) - 1:
                raise ValueError("'auto' may only be the last member of the backend chain")
            canonical = "auto"
        else:
            try:
                canonical = resolve_backend(name)
            except ProviderError as exc:
                raise ValueError(exc.message) from None
        if canonical in out:
            raise ValueError(f"backend {canonical!r} appears twice in the chain")
        out.append(canonical)
    return tuple(out)
