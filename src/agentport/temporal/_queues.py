"""Task queues: one per backend, and how many calls of it one worker runs at once.

Why a queue per backend: a worker polls only the queues of the backends installed (and
logged in) on its machine, so a `codex` call is never handed to a machine without `codex`,
and each queue gets its own concurrency cap.

How the cap holds across a cluster. Temporal has no server-side limit on the number of
activities running from one task queue (only a rate per second), so the cap is per worker:
a worker runs at most `concurrency[backend]` calls of that backend at once (the SDK's
`max_concurrent_activities` of that queue's worker), and the cluster runs at most the sum of
the caps of the workers serving the queue. That is the limit that matters: a CLI's memory
(a Node or Bun process of a few hundred MB) and its login (the subscription window of the
account signed in on that machine) are both per machine, so the deployment rule is one worker
per machine and login (docs/deployment.md), and the cluster total is the number of machines x
the per-machine cap, printed by every worker when it starts. A cap independent of the number
of workers is `[temporal] cluster_concurrency`: a semaphore workflow per queue in front of
every call (`_semaphore`).

Pure: no temporalio import, usable from workflow code.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._chain import parse_chain
from ..catalog import get_capability, resolve_backend
from ..core import BackendKind, ErrorKind, ProviderError

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_PREFIX",
    "concurrency_for",
    "queue_for",
    "workflow_queue",
]

DEFAULT_PREFIX = "agentport"

# Calls of one backend a worker runs at once when `[temporal] concurrency` does not say.
# Agent CLIs: 2 (each is a Node/Bun process of a few hundred MB that spends one login's
# window); the in-process model: 1 (it holds the model in RAM and saturates the CPU); HTTP
# endpoints: 8 (the server queues); test doubles: 32.
DEFAULT_CONCURRENCY: Mapping[BackendKind, int] = {
    BackendKind.cli: 2,
    BackendKind.local: 1,
    BackendKind.http: 8,
    BackendKind.test: 32,
}


def _canonical(backend: str) -> list[str]:
    try:
        names = list(parse_chain(backend))
    except ValueError as exc:
        raise ProviderError(ErrorKind.config, str(exc)) from None
    if "auto" in names:
        raise ProviderError(
            ErrorKind.config,
            f"a Temporal task queue needs a named backend, not {backend!r}; "
            "set llm.backend or pass --backend",
        )
    return names


def queue_for(backend: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The task queue of *backend* (name or alias): `"<prefix>.<canonical name>"`, e.g.
    `agentport.codex`; a failover chain `"codex,claude"` gets `agentport.codex+claude` (its
    worker needs every member installed). Raises `ProviderError(config)` for an unknown
    backend or `auto` (a queue is a promise about one machine's CLIs)."""
    return f"{prefix}.{'+'.join(_canonical(backend))}"


def workflow_queue(prefix: str = DEFAULT_PREFIX) -> str:
    """The task queue of the workflows themselves (no model call runs there):
    `"<prefix>.workflows"`."""
    return f"{prefix}.workflows"


def concurrency_for(backend: str, configured: Mapping[str, int] | None = None) -> int:
    """Calls of *backend* one worker runs at once: `configured[backend]` (keys are names or
    aliases, from `[temporal] concurrency`), else `DEFAULT_CONCURRENCY` of its kind (for a
    chain, the smallest of its members'). Raises `ProviderError(config)` for a value below 1
    or an unknown name."""
    names = _canonical(backend)
    caps: dict[str, int] = {}
    for key, value in (configured or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ProviderError(
                ErrorKind.config, f"temporal.concurrency.{key}: must be an integer >= 1"
            )
        caps[resolve_backend(key)] = value
    joined = "+".join(names)
    if joined in caps:
        return caps[joined]
    return min(caps.get(n, DEFAULT_CONCURRENCY[get_capability(n).kind]) for n in names)
