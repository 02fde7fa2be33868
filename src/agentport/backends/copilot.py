"""GitHub Copilot CLI (`copilot --output-format json`), as one `BackendSpec`.

Measured on GitHub Copilot CLI 1.0.102: piped stdin without `-p` runs
one-shot (we feed the prompt there); tools are limited with `--available-tools` and
`--deny-tool`; a
custom endpoint is BYOK through environment variables (`COPILOT_PROVIDER_BASE_URL`,
`COPILOT_PROVIDER_API_KEY`, `COPILOT_PROVIDER_TYPE` = openai|azure|anthropic,
`COPILOT_PROVIDER_WIRE_API` = completions|responses, `COPILOT_MODEL`) and needs no GitHub
login; without it copilot wants a GitHub token. The JSONL envelope is `{type, data, ...}`:
`assistant.message_delta` (text deltas), `assistant.message` (`content`, `toolRequests`),
`tool.execution_start` / `tool.execution_complete`, `session.error` (`errorType`, `message`,
`statusCode`) and a final `result` (`exitCode`, `sessionId`); exit 1 on API failure. Token
counts are not reported.

Options (`[llm.copilot]`): `base_url` (BYOK endpoint, e.g. `http://127.0.0.1:8080/v1`),
`api_key`, `provider_type` (`openai` default, `azure`, `anthropic`), `wire_api`
(`completions` or `responses`), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`max_line_bytes`. Without `base_url`, copilot's own GitHub login (or `COPILOT_GITHUB_TOKEN` /
`GH_TOKEN` / `GITHUB_TOKEN`) is used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    ProviderError,
    Sandbox,
    ToolPolicy,
)
from ._caller_tools import write_private
from ._classify import kind_from_status, kind_from_text
from ._node import blocking_stdio_env
from ._policy import endpoint_passthrough, refuse
from ._retry_notice import notice_event
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_status,
    image_files,
    text_after_last_tool,
)

__all__ = ["SPEC", "build", "classify", "decode"]

_ERROR_KIND = {"authentication": ErrorKind.auth_required}


# A tool name no copilot tool has: `--available-tools` with it offers the model no tool at all.
_NO_TOOL = "agentport-no-tools"
_GITHUB_TOKENS = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")
_SHELL_TOOLS = frozenset({"bash", "shell", "powershell", "write_bash", "write_powershell"})


def tool_flags(tools: ToolPolicy) -> list[str]:
    """The tool policy as copilot flags: `--available-tools=L` (what the model is offered;
    none: a name no tool has), `--deny-tool=K` (shell, write, url: deny beats every allow)
    and, only for `sandbox=full`, `--allow-all-tools`. Without an allow, copilot's own
    approval rules apply headless: read-only actions inside the working directory run, the
    rest is denied. Raises `ProviderError(unsupported)` for a shell tool under a sandbox
    narrower than full (a shell can write anywhere)."""
    allowed, sandbox = tools.allowed_tools, tools.sandbox
    flags: list[str] = []
    if allowed is not None:
        flags.append(f"--available-tools={','.join(allowed) if allowed else _NO_TOOL}")
    if sandbox is Sandbox.full:
        return [*flags, "--allow-all-tools"]
    if allowed is not None and not allowed:
        return [*flags, "--deny-tool=shell", "--deny-tool=write", "--deny-tool=url"]
    if sandbox is None:
        return flags
    if allowed is not None and _SHELL_TOOLS & set(allowed):
        raise refuse("copilot", tools, "a shell tool can write anywhere (no OS sandbox)")
    flags += ["--deny-tool=shell", "--deny-tool=url"]
    flags.append("--deny-tool=write" if sandbox is Sandbox.read_only else "--allow-tool=write")
    return flags


def _user_servers(call: CliCall) -> list[str]:
    """Names of the MCP servers in the user's `~/.copilot/mcp-config.json` (`COPILOT_HOME`
    when set)."""
    user_env = dict(call.options.get("env") or {})
    home = user_env.get("COPILOT_HOME") or os.environ.get("COPILOT_HOME")
    if not home:
        base = user_env.get("HOME") or os.environ.get("HOME") or str(Path.home())
        home = str(Path(base) / ".copilot")
    try:
        table = json.loads((Path(home) / "mcp-config.json").read_text("utf-8")).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(n) for n in table] if isinstance(table, dict) else []


def _with_servers(flags: list[str], call: CliCall) -> list[str]:
    """*flags* plus the call's own MCP servers: `--additional-mcp-config=@FILE` (a file in
    the run's private folder: it holds their secrets), `--disable-builtin-mcps` and
    `--disable-mcp-server=<name>` for each server of the user's config (strict), their names
    added to `--available-tools` and `--allow-tool` (the caller named them)."""
    servers = call.config.mcp_servers
    if not servers:
        return flags
    entries: dict[str, Any] = {}
    for server in servers:
        if server.url is not None:
            entries[server.name] = {"type": "http", "url": server.url,
                                    "headers": server.plain_headers(), "tools": ["*"]}  # fmt: skip
        else:
            entries[server.name] = {"type": "local", "command": server.command,
                                    "args": list(server.args), "env": server.plain_env(),
                                    "tools": ["*"]}  # fmt: skip
    path = write_private(call.run_dir / "mcp-config.json", {"mcpServers": entries})
    names = [s.name for s in servers]
    out = [
        f"{f},{','.join(names)}".replace(f"{_NO_TOOL},", "")
        if f.startswith("--available-tools=")
        else f
        for f in flags
    ]
    out += [f"--additional-mcp-config=@{path}", "--disable-builtin-mcps"]
    out += [f"--disable-mcp-server={n}" for n in _user_servers(call) if n not in names]
    out += [f"--allow-tool={n}" for n in names]
    return out


def build(call: CliCall) -> Invocation:
    """argv: `copilot --output-format json --no-color --disable-client-telemetry
    [--model=M] [--reasoning-effort=E] [tool flags]` (`tool_flags`; no `--allow-all-tools`
    unless sandbox=full); the prompt goes through stdin; BYOK endpoint settings through
    `COPILOT_PROVIDER_*` variables, and then no GitHub token reaches the child."""
    opts, config = call.options, call.config
    argv = [call.executable, "--output-format", "json", "--no-color"]
    argv.append("--disable-client-telemetry")
    if config.model:
        argv.append(f"--model={config.model}")
    if config.reasoning_effort:
        argv.append(f"--reasoning-effort={config.reasoning_effort}")
    argv += _with_servers(tool_flags(config.tools), call)
    argv += [f"--attachment={path}" for path in image_files(call)]
    argv += [str(a) for a in opts.get("extra_args", ())]
    env: dict[str, str] = {}
    if opts.get("base_url"):
        env["COPILOT_PROVIDER_BASE_URL"] = str(opts["base_url"]).rstrip("/")
        env["COPILOT_PROVIDER_TYPE"] = str(opts.get("provider_type", "openai"))
        if opts.get("wire_api"):
            env["COPILOT_PROVIDER_WIRE_API"] = str(opts["wire_api"])
        if config.model:
            env["COPILOT_MODEL"] = config.model
    if "api_key" in opts:
        env["COPILOT_PROVIDER_API_KEY"] = str(opts["api_key"])
    env.update(blocking_stdio_env(call.run_dir, opts.get("env")))
    return Invocation(
        tuple(argv), env, call.prompt.encode("utf-8"), endpoint_passthrough(opts, _GITHUB_TOKENS)
    )


def _call_failure(obj: Any, data: dict[str, Any]) -> AgentEvent:
    """A failed model request: the run ends here as a retry notice (copilot has no setting
    for its own retries). The message is the API's own when the body is its error JSON."""
    text = str(data.get("errorMessage") or data.get("failureKind") or "model call failed")
    try:
        inner = json.loads(text)
    except ValueError:
        inner = None
    if isinstance(inner, dict) and inner.get("message"):
        text = str(inner["message"])
    elif isinstance(inner, str):
        text = inner
    status = data.get("statusCode")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    transport = data.get("failureKind") == "transport" and status is None
    return notice_event(obj, text, status=status, kind=ErrorKind.network if transport else None)


