"""Grok CLI (`grok --prompt=...`, npm `@vibe-kit/grok-cli`), as one `BackendSpec`.

Verified against npm @vibe-kit/grok-cli 0.0.34, whose `grok --version` prints 1.0.1 (its
`dist/` read, and the real binary driven against `FakeModelServer` in
tests/contract/test_grok_contract.py).

Facts used: headless mode is `-p/--prompt PROMPT` (commander: `--prompt=VALUE` keeps a
prompt that starts with `-` from becoming a flag); `-d/--directory` is the working folder;
`-m/--model` or `GROK_MODEL`; the endpoint and key come from `GROK_BASE_URL` /
`GROK_API_KEY` (or `~/.grok/user-settings.json`; `-k` / `-u` would *save* them there, so
they are never passed); `GROK_MAX_TOKENS` caps each answer; temperature is fixed at 0.7. The
CLI calls an OpenAI-compatible Chat Completions endpoint with the OpenAI Node SDK (which
retries 429 and 5xx twice on its own; nothing turns that off). When the agent is done it
prints the conversation, one JSON message a line (`{"role": "user" | "assistant" | "tool",
"content", "tool_calls"?, "tool_call_id"?}`), nothing before: no stream, no usage, no
session id. An API error is not an exit code: the last assistant message reads `Sorry, I
encountered an error: Grok API error: <status> <message>` and the CLI exits 0; a crash
prints `{"role": "assistant", "content": "Error: <message>"}` and exits 1.

Tools: headless mode approves every operation (`allOperations`), and no flag or setting
limits its tools (view_file, create_file, str_replace_editor, bash, search, todo lists;
`--max-tool-rounds 0` means the default 400). So the only policy it can honour is the
CLI's whole tool set with no sandbox: `ToolPolicy(allowed_tools=None, sandbox=None or
full)`. Every other policy, the default no-tools one included, is refused (`unsupported`)
before the CLI starts.

Options (`[llm.grok]`): `base_url` (`GROK_BASE_URL`), `api_key` (`GROK_API_KEY`),
`max_tool_rounds`, `extra_args`, plus the generic `executable`, `env`, `grace_s`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core import AgentEvent, ErrorKind, EventType, ProviderError, Sandbox, ToolPolicy
from ._classify import kind_from_status, kind_from_text
from ._policy import endpoint_passthrough, refuse
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome

__all__ = ["SPEC", "build", "classify", "decode", "final_text", "tool_flags"]

_API_ERROR = re.compile(
    r"^Sorry, I encountered an error: (?:Grok API error: (\d{3})\s*)?(.*)", re.S
)
_KEYS = ("GROK_API_KEY", "GROK_BASE_URL", "GROK_MODEL")


def tool_flags(tools: ToolPolicy) -> list[str]:
    """grok has no tool or sandbox flag, and headless mode runs every tool the model asks
    for: only the opt-in to all of them holds. Raises `ProviderError(unsupported)` for any
    other policy (the default no-tools one included)."""
    if tools.allowed_tools is None and tools.sandbox in (None, Sandbox.full):
        return []
    raise refuse(
        "grok",
        tools,
        "grok -p approves every tool it has (bash, file edits) and no flag limits them; "
        "only ToolPolicy(allowed_tools=None, sandbox=full) can be honoured",
    )


def build(call: CliCall) -> Invocation:
    """argv: `grok --directory=CWD [--model=M] [--max-tool-rounds=N] [extra_args]
    --prompt=PROMPT`. The prompt is an argument (headless mode reads no stdin), so other
    local users can see it in the process list."""
    opts, config = call.options, call.config
    tool_flags(config.tools)
    argv = [call.executable, f"--directory={call.cwd}"]
    if config.model:
        argv.append(f"--model={config.model}")
    if opts.get("max_tool_rounds"):
        argv.append(f"--max-tool-rounds={int(opts['max_tool_rounds'])}")
    argv += [str(a) for a in opts.get("extra_args", ())]
    argv.append(f"--prompt={call.prompt}")
    env: dict[str, str] = {}
    if opts.get("base_url"):
        env["GROK_BASE_URL"] = str(opts["base_url"])
    if "api_key" in opts:
        env["GROK_API_KEY"] = str(opts["api_key"])
    if config.max_tokens:
        env["GROK_MAX_TOKENS"] = str(config.max_tokens)
    return Invocation(tuple(argv), env, None, endpoint_passthrough(opts, _KEYS))


def decode(obj: Any) -> AgentEvent | None:
    """One printed message -> an event: an assistant message is its text (and its tool
    calls), a tool message a tool result; the user's own message is skipped."""
    role = obj.get("role")
    content = obj.get("content")
    text = content if isinstance(content, str) else ""
    if role == "tool":
        meta = {"id": obj.get("tool_call_id")}
        return AgentEvent(type=EventType.tool_result, content=text, raw=obj, metadata=meta)
    if role != "assistant":
        return None
    calls = obj.get("tool_calls")
    if isinstance(calls, list) and calls:
        fn = calls[0].get("function") if isinstance(calls[0], dict) else None
        name = str(fn.get("name")) if isinstance(fn, dict) else "tool"
        meta = {
            "tool": name,
            "id": calls[0].get("id"),
            "input": fn.get("arguments") if fn else None,
        }
        return AgentEvent(type=EventType.tool_call, content=name, raw=obj, metadata=meta)
    if _API_ERROR.match(text):
        return AgentEvent(type=EventType.error, content=text, raw=obj, is_error=True)
    return AgentEvent(type=EventType.text, content=text, raw=obj)


def final_text(events: Sequence[AgentEvent]) -> str:
    """The last assistant message: the agent's answer once its tools are done."""
    texts = [e.content for e in events if e.type is EventType.text]
    return texts[-1] if texts else ""


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The error table: an `Sorry, I encountered an error: Grok API error: <status>` message
    -> the status's kind (429 rate_limited, 401/403 auth_required, 5xx server_error), other
    text -> its kind by wording; exit 1 with `Error: <message>` -> that message; no answer at
    all with exit 0 -> bad_output."""
    code = outcome.exit_code
    tail = outcome.stderr_tail[-4000:]
    error = next((e for e in reversed(outcome.events) if e.type is EventType.error), None)
    if error is not None:
        match = _API_ERROR.match(error.content)
        status = int(match.group(1)) if match and match.group(1) else None
        message = (match.group(2) if match else error.content).strip() or error.content
        kind = kind_from_status(status) or kind_from_text(message) or ErrorKind.process_failed
        text = f"grok: API error {status}: {message}" if status else f"grok: {message}"
        return ProviderError(kind, text, exit_code=code, stderr_tail=tail, status=status)
    last = next((e for e in reversed(outcome.events) if e.type is EventType.text), None)
    if code == 0:
        if last is None or not last.content:
            return ProviderError(
                ErrorKind.bad_output, "grok printed no answer", exit_code=code, stderr_tail=tail
            )
        return None
    detail = last.content if last is not None and last.content else tail.strip()
    message = detail.splitlines()[-1] if detail else f"grok failed (exit {code})"
    kind = kind_from_text(detail) or ErrorKind.process_failed
    return ProviderError(kind, message, exit_code=code, stderr_tail=tail)


SPEC = BackendSpec(
    name="grok",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
)
