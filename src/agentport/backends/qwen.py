"""Qwen Code (`qwen --output-format stream-json`), as one `BackendSpec`.

Measured on qwen-code 0.15.10 (a gemini-cli fork): the prompt goes through
stdin (no positional prompt needed); the output is claude-style JSONL (`system`/`assistant`/
`user`/`result`); the endpoint is `OPENAI_BASE_URL` + `OPENAI_API_KEY` with auth type `openai`;
`--json-schema` registers a `structured_output` tool and the value comes back in
`result.structured_result`. Surprises: qwen **exits 0 on every API error** and writes
`[API Error: …]` into the answer, appended to any partial text, so the answer text is the
error channel; after the answer it sends a background "managed memory" request (turned off
here with `memory.enableManagedAutoMemory = false`); against a 429 it retries for minutes
(60 s initial delay) unless `model.generationConfig.maxRetries` is set, and 429/5xx are retried
7 times over about 75 s whatever the settings say (measured here; no setting shortens it);
through a pipe, an answer of 1 MiB or more was cut off at exit (fixed with blocking stdio,
see `_node.py`).

Run settings (retries, sampling, memory, telemetry) go into a per-run JSON file named by
`QWEN_CODE_SYSTEM_DEFAULTS_PATH`, the lowest-priority settings layer, so the user's own
`~/.qwen/settings.json` still wins where it sets the same key.

Options (`[llm.qwen]`): `base_url` (an OpenAI-compatible base, e.g. `http://127.0.0.1:8080/v1`;
selects auth type `openai`), `api_key`, `auth_type` (override `--auth-type`), `max_retries`
(`model.generationConfig.maxRetries`, default 0: the SDK's and the 429 loop's retries; the
7 attempts of the backoff loop remain), `managed_memory` (default false), `bare` (true adds
`--bare`), `system_prompt_mode` (`append` (default) or `replace`), `approval_mode` (overrides
the sandbox mapping), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`max_line_bytes`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
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
from ._caller_tools import system_settings
from ._classify import kind_from_status, kind_from_text
from ._node import blocking_stdio_env
from ._policy import endpoint_passthrough
from ._retry_notice import stderr_notice
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, at_prompt, last_text
from ._stream_json import decode_message

__all__ = [
    "SPEC",
    "api_error",
    "build",
    "classify",
    "decode",
]

_APPROVAL = {
    Sandbox.read_only: "default",
    Sandbox.workspace_write: "auto-edit",
    Sandbox.full: "yolo",
}
# The relaunch (a child node with a larger heap) only adds a process level.
_HEADLESS_ENV = {"QWEN_CODE_NO_RELAUNCH": "true"}
# `[API Error: <message>]`, anywhere in the text (after partial output too): the message runs
# to the last `]` of the text (messages may contain brackets themselves).
_API_ERROR = re.compile(r"\[API Error: (?P<message>.*)\]", re.S)
# qwen-code debug log, before each retry of its backoff loop (0.15.10, and 0.24.4 with
# QWEN_DEBUG_LOG_FILE=1, which adds a `{ ... providerMessage: ... }` block):
# "2026-12-01T15:01:30.634Z [ERROR] [RETRY] Attempt 3 failed with status 500. Retrying ..."
_RETRY_NOTICE = re.compile(
    r"\[RETRY\] Attempt \d+ failed(?: with status (?P<status>\d{3}))?\b.*Retrying"
)
_STATUS = re.compile(r"^\s*(?P<status>[1-5]\d\d)\b")


def _settings(call: CliCall) -> dict[str, Any]:
    opts, config = call.options, call.config
    generation: dict[str, Any] = {"maxRetries": int(opts.get("max_retries", 0))}
    sampling: dict[str, Any] = {}
    if config.temperature is not None:
        sampling["temperature"] = config.temperature
    if config.max_tokens is not None:
        sampling["max_tokens"] = config.max_tokens
    if config.reasoning_effort is not None:  # shipped verbatim as the body's reasoning_effort
        sampling["reasoning_effort"] = config.reasoning_effort
    if sampling:
        generation["samplingParams"] = sampling
    if call.images:  # qwen sends an `@path` image only to a model whose modalities list it
        generation["modalities"] = {"image": True}
    return {
        "model": {"generationConfig": generation},
        "memory": {"enableManagedAutoMemory": bool(opts.get("managed_memory", False))},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }


# what qwen reads from the parent environment when it talks to its own provider
_PASSTHROUGH = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY")
# a tool name no qwen tool has: `--core-tools` with it registers no built-in tool
_NO_TOOL = "agentport-no-tools"
_NO_SERVER = "agentport-no-mcp-server"
# built-in and meta tools (0.15.10), excluded one by one when no tool is allowed: the meta
# tools stay registered whatever --core-tools says
_ALL_TOOLS = (
    "run_shell_command", "write_file", "replace", "edit", "read_file", "read_many_files",
    "glob", "search_file_content", "grep_search", "list_directory", "web_fetch", "web_search",
    "save_memory", "todo_write", "agent", "task", "skill", "tool_search", "send_message",
    "task_stop", "exit_plan_mode", "lsp",
    # qwen 0.24 offers these whatever --core-tools says (worktrees change the checkout;
    # tool_call invokes other tools by name)
    "enter_worktree", "exit_worktree", "get_goal", "update_goal", "list_agents",
    "record_artifact", "report_findings", "tool_call", "ask_user_question",
)  # fmt: skip


SYSTEM_SETTINGS_ENV = "QWEN_CODE_SYSTEM_SETTINGS_PATH"


def tool_flags(tools: ToolPolicy) -> list[str]:
    """The tool list as qwen flags: `--core-tools=L --allowed-tools=L` (no confirmation for
    those) and `--exclude-tools` listing every other built-in and meta tool, no MCP server
    (`--allowed-mcp-server-names=<none>`); no tools: `--core-tools` with a name no tool has
    and every tool excluded."""
    allowed = tools.allowed_tools
    if allowed is None:
        return []
    flags = [f"--allowed-mcp-server-names={_NO_SERVER}"]
    if not allowed:
        return [*flags, f"--core-tools={_NO_TOOL}", f"--exclude-tools={','.join(_ALL_TOOLS)}"]
    listed = ",".join(allowed)
    # every other known tool excluded too: meta tools (agent, skill, tool_search, tool_call,
    # ...) are offered beside any --core-tools list
    rest = [t for t in _ALL_TOOLS if t not in allowed]
    return [*flags, f"--core-tools={listed}", f"--allowed-tools={listed}",
            f"--exclude-tools={','.join(rest)}"]  # fmt: skip


def build(call: CliCall) -> Invocation:
    """argv: `qwen --output-format stream-json [--auth-type=openai] [--model=M]
    [--append-system-prompt=S] [--json-schema=@FILE] [--max-session-turns=N] [tool flags]
    [--approval-mode=A] [--resume=ID]` (`tool_flags`; `=` forms: a system prompt starting
    with `--yolo` stays text); the prompt goes through stdin; run settings through
    `QWEN_CODE_SYSTEM_DEFAULTS_PATH`. The sandbox picks the approval mode (read_only ->
    default: headless runs drop mutating tools); the `approval_mode` option applies only when
    the call leaves the sandbox to the CLI. With `base_url`, `OPENAI_API_KEY` is the
    configured `api_key` or absent: never the parent's."""
    opts, config = call.options, call.config
    argv = [call.executable, "--output-format", "stream-json"]
    env: dict[str, str] = {}
    if opts.get("bare"):
        argv.append("--bare")
    auth = opts.get("auth_type") or ("openai" if opts.get("base_url") else None)
    if auth:
        argv.append(f"--auth-type={auth}")
    if opts.get("base_url"):
        env["OPENAI_BASE_URL"] = str(opts["base_url"]).rstrip("/")
    if "api_key" in opts:
        env["OPENAI_API_KEY"] = str(opts["api_key"])
    if config.model:
        argv.append(f"--model={config.model}")
    if call.system_prompt:
        replace = opts.get("system_prompt_mode") == "replace"
        flag = "--system-prompt" if replace else "--append-system-prompt"
        argv.append(f"{flag}={call.system_prompt}")
    if call.schema is not None:
        # `@file` (qwen reads the flag's value from that file) keeps a large schema off argv
        path = call.run_dir / "qwen-schema.json"
        path.write_text(json.dumps(call.schema), encoding="utf-8")
        argv.append(f"--json-schema=@{path}")
    if config.max_turns is not None:
        argv.append(f"--max-session-turns={config.max_turns}")
    argv += tool_flags(config.tools)
    servers = [s.name for s in config.mcp_servers]
    if servers:  # only the call's own servers (the flag given last wins)
        argv.append(f"--allowed-mcp-server-names={','.join(servers)}")
        path = system_settings(call, SYSTEM_SETTINGS_ENV, "/etc/qwen-code/settings.json")
        env[SYSTEM_SETTINGS_ENV] = str(path)
    sandbox = config.tools.sandbox
    approval = _APPROVAL[sandbox] if sandbox else opts.get("approval_mode")
    if approval:
        argv.append(f"--approval-mode={approval}")
    if call.session_id:
        argv.append(f"--resume={call.session_id}")
    argv += [str(a) for a in opts.get("extra_args", ())]
    prompt, workspace = at_prompt(call)  # `@` escaped; images as `@path`
    argv += workspace
    settings = call.run_dir / "qwen-settings.json"
    settings.write_text(json.dumps(_settings(call)), encoding="utf-8")
    env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] = str(settings)
    env.update(blocking_stdio_env(call.run_dir, opts.get("env")))
    log_dir = None
    if call.session_id is None:  # a resumed session's data lives in the usual runtime folder
        # qwen's retry loop for 429/5xx has no setting and prints nothing, but its debug log
        # (under QWEN_RUNTIME_DIR) says "[RETRY] Attempt 1 failed with status 500": a private
        # runtime folder per run, whose debug log the runner reads for `retry_notice`
        runtime = call.run_dir / "qwen-runtime"
        env["QWEN_RUNTIME_DIR"] = str(runtime)
        env["QWEN_DEBUG_LOG_FILE"] = "1"  # qwen 0.24 writes the debug log only when asked
        log_dir = runtime / "debug"
    return Invocation(
        tuple(argv),
        env,
        prompt.encode("utf-8"),
        endpoint_passthrough(opts, _PASSTHROUGH),
        log_dir=log_dir,
    )