def decode(obj: Any) -> AgentEvent | None:
    """One `--output-format json` line -> an event (None for session/model bookkeeping)."""
    kind = obj.get("type")
    data = as_dict(obj.get("data"))
    if kind == "assistant.message_delta":
        return AgentEvent(type=EventType.text, content=str(data.get("deltaContent", "")), raw=obj)
    if kind == "assistant.message":
        content = str(data.get("content") or "")
        answer = content if content and not data.get("toolRequests") else None
        return AgentEvent(
            type=EventType.usage, content=content, raw=obj, metadata={"model": data.get("model")},
            end=EndSignal(final_text=answer),
        )  # fmt: skip
    if kind == "tool.execution_start":
        call = {"tool": data.get("toolName"), "id": data.get("toolCallId")}
        call["input"] = data.get("arguments")
        return AgentEvent(
            type=EventType.tool_call, content=str(data.get("toolName")), raw=obj, metadata=call
        )
    if kind == "tool.execution_complete":
        result = as_dict(data.get("result"))
        return AgentEvent(
            type=EventType.tool_result, content=str(result.get("content") or ""), raw=obj,
            is_error=not data.get("success", True), metadata={"id": data.get("toolCallId")},
        )  # fmt: skip
    if kind == "model.call_failure":  # copilot retries next (up to 5 times): agentport owns that
        return _call_failure(obj, data)
    if kind == "session.info" and data.get("infoType") == "model_retry":
        note = str(data.get("message") or "model retry")
        return AgentEvent(type=EventType.error, content=note, raw=obj, end=EndSignal(warning=note))
    if kind == "session.error":
        # `result` with exitCode 1 follows at once; silence ends the run
        end = EndSignal(
            fatal=True,
            status=as_status(data.get("statusCode")),
            kind=_ERROR_KIND.get(str(data.get("errorType"))),
        )
        message = str(data.get("message") or "copilot reported an error")
        return AgentEvent(type=EventType.error, content=message, raw=obj, is_error=True, end=end)
    if kind == "result":
        failed = obj.get("exitCode") not in (0, None)
        # the JSONL carries no finish reason: a clean result is "stop"
        end = EndSignal(terminal=True, finish_reason=None if failed else "stop")
        return AgentEvent(
            type=EventType.final, raw=obj, is_error=failed,
            metadata={"session_id": obj.get("sessionId")}, end=end,
        )  # fmt: skip
    return None


