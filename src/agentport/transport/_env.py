"""The child environment: recursion markers removed, a depth counter that refuses runaway
nesting, and an argv-length guard. Pure apart from reading the mapping it is given.

Source: library-anchors.md §2 #5 (argv limits) and #6 (`CLAUDECODE` makes a nested claude
refuse to start); ouroboros.md §10 #1 (recursive startup, fixed with a depth counter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core import ErrorKind, ProviderError

__all__ = [
    "DEPTH_ENV",
    "MAX_ARGV_BYTES",
    "MAX_ARG_BYTES",
    "MAX_DEPTH",
    "NESTING_MARKERS",
    "check_argv",
    "child_env",
]

DEPTH_ENV = "AGENTPORT_DEPTH"
MAX_DEPTH = 3
# Variables an agent CLI sets for its own children; inherited, they make a nested CLI refuse
# to start or believe it runs inside its parent's session.
NESTING_MARKERS: tuple[str, ...] = (
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CODEX_THREAD_ID",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "GEMINI_CLI",
    "GEMINI_CLI_IDE_SERVER_PORT",
)
# Linux caps one argument at 128 KiB (MAX_ARG_STRLEN) and argv+env at ARG_MAX (often 2 MiB);
# Windows at 32 767 characters in all. Stay well below both.
MAX_ARG_BYTES = 100_000
MAX_ARGV_BYTES = 30_000 * 32


def child_env(
    base: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
    *,
    max_depth: int = MAX_DEPTH,
) -> dict[str, str]:
    """*base* without `NESTING_MARKERS`, with `AGENTPORT_DEPTH` incremented, then *overrides*.

    Raises `ProviderError(config)` when *base* is already `max_depth` levels deep (an agent that
    calls agentport that calls the agent ...).
    """
    try:
        depth = int(base.get(DEPTH_ENV, "0") or "0")
    except ValueError:
        depth = 0
    if depth >= max_depth:
        raise ProviderError(
            ErrorKind.config,
            f"refusing to start an agent CLI {depth + 1} levels deep ({DEPTH_ENV}={depth}, "
            f"limit {max_depth}): an agent is calling itself through agentport",
            retryable=False,
        )
    env = {k: v for k, v in base.items() if k not in NESTING_MARKERS}
    env[DEPTH_ENV] = str(depth + 1)
    env.update(overrides or {})
    return env


def check_argv(argv: Sequence[str]) -> ProviderError | None:
    """`invalid_request` when one argument or the whole argv is too long to spawn safely."""
    sizes = [len(a.encode("utf-8", errors="surrogateescape")) + 1 for a in argv]
    biggest = max(sizes, default=0)
    if biggest > MAX_ARG_BYTES or sum(sizes) > MAX_ARGV_BYTES:
        return ProviderError(
            ErrorKind.invalid_request,
            f"command line too long ({sum(sizes)} bytes, largest argument {biggest}); "
            "send large prompts and schemas through stdin or a file",
            retryable=False,
        )
    return None
