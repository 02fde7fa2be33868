"""Zcode (`zcode --json --prompt`), as one `BackendSpec`.

Not run here: zcode ships as a desktop app whose CLI is a Node script inside it; no registry
carries it (npm `zcode` 0.0.1 is an unrelated placeholder), so `verified_against = None`.
Built from the adapter Q00/ouroboros 0.59.9 drives (its `ZcodeCliLLMAdapter` /
`ZcodeCLIRuntime`) and tested against a fake CLI that replays those
shapes (tests/testing/test_zcode_fake_cli.py).

Facts used: headless is `<prefix> --json --prompt PROMPT --mode edit|yolo [--cwd DIR]
[--resume ID]`, where the prefix is the `zcode` executable, `node <script>`, or the app
bundle's Electron binary with `ELECTRON_RUN_AS_NODE=1`; there is no model flag (the model is
zcode's own setting); `--mode edit` approves file edits, `--mode yolo` every tool. Output is
**one buffered JSON object** once the run is done: `response` (the answer), `usage`,
`sessionId`, `eventCount`; anything else on stdout is an error. The document runs under
`_lines.py --document`, which hands it over as one line whatever its layout. Failures are not
documented beyond the exit status: a non-zero exit is classified by stderr's last line, an
`error` field by its text.

Tools: no flag limits zcode's tools, and neither mode is a sandbox that was seen to hold, so
only the CLI's own tool set is accepted: `ToolPolicy.cli_defaults()` runs `--mode edit` (the
mode ouroboros coerces a default to, since a prompting mode would wedge a headless child),
`ToolPolicy(sandbox=full)` runs `--mode yolo`; every other policy, the default no-tools one
included, is refused (`unsupported`) before the CLI starts.

Options (`[llm.zcode]`): `script` (a `.cjs` file the executable runs: then the executable is
`node` or the app's Electron binary, and `ELECTRON_RUN_AS_NODE=1` is set), `extra_args`, plus
the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
)
from . import _lines
from ._classify import kind_from_text
from ._policy import refuse
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, as_dict, as_int

__all__ = ["SPEC", "build", "classify", "decode", "final_text", "mode_for"]

# zcode's usage fields are not documented: the spellings in common use are read
_INPUT = ("inputTokens", "input_tokens", "promptTokens", "prompt_tokens", "input")
_OUTPUT = ("outputTokens", "output_tokens", "completionTokens", "completion_tokens", "output")
_CACHED = ("cacheReadTokens", "cache_read_input_tokens", "cachedTokens", "cached_tokens")


def mode_for(tools: ToolPolicy) -> str:
    """`edit` for the CLI's defaults, `yolo` for `sandbox=full` with every tool. Raises
    `ProviderError(unsupported)` for any other policy (the default no-tools one included)."""
    if tools.allowed_tools is None and tools.sandbox is None:
        return "edit"
    if tools.allowed_tools is None and tools.sandbox is Sandbox.full:
        return "yolo"
    raise refuse(
        "zcode",
        tools,
        "zcode has no tool flag and no sandbox; only ToolPolicy.cli_defaults() (--mode edit) "
        "or sandbox=full (--mode yolo) can be honoured",
    )


def build(call: CliCall) -> Invocation:
    """argv: `python -I -S _lines.py --document [zcode | EXE SCRIPT] --json --mode M
    --cwd CWD [--resume ID] [extra_args] --prompt PROMPT`. The prompt is an argument (other
    local users can see it in the process list); one that starts with `-` gets a leading
    space, so that no parser takes it for a flag. Raises `ProviderError(invalid_request)` for a
    session id that starts with `-`."""
    opts, config = call.options, call.config
    mode = mode_for(config.tools)
    argv = [call.executable]
    env: dict[str, str] = {}
    if opts.get("script"):
        argv.append(str(opts["script"]))
        env["ELECTRON_RUN_AS_NODE"] = "1"  # the app's Electron binary then runs as node
    argv += ["--json", "--mode", mode, "--cwd", str(call.cwd)]
    if call.session_id:
        if call.session_id.startswith("-"):  # a separate value a parser could take for a flag
            raise ProviderError(
                ErrorKind.invalid_request,
                f"zcode: session id {call.session_id!r} looks like a flag",
                retryable=False,
            )
        argv += ["--resume", call.session_id]
    argv += [str(a) for a in opts.get("extra_args", ())]
    prompt = f" {call.prompt}" if call.prompt.startswith("-") else call.prompt
    argv += ["--prompt", prompt]
    wrapped = _lines.command(sys.executable, argv, document=True)
    return Invocation(tuple(wrapped), env, None)


def _first(record: dict[str, Any], names: Sequence[str]) -> int:
    return next((as_int(record[n]) for n in names if n in record), 0)


def _usage(value: Any) -> Usage:
    u = as_dict(value)
    return Usage(
        input_tokens=_first(u, _INPUT),
        output_tokens=_first(u, _OUTPUT),
        cached_tokens=_first(u, _CACHED),
    )


def decode(obj: Any) -> AgentEvent | None:
    """The document -> one event: an `error` field is a fatal error, else the answer with its
    usage and session id (`final_text`); a stray stdout line (`{"line": …}`) is skipped
    (kept as noise: a run without a document is `bad_output`)."""
    if "document" not in obj:
        return None
    doc = obj["document"]
    if not isinstance(doc, dict):
        text = f"zcode printed a JSON {type(doc).__name__}, not an object"
        bad = EndSignal(kind=ErrorKind.bad_output)
        return AgentEvent(type=EventType.error, content=text, raw=obj, is_error=True, end=bad)
    error = doc.get("error")
    if error:
        detail = error.get("message") if isinstance(error, dict) else error
        return AgentEvent(
            type=EventType.error, content=str(detail or error), raw=doc, is_error=True
        )
    meta = {"usage": _usage(doc.get("usage")), "session_id": doc.get("sessionId")}
    end = EndSignal(final_text=str(doc.get("response") or ""))
    return AgentEvent(type=EventType.usage, raw=doc, metadata=meta, end=end)


def final_text(events: Sequence[AgentEvent]) -> str:
    """The document's `response`."""
    return next((e.end.final_text for e in events if e.end.final_text is not None), "")


def classify(outcome: RunOutcome) -> ProviderError | None:
    """An `error` field or a document that is no object -> its text's kind
    (`process_failed` when the wording says nothing); a non-zero exit -> stderr's last line;
    exit 0 without a document -> `bad_output`."""
    code, tail = outcome.exit_code, outcome.stderr_tail[-4000:]
    error = next((e for e in outcome.events if e.is_error), None)
    if error is not None:
        kind = error.end.kind or kind_from_text(error.content)
        kind = kind or ErrorKind.process_failed
        return ProviderError(kind, f"zcode: {error.content}", exit_code=code, stderr_tail=tail)
    if code not in (0, None):
        lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
        message = lines[-1] if lines else f"zcode failed (exit {code})"
        kind = kind_from_text(tail) or ErrorKind.process_failed
        return ProviderError(kind, message, exit_code=code, stderr_tail=tail)
    if not any(e.end.final_text is not None for e in outcome.events):
        return ProviderError(
            ErrorKind.bad_output,
            "zcode printed no JSON document (is this zcode's --json mode?)",
            exit_code=code,
            stderr_tail=tail,
        )
    return None


SPEC = BackendSpec(
    name="zcode",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
)
