"""Google Antigravity CLI (`agy -p … --output-format stream-json`), as one `BackendSpec`.

Not run here: built from the Antigravity CLI docs, release notes and integrators' reports
(1.1.8 release notes for the output formats; hermes-agent
PR#101086 for argv order; antigravity-cli #76, #702, #794 for the failure shapes) and tested
against a fake CLI (`verified_against = None`).

Facts used: print mode takes the prompt as the **value** of `-p` (stdin is not read, a
positional is ignored), and Go-style flags swallow the next token, so `-p PROMPT` goes last;
`--output-format stream-json` (>= 1.1.8) prints NDJSON lines `{"event": T, T: {…}}` with
T = `init`, `step_update` (`step_type`, `text_delta`, `thinking_delta`, `tool_info`, `usage`)
and one terminal `result` (`conversation_id`, `status` SUCCESS|ERROR, `response`, `usage`,
`error`, `structured_output`); `--json-schema FILE` applies to the final result; `--add-dir
DIR` scopes file writes (without it they land in a scratch folder); `--print-timeout` (Go
duration, default 5m) ends long runs, so it is set from `total_timeout_s`; `--conversation ID`
continues a conversation; in print mode, tools that need approval are denied unless
`--dangerously-skip-permissions`. Old builds exit 2 with `flags provided but not defined`.
Not signed in / out of quota can end with exit 0 and no output. There is no custom endpoint.

Options (`[llm.agy]`): `home` (a `HOME` for the run: settings and credentials are read from
`~/.gemini/antigravity-cli/`), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`linger_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
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
from ..structured import schema_dict
from ._classify import kind_from_text
from ._policy import refuse
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, text_after_last_tool

__all__ = ["SPEC", "build", "classify", "decode"]

_SANDBOX: dict[Sandbox, tuple[str, ...]] = {
    Sandbox.read_only: (),  # approval-needing tools are denied in print mode
    Sandbox.workspace_write: ("--sandbox", "--dangerously-skip-permissions"),
    Sandbox.full: ("--dangerously-skip-permissions",),
}
_HEADLESS_ENV = {"AGY_CLI_DISABLE_AUTO_UPDATE": "1"}


def tool_flags(tools: ToolPolicy) -> list[str]:
    """The tool policy as agy flags. agy has no tool list flag: no tools (`()`) is print
    mode's own rule (every tool that needs approval is denied: shell, writes, URL reads;
    reads inside the working directory remain, and the working directory of `complete()` is
    a fresh empty folder), so no permission flag is added whatever the sandbox says. Raises
    `ProviderError(unsupported)` for a non-empty tool list."""
    if tools.allowed_tools:
        raise refuse("agy", tools, "agy has no tool allow-list flag")
    if tools.no_tools or tools.sandbox is None:
        return []
    return list(_SANDBOX[tools.sandbox])


def build(call: CliCall) -> Invocation:
    """argv: `agy --output-format stream-json --add-dir CWD --print-timeout Ns [--model M]
    [--json-schema FILE] [tool flags] [--conversation ID] -p PROMPT` (prompt last). agy's
    Go-style flags take the next token as the value whatever it looks like, so no caller text
    can become a flag. The prompt stays in argv: print mode reads
    it only from `-p` (the stdin form, `--input-format stream-json`, needs >= 1.1.18 and a
    message shape not verified here), so other local users can see it in the process list."""
    opts, config = call.options, call.config
    argv = [call.executable, "--output-format", "stream-json", "--add-dir", str(call.cwd)]
    argv += ["--print-timeout", f"{max(1, int(config.total_timeout_s))}s"]
    if config.model:
        argv += ["--model", config.model]
    if call.schema is not None:
        path = call.run_dir / "output-schema.json"
        path.write_text(json.dumps(call.schema), encoding="utf-8")
        argv += ["--json-schema", str(path)]
    argv += tool_flags(config.tools)
    if call.session_id:
        argv += ["--conversation", call.session_id]
    argv += [str(a) for a in opts.get("extra_args", ())]
    argv += ["-p", call.prompt]
    env = {"HOME": str(opts["home"])} if opts.get("home") else {}
    return Invocation(tuple(argv), env, None, ("GEMINI_API_KEY", "ANTIGRAVITY_API_KEY"))


def _usage(raw: Any) -> Usage:
    u = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=int(u.get("input_tokens") or 0),
        output_tokens=int(u.get("output_tokens") or 0),
        cached_tokens=int(u.get("cache_read_tokens") or 0),
    )


def _error_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("message") or json.dumps(value))
    return str(value or "")


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event. The payload sits under the key named by `event`
    (a flat line is read as its own payload)."""
    kind = obj.get("event") or obj.get("type")
    body = obj.get(kind) if isinstance(obj.get(kind), dict) else obj
    if kind == "init":
        init = {"session_id": body.get("conversation_id"), "model": body.get("model")}
        return AgentEvent(type=EventType.init, raw=obj, metadata=init)
    if kind == "step_update":
        info = body.get("tool_info")
        if isinstance(info, dict):
            name = str(info.get("name") or info.get("tool_name") or body.get("step_type"))
            done = str(body.get("state", "")).lower() in ("done", "completed", "complete")
            if done:
                output = str(info.get("output") or info.get("result") or "")
                failed = bool(info.get("error")) or str(info.get("status", "")).lower() == "error"
                return AgentEvent(
                    type=EventType.tool_result, content=output, raw=obj, is_error=failed,
                    metadata={"tool": name},
                )  # fmt: skip
            return AgentEvent(
                type=EventType.tool_call, content=name, raw=obj,
                metadata={"tool": name, "input": info.get("input") or info.get("args")},
            )  # fmt: skip
        if body.get("thinking_delta"):
            return AgentEvent(
                type=EventType.reasoning, content=str(body["thinking_delta"]), raw=obj
            )
        if body.get("text_delta"):
            return AgentEvent(type=EventType.text, content=str(body["text_delta"]), raw=obj)
        return None
    if kind == "result":
        ok = str(body.get("status", "")).upper() == "SUCCESS"
        meta = {"usage": _usage(body.get("usage")), "session_id": body.get("conversation_id")}
        answer = body.get("response")
        end = EndSignal(
            terminal=True,
            final_text=answer if ok and isinstance(answer, str) and answer else None,
            structured=body.get("structured_output") if ok else None,
            # the documented result has no stop reason: SUCCESS is "stop"
            finish_reason="stop" if ok else None,
        )
        message = "" if ok else _error_text(body.get("error")) or "agy reported status ERROR"
        return AgentEvent(
            type=EventType.usage, content=message, raw=obj, is_error=not ok, metadata=meta, end=end
        )
    return None