def final_text(events: Sequence[AgentEvent]) -> str:
    """Fallback when no `assistant.message` carried the answer: the deltas after the last
    tool."""
    return text_after_last_tool(events)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """`session.error` decides (its `statusCode` first, `errorType: authentication`, then the
    wording); a failed `result` or non-zero exit without one -> `process_failed`. A clean
    final `result` decides over an earlier error (recovered: a warning)."""
    tail = outcome.stderr_tail[-4000:]
    result = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    if result is not None and not result.is_error:
        return None
    failed = next(
        (e for e in reversed(outcome.events) if e.type is EventType.error and e.is_error), None
    )
    if failed is not None:
        status = failed.end.status
        kind = (
            kind_from_status(status)
            or failed.end.kind
            or kind_from_text(failed.content)
            or ErrorKind.process_failed
        )
        return ProviderError(
            kind, failed.content, status=status, exit_code=outcome.exit_code, stderr_tail=tail
        )
    if result is None and outcome.exit_code in (0, None):
        return None  # the generic adapter reports a missing answer as bad_output
    line = (tail.strip().splitlines() or [f"exit code {outcome.exit_code}"])[-1]
    kind = kind_from_text(line) or ErrorKind.process_failed
    if "No authentication information found" in tail:
        kind = ErrorKind.auth_required
    return ProviderError(kind, line, exit_code=outcome.exit_code, stderr_tail=tail)


SPEC = BackendSpec(
    name="copilot",
    terminal_event="result",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
)
