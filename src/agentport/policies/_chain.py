"""Which failures move a failover chain on (pure; the chain's names are parsed by
`agentport._chain`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import ErrorKind

__all__ = ["DEFAULT_FAILOVER_ON", "failover_kinds"]

DEFAULT_FAILOVER_ON: frozenset[ErrorKind] = frozenset(
    {
        ErrorKind.not_installed,
        ErrorKind.auth_required,
        ErrorKind.rate_limited,
        ErrorKind.quota_exhausted,
        ErrorKind.timeout,
        ErrorKind.server_error,
        ErrorKind.overloaded,
        ErrorKind.model_not_found,
        ErrorKind.network,
        ErrorKind.process_failed,
        ErrorKind.unsupported,
        ErrorKind.runaway,  # this member's loop is stopped; another may answer
    }
)
"""Failures another backend can fix: the chain moves on. Never the caller's own
(`invalid_request`, `schema_mismatch`, `context_length`, `config`, `bad_output`)."""


def failover_kinds(names: Sequence[str]) -> frozenset[ErrorKind]:
    """`[llm] failover_on` names -> kinds; `ValueError` naming an unknown kind."""
    kinds = set()
    for name in names:
        try:
            kinds.add(ErrorKind(name.strip()))
        except ValueError:
            known = ", ".join(k.value for k in ErrorKind)
            raise ValueError(f"unknown error kind {name!r}; known: {known}") from None
    return frozenset(kinds)