def classify(outcome: RunOutcome) -> ProviderError | None:
    """`result.status` first; without a result: exit 2 + unknown flag -> config (a build
    older than 1.1.8), another non-zero exit -> the stderr text, exit 0 -> bad_output (the
    silent exit of a signed-out or out-of-quota CLI)."""
    tail = outcome.stderr_tail[-4000:]
    code = outcome.exit_code
    result = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    if result is not None and not result.is_error:
        return None
    if result is not None:
        kind = kind_from_text(result.content) or ErrorKind.process_failed
        return ProviderError(kind, result.content, exit_code=code, stderr_tail=tail)
    lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
    message = lines[-1] if lines else ""
    if "flags provided but not defined" in tail or "flag provided but not defined" in tail:
        return ProviderError(
            ErrorKind.config,
            f"this agy build lacks a flag agentport needs (stream-json needs >= 1.1.8): {message}",
            exit_code=code, stderr_tail=tail, retryable=False,
        )  # fmt: skip
    if code in (0, None):
        return ProviderError(
            ErrorKind.bad_output,
            message or "agy ended without a result (signed out or out of quota?)",
            exit_code=code, stderr_tail=tail,
        )  # fmt: skip
    kind = kind_from_text(tail) or ErrorKind.process_failed
    return ProviderError(
        kind, message or f"agy failed (exit {code})", exit_code=code, stderr_tail=tail
    )


SPEC = BackendSpec(
    name="agy",
    terminal_event="result",
    build=build,
    decode=decode,
    classify=classify,
    final_text=text_after_last_tool,
    native_schema=schema_dict,
    extra_env=_HEADLESS_ENV,
)
