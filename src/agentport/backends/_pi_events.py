"""The event stream of pi's agent core, shared by the backends built on it: pi's `--mode
json` and `--mode rpc` (the same events, one JSON object a line) and gjc's `--mode rpc`.

Measured on pi-coding-agent 0.73.1, both modes: `session`,
`agent_*`, `turn_*`, `message_*` (each `message_update` carries an `assistantMessageEvent`
delta), `tool_execution_*` and `auto_retry_*`; an API error is the assistant message's
`stopReason: "error"` + `errorMessage` (`"500 …"`, `"401 …"`, `"Connection error."`), not an
exit code. Pure functions; `pi.py` and `gjc.py` name them in their specs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core import AgentEvent, EndSignal, ErrorKind, EventType, ProviderError, Usage
from ._classify import kind_from_status, kind_from_text
from ._retry_notice import notice_event, status_in
from ._spec import RunOutcome, as_dict, text_after_last_tool

__all__ = ["classify", "decode", "final_text", "provider_keys"]

_STATUS = re.compile(r"^\s*(?P<status>[1-5]\d\d)\b")


# pi reads each provider's key from its own variable; only the chosen provider's is passed.
_PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY",),
    "github-copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
}


def provider_keys(provider: str | None) -> tuple[str, ...]:
    """The variables pi (and gjc, built on its agent core) read *provider*'s key from."""
    if provider is None:
        return ()
    return _PROVIDER_KEYS.get(provider, (f"{provider.upper().replace('-', '_')}_API_KEY",))


def _usage(message: dict[str, Any]) -> Usage:
    u = as_dict(message.get("usage"))
    cost = as_dict(u.get("cost")).get("total")
    return Usage(
        input_tokens=int(u.get("input") or 0),
        output_tokens=int(u.get("output") or 0),
        cached_tokens=int(u.get("cacheRead") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, list):
        return str(content or "")
    return "".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def decode(obj: Any) -> AgentEvent | None:
    """One `--mode json` (or `--mode rpc`) line -> an event; a refused rpc command is a fatal,
    terminal error. Text arrives as `text_delta` events; the answer is
    the text of the last assistant `message_end` (`final_text`); a clean `agent_end` is
    terminal; an assistant `message_end` with `stopReason: "error"` is an error event (pi may
    still retry: the run goes on until the process exits)."""
    kind = obj.get("type")
    if kind == "session":
        return AgentEvent(type=EventType.init, raw=obj, metadata={"session_id": obj.get("id")})
    if kind == "response" and obj.get("command") == "get_state" and obj.get("success"):
        # rpc mode prints no `session` line: the session id is get_state's (pi docs/rpc.md)
        state = as_dict(obj.get("data"))
        return AgentEvent(
            type=EventType.init, raw=obj, metadata={"session_id": state.get("sessionId")}
        )
    if kind == "response" and obj.get("success") is False:  # rpc mode: a refused command
        text = f"pi refused {obj.get('command')}: {obj.get('error') or 'no reason given'}"
        return AgentEvent(
            type=EventType.error, content=text, raw=obj, is_error=True,
            end=EndSignal(fatal=True, terminal=True),
        )  # fmt: skip
    if kind == "message_update":
        update = as_dict(obj.get("assistantMessageEvent"))
        if update.get("type") == "text_delta":
            return AgentEvent(type=EventType.text, content=str(update.get("delta", "")), raw=obj)
        if update.get("type") == "toolcall_end":
            tool = as_dict(update.get("toolCall"))
            call = {"tool": tool.get("name"), "id": tool.get("id"), "input": tool.get("arguments")}
            return AgentEvent(
                type=EventType.tool_call, content=str(tool.get("name")), raw=obj, metadata=call
            )
        return None
    if kind == "tool_execution_end":
        result = as_dict(obj.get("result"))
        return AgentEvent(
            type=EventType.tool_result, content=_text(result), raw=obj,
            is_error=bool(obj.get("isError")),
            metadata={"id": obj.get("toolCallId"), "tool": obj.get("toolName")},
        )  # fmt: skip
    if kind == "message_end":
        message = as_dict(obj.get("message"))
        if message.get("role") != "assistant":
            return None
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            text = str(message.get("errorMessage") or f"the agent reported stopReason {stop}")
            # an auto_retry_start follows at once when pi retries; silence ends the run
            return AgentEvent(
                type=EventType.error, content=text, raw=obj, is_error=True,
                end=EndSignal(fatal=True),
            )  # fmt: skip
        meta: dict[str, Any] = {"usage": _usage(message), "model": message.get("model")}
        end = EndSignal()
        if stop != "toolUse":
            reason = "length" if stop == "length" else "stop"
            end = EndSignal(final_text=_text(message), finish_reason=reason)
        return AgentEvent(type=EventType.usage, raw=obj, metadata=meta, end=end)
    if kind == "agent_end":
        messages = obj.get("messages")
        last = as_dict(messages[-1]) if isinstance(messages, list) and messages else {}
        if last.get("stopReason") in ("error", "aborted"):
            return None  # an auto-retry may follow
        return AgentEvent(type=EventType.usage, raw=obj, end=EndSignal(terminal=True))
    if kind == "auto_retry_start":  # pi's own retry begins: agentport owns retries
        text = str(obj.get("errorMessage") or "the agent began an auto-retry")
        return notice_event(obj, text, status=status_in(text.split(" ", 1)[0]))
    if kind == "auto_retry_end" and not obj.get("success"):
        text = str(obj.get("finalError") or "the agent gave up retrying")
        return AgentEvent(
            type=EventType.error, content=text, raw=obj, is_error=True, end=EndSignal(fatal=True)
        )
    return None


def final_text(events: Sequence[AgentEvent]) -> str:
    """Fallback when no `message_end` carried the answer: the deltas after the last tool."""
    return text_after_last_tool(events)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The last assistant outcome decides: an error (`stopReason: "error"` or a failed
    auto-retry) -> HTTP status from the message's leading number, else its wording; a
    non-zero exit without one (text mode, bad flags) -> `process_failed`."""
    tail = outcome.stderr_tail[-4000:]
    last = next(
        (e for e in reversed(outcome.events) if e.is_error or e.end.final_text is not None), None
    )
    if last is not None and last.is_error:
        found = _STATUS.match(last.content)
        status = int(found.group("status")) if found else None
        kind = kind_from_status(status) or kind_from_text(last.content)
        return ProviderError(
            kind or ErrorKind.process_failed, last.content, status=status,
            exit_code=outcome.exit_code, stderr_tail=tail,
        )  # fmt: skip
    if (outcome.exit_code or 0) > 0:
        line = (tail.strip().splitlines() or [f"exit code {outcome.exit_code}"])[-1]
        return ProviderError(
            kind_from_text(line) or ErrorKind.process_failed, line,
            exit_code=outcome.exit_code, stderr_tail=tail,
        )  # fmt: skip
    return None