def api_error(text: str) -> str | None:
    """The message of qwen's in-band `[API Error: …]` marker in an answer, or None."""
    match = _API_ERROR.search(text)
    return match.group("message").strip() if match else None


def _usage(raw: Any) -> Usage:
    u = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=int(u.get("input_tokens") or 0),
        output_tokens=int(u.get("output_tokens") or 0),
        cached_tokens=int(u.get("cache_read_input_tokens") or 0),
    )


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event (None for other `system` lines and echoes)."""
    kind = obj.get("type")
    if kind == "system":
        if obj.get("subtype") != "init":
            return None
        init = {"session_id": obj.get("session_id"), "model": obj.get("model")}
        return AgentEvent(type=EventType.init, raw=obj, metadata=init)
    if kind in ("assistant", "user"):
        event = decode_message(obj)
        if event is not None and event.type is EventType.text and api_error(event.content):
            # the in-band error; the `result` follows at once, silence ends the run
            marked = replace(event.end, fatal=True)
            return event.model_copy(update={"is_error": True, "end": marked})
        return event
    if kind == "result":
        # qwen 0.24 puts a failure's message in `error.message` and leaves `result` out
        error = obj.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        text = str(obj.get("result") or said or "")
        # exit 0 + `is_error: false` on API errors: the marker in the text is the real signal
        failed = bool(obj.get("is_error")) or api_error(text) is not None
        meta = {"usage": _usage(obj.get("usage")), "session_id": obj.get("session_id")}
        end = EndSignal(
            terminal=True,
            final_text=None if failed else text,
            # qwen reports no stop reason in stream-json
            finish_reason=None if failed else "stop",
            structured=obj.get("structured_result"),
        )
        return AgentEvent(
            type=EventType.usage, content=text, raw=obj, is_error=failed, metadata=meta, end=end
        )
    return None


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The `[API Error: …]` marker (in `result` or, without one, the last assistant text) ->
    HTTP status from its leading number, else its wording; a non-zero exit without a result ->
    `process_failed` with the stderr tail."""
    tail = outcome.stderr_tail[-4000:]
    result = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    text = result.content if result is not None else last_text(outcome.events)
    message = api_error(text)
    if message is None and result is not None and result.is_error:
        message = text or "qwen reported an error"
    if message is not None:
        found = _STATUS.match(message)
        status = int(found.group("status")) if found else None
        kind = kind_from_status(status) or kind_from_text(message) or ErrorKind.process_failed
        return ProviderError(
            kind, message, status=status, exit_code=outcome.exit_code, stderr_tail=tail
        )
    if result is not None:
        return None
    if (outcome.exit_code or 0) > 0:
        line = (tail.strip().splitlines() or [f"exit code {outcome.exit_code}"])[-1]
        kind = kind_from_text(line) or ErrorKind.process_failed
        return ProviderError(kind, line, exit_code=outcome.exit_code, stderr_tail=tail)
    return None


SPEC = BackendSpec(
    name="qwen",
    terminal_event="result",
    build=build,
    decode=decode,
    classify=classify,
    final_text=last_text,
    native_schema=schema_dict,
    extra_env=_HEADLESS_ENV,
    retry_notice=stderr_notice(_RETRY_NOTICE, block=True),
    # readStdin (0.24.4, gemini-cli's): 8 MiB of UTF-8, then a warning and stdin closed
    stdin_limit_bytes=8 << 20,
    # `--resume=ID` of an unknown ID: this line on stderr, exit 1, no model request
    unknown_session=re.compile(r"No saved session found with ID", re.I),
)
