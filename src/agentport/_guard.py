"""A switch that makes real backends refuse to run inside unit tests."""

from __future__ import annotations

import os

from .core import ErrorKind, ProviderError

__all__ = ["ALLOW_ENV", "BLOCK_ENV", "ensure_real_backends_allowed"]

BLOCK_ENV = "AGENTPORT_BLOCK_REAL_BACKENDS"
ALLOW_ENV = "AGENTPORT_ALLOW_REAL_BACKENDS"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def ensure_real_backends_allowed(backend: str) -> None:
    """Raise `ProviderError(config)` when real backends are blocked and not explicitly allowed.

    Blocked when `AGENTPORT_BLOCK_REAL_BACKENDS=1` (set by `agentport.testing.block_real_backends`
    or a test suite's conftest) unless `AGENTPORT_ALLOW_REAL_BACKENDS=1`.
    """
    if _truthy(os.environ.get(BLOCK_ENV)) and not _truthy(os.environ.get(ALLOW_ENV)):
        raise ProviderError(
            ErrorKind.config,
            f"real backend {backend!r} is blocked in unit tests; use agentport.testing, or set "
            f"{ALLOW_ENV}=1 for tests that must reach a real backend",
            backend=backend,
        )
