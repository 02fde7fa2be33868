"""Kiro CLI (`kiro-cli chat --no-interactive`), as one `BackendSpec`.

Not run here: built from kiro.dev's documentation (kiro.dev/docs/cli/headless,
kiro.dev/docs/cli/reference/exit-codes, the CLI changelogs) and
tested against a fake CLI (`verified_against = None`).

Facts used: headless is `kiro-cli chat --no-interactive [flags] PROMPT` with `KIRO_API_KEY` in
the environment; tools are pre-approved with `--trust-tools=<list>` (2.x names `read`, `grep`,
`write`, `shell`) or `--trust-all-tools`, and an untrusted tool cannot be approved headless;
`--model`, `--agent`, `--resume-id ID`; a local run that names no harness runs V2 (`--v2` /
`--v3`); 3.x also reads the prompt from piped stdin when no positional is given. Output is
**plain text only** (no JSON mode), so the CLI runs under `_lines.py`, which frames each stdout
line as `{"line": …}`; ANSI escapes and the leading `> ` answer marker are removed. Exit codes
(documented): 0 success, 1 general failure (auth, arguments, operation), 3 an MCP server failed
to start (only with `--require-mcp-startup`). There is no custom endpoint: kiro talks to its
own service only. Headless prints no session id, so resume needs an id you already know.

Options (`[llm.kiro]`): `api_key` (`KIRO_API_KEY`), `harness` (`v2` or `v3`: adds `--v2` /
`--v3`), `agent` (`--agent`), `prompt_via` (`stdin` (default, 3.x) or `argv` (2.x: the
prompt is then visible to other local users in the process list)), `extra_args`, plus the
generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from ..core import (
    AgentEvent,
    ErrorKind,
    EventType,
    ProviderError,
    Sandbox,
    without_sequences,
)
from . import _lines
from ._classify import kind_from_text
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome

__all__ = [
    "SPEC",
    "build",
    "classify",
    "decode",
    "final_text",
]

# 2.x tool names (as kiro-ci-recipes and Q00/ouroboros's Kiro adapter pass them): what each
# sandbox may run unasked.
_TRUST = {
    Sandbox.read_only: "read,grep",
    Sandbox.workspace_write: "read,grep,write",
}
_AUTH = re.compile(r"kiro_api_key|not logged in|log ?in|sign ?in|api key", re.I)


def build(call: CliCall) -> Invocation:
    """argv: `python -I -S _lines.py kiro-cli chat --no-interactive [--v2|--v3] [--model=M]
    [--agent=A] [--trust-tools=L | --trust-all-tools] [--resume-id=ID] [-- PROMPT]`; the
    prompt goes through stdin (3.x reads a piped prompt when no positional is given), or is
    the last argument after `--` with `prompt_via = "argv"` (2.x). Tools: a tool that is not
    trusted cannot be approved headless, so no tools is `--trust-tools=` (trust none)."""
    opts, config = call.options, call.config
    argv = [call.executable, "chat", "--no-interactive"]
    if opts.get("harness"):
        argv.append(f"--{str(opts['harness']).lstrip('-')}")
    if config.model:
        argv.append(f"--model={config.model}")
    if opts.get("agent"):
        argv.append(f"--agent={opts['agent']}")
    allowed, sandbox = config.tools.allowed_tools, config.tools.sandbox
    if allowed is not None:
        argv.append(f"--trust-tools={','.join(allowed)}")
    elif sandbox is Sandbox.full:
        argv.append("--trust-all-tools")
    elif sandbox is not None:
        argv.append(f"--trust-tools={_TRUST[sandbox]}")
    if call.session_id:
        argv.append(f"--resume-id={call.session_id}")
    argv += [str(a) for a in opts.get("extra_args", ())]
    stdin: bytes | None = None
    if opts.get("prompt_via", "stdin") == "argv":
        argv += ["--", call.prompt]  # `--`: a prompt that starts with '-' is not a flag
    else:
        stdin = call.prompt.encode("utf-8")
    env = {"KIRO_API_KEY": str(opts["api_key"])} if "api_key" in opts else {}
    return Invocation(tuple(_lines.command(sys.executable, argv)), env, stdin, ("KIRO_API_KEY",))


def clean(line: str) -> str:
    """A transcript line without ANSI escapes and without the `> ` answer marker."""
    text = without_sequences(line)
    return text[2:] if text.startswith("> ") else text


def decode(obj: Any) -> AgentEvent | None:
    """One `{"line": …}` frame from `_lines.py` -> a text event (blank lines kept, so the
    answer keeps its paragraphs)."""
    if "line" not in obj:
        return None
    return AgentEvent(type=EventType.text, content=clean(str(obj["line"])), raw=obj)


def final_text(events: Sequence[AgentEvent]) -> str:
    """All text lines joined, leading and trailing blank lines dropped."""
    return "\n".join(e.content for e in events if e.type is EventType.text).strip("\n")


def classify(outcome: RunOutcome) -> ProviderError | None:
    """Exit code only (the documented table); the message is stderr's last line."""
    code = outcome.exit_code
    if code == 0:
        return None
    tail = outcome.stderr_tail[-4000:]
    lines = [clean(ln).strip() for ln in tail.strip().splitlines() if ln.strip()]
    message = lines[-1] if lines else f"kiro-cli failed (exit {code})"
    if code == 3:
        kind = ErrorKind.config
        message = f"an MCP server failed to start: {message}"
    elif code == 1 and _AUTH.search(tail):
        kind = ErrorKind.auth_required
    else:
        kind = kind_from_text(tail) or ErrorKind.process_failed
    return ProviderError(kind, message, exit_code=code, stderr_tail=tail)


SPEC = BackendSpec(
    name="kiro",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
)
