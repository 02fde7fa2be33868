"""Claude Code (`claude -p --output-format stream-json --verbose`), as one `BackendSpec`.

Measured on Claude Code 2.1.197: the prompt goes through stdin (variadic
flags such as `--allowedTools` swallow a trailing prompt, so list flags use `--flag=value`);
the endpoint is `ANTHROPIC_BASE_URL` + `ANTHROPIC_API_KEY`; `CLAUDE_CODE_MAX_RETRIES` caps
retries; errors end in a `result` with `is_error: true` even when `subtype` is "success";
`--json-schema` is NATIVE but may end without `structured_output` (then the answer text is
validated instead); usage and `total_cost_usd` come in `result`; bypassing permissions is
refused as root; on a pipe it loses the end of a large output (an 8 MiB answer cut
short, exit 0), so it writes to a file the runner follows.

Web tools: `config.web_search` adds WebSearch and WebFetch to the tool list and
nothing else (`tool_flags`); WebSearch is Anthropic's server-side search run by a second
request, WebFetch fetches the page itself (http upgraded to https) and summarises it with a
second request; the decoder marks both with `web` metadata (`_web_meta`).

Options (`[llm.claude]`): `base_url`, `api_key`, `max_retries` (claude's own retries, default
0: agentport's retry policy retries), `bare` (true adds `--bare`:
no hooks/CLAUDE.md, API-key auth only), `system_prompt_mode` (`append` (default) or `replace`),
`extra_args`, plus the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    ImagePart,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
)
from ..structured import schema_dict
from ._approval_server import PROMPT_TOOL
from ._caller_tools import mcp_json, write_private
from ._classify import kind_from_status, kind_from_text
from ._policy import endpoint_passthrough, refuse
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    WarmTurns,
    as_dict,
    as_int,
    json_line,
    last_text,
)
from ._stream_json import decode_message
from ._turn_control import CURRENT_TURN, TurnControl
from ._web_events import web_meta

__all__ = ["SPEC", "build", "classify", "decode"]

_PERMISSION = {
    Sandbox.read_only: "plan",
    Sandbox.workspace_write: "acceptEdits",
    Sandbox.full: "bypassPermissions",
}
_HEADLESS_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # tool search on (the default of 2.1.332) offers a `DeferredToolPlaceholder` tool even
    # when every tool is turned off: measured against FakeModelServer, gone with this off
    "ENABLE_TOOL_SEARCH": "false",
}


# what claude reads from the parent environment when it talks to its own provider
_PASSTHROUGH = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
)  # fmt: skip
_SHELL_TOOLS = frozenset({"Bash", "BashOutput", "KillShell"})
_WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
WEB_TOOLS = ("WebSearch", "WebFetch")


def tool_flags(tools: ToolPolicy, *, web: bool = False, asks: bool = False) -> list[str]:
    """The tool policy as claude flags. No tools: `--tools=` (no built-in tool; the
    `--json-schema` StructuredOutput tool stays) and `--strict-mcp-config` (no MCP server from
    any settings file). A list: `--tools=L --allowedTools=L`. The sandbox (a permission mode;
    claude has no OS sandbox): read_only -> `plan`, workspace_write -> `acceptEdits`, full ->
    `bypassPermissions`. With no tools, or a sandbox narrower than full, only the user's own
    settings are read (`--setting-sources=user`: no project hook runs). *web*
    (`config.web_search`) adds WebSearch and WebFetch to a list (the list stays otherwise
    the caller's: no tools + web = only the two web tools, no MCP server, no other setting
    source); with the CLI's default tools (`None`) they are already offered. Raises
    `ProviderError(unsupported)` for a shell tool under read_only or workspace_write and a
    write tool under read_only. *asks* (the call's approval hook answers claude's permission
    prompts): no `--allowedTools` (it would approve the listed tools without asking) and no
    `bypassPermissions` (it never asks); the hook is asked within the same ceiling."""
    allowed, sandbox = tools.allowed_tools, tools.sandbox
    flags: list[str] = []
    if allowed is not None:
        offered = (*allowed, *(t for t in WEB_TOOLS if t not in allowed)) if web else allowed
        listed = ",".join(offered)
        flags.append(f"--tools={listed}")
        flags += [f"--allowedTools={listed}"] if offered and not asks else []
        flags += [] if allowed else ["--strict-mcp-config"]
        named = set(allowed)
        if sandbox in (Sandbox.read_only, Sandbox.workspace_write) and named & _SHELL_TOOLS:
            raise refuse("claude", tools, "a shell tool can write anywhere (no OS sandbox)")
        if sandbox is Sandbox.read_only and named & _WRITE_TOOLS:
            raise refuse("claude", tools, "a write tool is listed under read_only")
    if sandbox is not None and allowed != () and not (asks and sandbox is Sandbox.full):
        flags.append(f"--permission-mode={_PERMISSION[sandbox]}")
    if allowed == () or sandbox in (Sandbox.read_only, Sandbox.workspace_write):
        flags.append("--setting-sources=user")
    return flags


def mcp_flags(call: CliCall) -> list[str]:
    """The call's own MCP servers (`CompletionConfig.mcp_servers`, its served `functions`
    among them): `--mcp-config=FILE` (an `mcpServers` file in the run's private folder, so
    no two calls share one) with `--strict-mcp-config` (no server of the user's or a
    project's configuration is loaded), and `--allowedTools=mcp__<server>` for each: the
    caller named them, so their tools run without a permission prompt (headless, an
    unapproved tool call is refused). None: no flags."""
    servers = call.config.mcp_servers
    if not servers:
        return []
    doc = {"mcpServers": {s.name: mcp_json(s) for s in servers}}
    path = write_private(call.run_dir / "mcp-servers.json", doc)
    allowed = ",".join(f"mcp__{s.name}" for s in servers)
    return [f"--mcp-config={path}", "--strict-mcp-config", f"--allowedTools={allowed}"]


def build(call: CliCall) -> Invocation:
    """argv: `claude -p --output-format stream-json --verbose [--model=M] [--effort=E]
    [--append-system-prompt=S] [--json-schema=J] [--max-turns=N] [tool flags] [MCP flags]
    [--resume=ID]` (`tool_flags`, `mcp_flags`; `=` forms so no caller text can become a
    flag, and the variadic tool flags cannot swallow anything); the prompt goes through
    stdin."""
    opts, config = call.options, call.config
    argv = [call.executable, "-p", "--output-format", "stream-json", "--verbose"]
    if opts.get("bare"):
        argv.append("--bare")
    if config.model:
        argv.append(f"--model={config.model}")
    if config.reasoning_effort:
        argv.append(f"--effort={config.reasoning_effort}")
    if call.system_prompt:
        flag = "--system-prompt" if opts.get("system_prompt_mode") == "replace" else None
        argv.append(f"{flag or '--append-system-prompt'}={call.system_prompt}")
    if call.schema is not None:
        argv.append(f"--json-schema={json.dumps(call.schema, separators=(',', ':'))}")
    if config.max_turns is not None:
        argv.append(f"--max-turns={config.max_turns}")
    argv += tool_flags(config.tools, web=config.web_search, asks=call.approvals is not None)
    argv += mcp_flags(call)
    if call.approvals is not None:  # the permission prompt goes to the caller's hook
        argv.append(f"--mcp-config={call.approvals.mcp_config()}")
        argv.append(f"--permission-prompt-tool={PROMPT_TOOL}")
    if call.session_id:
        argv.append(f"--resume={call.session_id}")
        if config.fork_session:  # a new session id with the resumed history
            argv.append("--fork-session")
    argv += [str(a) for a in opts.get("extra_args", ())]
    env: dict[str, str] = {}
    if opts.get("base_url"):
        env["ANTHROPIC_BASE_URL"] = str(opts["base_url"]).rstrip("/")
    if "api_key" in opts:
        env["ANTHROPIC_API_KEY"] = str(opts["api_key"])
    # agentport owns retries: claude's own are off unless `max_retries` says
    env["CLAUDE_CODE_MAX_RETRIES"] = str(opts.get("max_retries", 0))
    if config.mcp_servers:  # how long claude waits for a server to start, in ms
        env["MCP_TIMEOUT"] = str(int(max(s.timeout_s for s in config.mcp_servers) * 1000))
    stdin = call.prompt.encode("utf-8")
    control = CURRENT_TURN.get()
    if call.images or control is not None:  # content blocks / input mid-turn: stream-json
        argv.insert(2, "--input-format=stream-json")
        stdin = _user_message(call.prompt, call.images)
    passthrough = endpoint_passthrough(opts, _PASSTHROUGH)
    if control is not None:  # a runtime's turn: steer() writes to it
        argv.insert(3, "--replay-user-messages")
        steering = _Steering(control)
        return Invocation(tuple(argv), env, stdin, passthrough, replies=steering.replies)
    return Invocation(tuple(argv), env, stdin, passthrough)


class _Steering:
    """Steering a runtime's claude turn: a steer is one more stream-json user message on
    the turn's open stdin. Measured on claude 2.1.332 against FakeModelServer: a message
    written while a tool runs is taken at the tool boundary (the turn's next model request
    carries it after the tool result; one `result` for the turn), and with
    `--replay-user-messages` claude echoes it as a `user` line when it takes it; a message
    written when no tool boundary follows is answered after the turn's `result` as a turn
    of its own (which the runner does not wait for). So a steer is written only while a
    tool of the turn runs (otherwise the runtime queues it), and one not echoed by the
    turn's `result` goes back to the runtime (`TurnControl.refused`): it leads the next
    turn."""

    def __init__(self, control: TurnControl) -> None:
        self._control = control
        self._pending: list[str] = []
        self._tools: set[str] = set()  # tool calls started and not yet answered
        control.steer = self.steer

    def steer(self, text: str) -> bytes | None:
        if not self._tools:
            return None
        self._pending.append(text)
        return _user_message(text, ())

    def replies(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        content = as_dict(obj.get("message")).get("content")
        blocks = [as_dict(b) for b in content] if isinstance(content, list) else []
        if kind == "assistant":
            self._tools |= {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
        elif kind == "user":
            for block in blocks:
                text = block.get("text")
                if block.get("type") == "tool_result":
                    self._tools.discard(str(block.get("tool_use_id")))
                elif block.get("type") == "text" and text in self._pending:
                    self._pending.remove(text)
        elif kind == "result":
            self._tools.clear()
            self._control.refused.extend(self._pending)
            self._pending.clear()


def warm_build(call: CliCall) -> Invocation:
    """`build` for a process that serves call after call (warm processes): stream-json
    input always, the call's prompt (and images) as one user-message line, and never
    `--resume` (each call on a warm process is a fresh conversation; the adapter runs a call
    that resumes a session cold)."""
    cold = build(call)
    argv = [a for a in cold.argv if not a.startswith("--resume=")]
    if "--input-format=stream-json" not in argv:
        argv.insert(2, "--input-format=stream-json")
    stdin = _user_message(call.prompt, call.images)
    return Invocation(tuple(argv), cold.env, stdin, cold.passthrough)


# `/clear` as a user message starts a new conversation (a new session id) on the running
# process and prints `{"type": "conversation_reset", "trigger": "clear", ...}` before its
# `result`: measured on claude 2.1.332 against FakeModelServer, whose next model request
# then carries nothing of the conversation before it (tests/contract/test_claude_warm_contract.py).
WARM = WarmTurns(
    build=warm_build,
    reset=json_line({"type": "user", "message": {"role": "user", "content": "/clear"}}),
    reset_end=lambda obj: obj.get("type") == "result",
    reset_done=lambda obj: obj.get("type") == "conversation_reset",
)


def _user_message(prompt: str, images: tuple[ImagePart, ...]) -> bytes:
    """The prompt and *images* as one stream-json input line: a user message whose content
    is Anthropic Messages blocks (text, then base64 `image` blocks)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
    content += [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": i.media_type, "data": i.base64},
        }
        for i in images
    ]
    return json_line({"type": "user", "message": {"role": "user", "content": content}})


