"""The child environment: an allow-list, recursion markers removed, a depth counter that
refuses runaway nesting, and an argv-length guard. Pure apart from reading the mapping it is
given.

A child sees only what it needs: the names in `BASE_ALLOWED` (path, home, user,
shell, locale, terminal, temp, proxies, CA bundles, and the Windows basics) and the prefixes in
`BASE_PREFIXES` (`LC_*`, `XDG_*`); plus the names the backend declares it needs
(`passthrough`), the user's opt-in (`inherit`, from `[llm.<backend>] inherit_env`) and the
explicit `overrides` (the backend's own settings and the user's `[llm.<backend>] env`), and
the names listed in `AGENTPORT_INHERIT_ENV`.
Everything else (cloud credentials, tokens, other providers' keys) stays behind.

Why: a long argv fails to spawn and is misreported as a missing CLI
(anthropics/claude-agent-sdk-python#238); an inherited `CLAUDECODE=1` makes a nested claude
refuse to start (anthropics/claude-agent-sdk-python#573); a child that inherits its parent's
runtime settings can start the parent again, endlessly (Q00/ouroboros#185, fixed there with
a depth counter). Children get an allow-listed environment (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import translate
from functools import lru_cache

from ..core import ErrorKind, ProviderError

__all__ = [
    "BASE_ALLOWED",
    "BASE_PREFIXES",
    "DEPTH_ENV",
    "INHERIT_ENV",
    "MAX_ARGV_BYTES",
    "MAX_ARG_BYTES",
    "MAX_DEPTH",
    "NESTING_MARKERS",
    "check_argv",
    "child_env",
    "env_allowed",
]

DEPTH_ENV = "AGENTPORT_DEPTH"
# The user's global opt-in: names or patterns (comma or space separated) every child may see.
INHERIT_ENV = "AGENTPORT_INHERIT_ENV"
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
# What every child may see: nothing here is a credential.
BASE_ALLOWED: frozenset[str] = frozenset(
    {
        # process basics
        "PATH", "HOME", "USER", "LOGNAME", "USERNAME", "SHELL", "PWD", "TZ", "HOSTNAME",
        # locale and terminal
        "LANG", "LANGUAGE", "TERM", "COLORTERM", "NO_COLOR", "COLUMNS", "LINES",
        # temporary folders
        "TMPDIR", "TMP", "TEMP",
        # proxies (both spellings: curl reads lower case, most tools upper case)
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
        "http_proxy", "https_proxy", "no_proxy", "all_proxy",
        # CA bundles
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS", "NODE_USE_SYSTEM_CA",
        # Windows: a process cannot start without some of these
        "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE",
        "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)",
        "COMMONPROGRAMFILES", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
    }
)  # fmt: skip
BASE_PREFIXES: tuple[str, ...] = ("LC_", "XDG_")
# Linux caps one argument at 128 KiB (MAX_ARG_STRLEN) and argv+env at ARG_MAX (often 2 MiB);
# Windows at 32 767 characters in all. Stay well below both.
MAX_ARG_BYTES = 100_000
MAX_ARGV_BYTES = 30_000 * 32


def env_allowed(name: str, extra: Iterable[str] = ()) -> bool:
    """True when *name* passes the allow-list: `BASE_ALLOWED`, a `BASE_PREFIXES` prefix, or
    one of *extra* (exact names or `fnmatch` patterns such as `AWS_*`, case-sensitive)."""
    return _allowed(tuple(extra))(name)


@lru_cache(maxsize=64)
def _allowed(extra: tuple[str, ...]) -> Callable[[str], bool]:
    """`env_allowed` for one *extra*: its names as a set, its patterns as one compiled regex
    (`fnmatch.translate`), so a call's environment is filtered in one pass."""
    exact = frozenset(extra)
    globs = [p for p in extra if any(c in p for c in "*?[")]
    match = re.compile("|".join(map(translate, globs))).match if globs else None

    def allowed(name: str) -> bool:
        if name in BASE_ALLOWED or name.startswith(BASE_PREFIXES) or name in exact:
            return True
        return match is not None and match(name) is not None

    return allowed


def child_env(
    base: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
    *,
    passthrough: Iterable[str] = (),
    inherit: Iterable[str] = (),
    max_depth: int = MAX_DEPTH,
) -> dict[str, str]:
    """The allow-listed part of *base*, without `NESTING_MARKERS`, with `AGENTPORT_DEPTH`
    incremented, then *overrides* (set as given, whatever the allow-list says).

    *passthrough*: names (or `fnmatch` patterns) the backend needs from *base* (its own key
    variable, its home folder variable); *inherit*: the user's opt-in list
    (`[llm.<backend>] inherit_env`), same form; `AGENTPORT_INHERIT_ENV` in *base* adds more
    for every backend (comma or space separated).
    Raises `ProviderError(config)` when *base* is already `max_depth` levels deep (an agent
    that calls agentport that calls the agent ...).
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
    extra = (*passthrough, *inherit, *base.get(INHERIT_ENV, "").replace(",", " ").split())
    allowed = _allowed(extra)
    env = {k: v for k, v in base.items() if k not in NESTING_MARKERS and allowed(k)}
    env[DEPTH_ENV] = str(depth + 1)
    env.update(overrides or {})
    return env


def check_argv(argv: Sequence[str]) -> ProviderError | None:
    """`invalid_request` when one argument or the whole argv is too long to spawn safely, or
    an argument holds a NUL character (execve(2) takes C strings: none can carry it)."""
    for index, arg in enumerate(argv):
        if "\x00" in arg:
            return ProviderError(
                ErrorKind.invalid_request,
                f"argument {index} of the command line contains a NUL character, which no "
                "command line can carry (remove it from the prompt or option it came from)",
                retryable=False,
            )
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