def _usage(result: dict[str, Any]) -> Usage:
    u = as_dict(result.get("usage"))
    cost = result.get("total_cost_usd")
    return Usage(
        input_tokens=as_int(u.get("input_tokens")),
        output_tokens=as_int(u.get("output_tokens")),
        cached_tokens=as_int(u.get("cache_read_input_tokens")),
        cost_usd=float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool)
        else None,
    )


# Messages API `stop_reason` -> finish_reason (end_turn, stop_sequence, pause_turn and
# tool_use (the StructuredOutput tool ends a schema run) are a normal stop).
_STOP_REASONS = {
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event (None for status lines and partial-stream events)."""
    kind = obj.get("type")
    if kind == "system":
        sub = obj.get("subtype")
        if sub == "init":
            init = {"session_id": obj.get("session_id"), "model": obj.get("model")}
            # which credential answers: "none" is the logged-in plan, else the key's source
            source = obj.get("apiKeySource")
            if isinstance(source, str) and source:
                init["billing_route"] = "subscription" if source == "none" else "api_key"
            unstarted = EndSignal(warning=_unstarted(obj.get("mcp_servers")))
            return AgentEvent(type=EventType.init, raw=obj, metadata=init, end=unstarted)
        if sub == "api_retry":
            note = f"API retry {obj.get('attempt')}/{obj.get('max_retries')}: {obj.get('error')}"
            return AgentEvent(
                type=EventType.error, content=note, raw=obj, end=EndSignal(warning=note)
            )
        return None
    if kind in ("assistant", "user"):
        event = decode_message(obj)
        if event is not None and (web := _web_meta(obj, event)):
            event.metadata.update(web)
        return event
    if kind == "result":
        is_error = bool(obj.get("is_error"))
        meta = {"usage": _usage(obj), "session_id": obj.get("session_id")}
        answer = obj.get("result")
        end = EndSignal(
            terminal=True,
            final_text=answer if not is_error and isinstance(answer, str) else None,
            structured=obj.get("structured_output"),
            finish_reason=None
            if is_error
            else _STOP_REASONS.get(str(obj.get("stop_reason")), "stop"),
        )
        errors = obj.get("errors")
        errors = errors if isinstance(errors, list) else [errors] if errors else []
        text = str(obj.get("result") or "; ".join(map(str, errors)))
        return AgentEvent(
            type=EventType.usage, content=text, raw=obj, is_error=is_error, metadata=meta, end=end
        )
    return None


def _web_meta(obj: dict[str, Any], event: AgentEvent) -> dict[str, Any]:
    """`web` metadata of a WebSearch / WebFetch call (its tool_use) or result (the `user`
    line's `tool_use_result`: {query, results: [text | {content: [{title, url}]}]} for
    WebSearch, {url, code, bytes, result} for WebFetch); {} for anything else."""
    if event.type is EventType.tool_call:
        tool, args = event.metadata.get("tool"), as_dict(event.metadata.get("input"))
        if tool == "WebSearch":
            return web_meta("search", query=str(args.get("query", "")))
        if tool == "WebFetch":
            return web_meta("fetch", url=str(args.get("url", "")))
        return {}
    if event.type is not EventType.tool_result:
        return {}
    done = as_dict(obj.get("tool_use_result"))
    if isinstance(done.get("query"), str) and isinstance(done.get("results"), list):
        urls: list[str] = []
        for item in done["results"]:
            hits = item.get("content") if isinstance(item, dict) else None
            for hit in hits if isinstance(hits, list) else ():
                if isinstance(hit, dict) and isinstance(hit.get("url"), str):
                    urls.append(hit["url"])
        meta = web_meta("search", query=done["query"], urls=urls)
        return meta | {"tool": "WebSearch"}
    if isinstance(done.get("url"), str) and "code" in done:
        return web_meta("fetch", url=done["url"]) | {"tool": "WebFetch", "status": done["code"]}
    return {}


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The `result` event decides: `is_error` (whatever `subtype` says) -> status first
    (`api_error_status`), message second; `error_max_turns` -> process_failed. No `result` ->
    the exit code and stderr."""
    tail = outcome.stderr_tail[-4000:]
    result = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    if result is not None:
        if not result.is_error:
            return None
        raw = result.raw if isinstance(result.raw, dict) else {}
        status = raw.get("api_error_status")
        status = status if isinstance(status, int) else None
        message = result.content or str(raw.get("subtype", "error"))
        if raw.get("subtype") == "error_max_turns":
            return ProviderError(
                ErrorKind.process_failed, f"turn limit reached: {message}",
                exit_code=outcome.exit_code, retryable=False,
            )  # fmt: skip
        kind = kind_from_status(status) or kind_from_text(message) or ErrorKind.process_failed
        return ProviderError(
            kind, message, status=status, exit_code=outcome.exit_code, stderr_tail=tail
        )
    if outcome.exit_code not in (0, None):
        line = (tail.strip().splitlines() or [f"exit code {outcome.exit_code}"])[-1]
        kind = ErrorKind.process_failed
        if "root/sudo" in tail:
            kind = ErrorKind.config
        elif "Input must be provided" in tail:
            kind = ErrorKind.invalid_request
        return ProviderError(
            kind, line, exit_code=outcome.exit_code, stderr_tail=tail, retryable=False
        )
    return ProviderError(
        ErrorKind.bad_output, "claude ended without a result event", stderr_tail=tail
    )


SPEC = BackendSpec(
    name="claude",
    terminal_event="result",
    build=build,
    decode=decode,
    classify=classify,
    final_text=last_text,
    native_schema=schema_dict,
    extra_env=_HEADLESS_ENV,
    stdout_to_file=True,  # on a pipe it cuts an 8 MiB answer short and exits 0
    warm=WARM,  # a warm process never exits after its answer: a pipe holds it all
    # `--resume ID` of an unknown ID (2.1.x): this line on stderr, exit 1, no model request
    unknown_session=re.compile(r"No conversation found with session ID", re.I),
)


def _unstarted(servers: Any) -> str | None:
    """The warning for MCP servers claude's init reports as not connected (a server that
    failed to start, or needs authentication): claude runs the call without their tools
    and says nothing else, so the answer must."""
    if not isinstance(servers, list):
        return None
    down = [
        f"{s.get('name')} ({s.get('status')})"
        for s in servers
        if isinstance(s, dict) and s.get("status") not in (None, "connected")
    ]
    if not down:
        return None
    return f"claude did not start MCP server(s) {', '.join(down)}: the call ran without their tools"
