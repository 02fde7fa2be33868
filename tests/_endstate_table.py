"""The end-state table over every CLI backend's decoder, as data: each recorded transcript
(tests/fixtures/cli) and, for the CLIs no transcript was recorded for, lines built from the
event shapes their decoders read, decoded as the generic adapter decodes them, then judged
as it judges them (retry notice first, then `settle`). `summary` reduces one case to JSON:
every event's type, text, error flag, caller metadata and end signal, and the run's end
state. tests/fixtures/endstate_table.json holds the summaries the string-keyed decoders
produced; test_endsignal_table.py checks the typed decoders produce the same."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentport.backends import (
    BackendSpec,
    RunOutcome,
    agy,
    claude,
    codex,
    copilot,
    gemini,
    gjc,
    goose,
    grok,
    hermes,
    kiro,
    opencode,
    pi,
    qwen,
    zcode,
)
from agentport.backends._endstate import RunWatch, ToolLedger, reported_usage, settle
from agentport.backends._retry_notice import notice_error
from agentport.core import AgentEvent, ProviderError

FIXTURES = Path(__file__).parent / "fixtures" / "cli"
GOLDEN = Path(__file__).parent / "fixtures" / "endstate_table.json"

SPECS: dict[str, BackendSpec] = {
    "claude": claude.SPEC, "codex": codex.SPEC, "copilot": copilot.SPEC,
    "gemini": gemini.SPEC, "opencode": opencode.SPEC, "pi": pi.SPEC, "qwen": qwen.SPEC,
    "gjc": gjc.SPEC, "grok": grok.SPEC, "zcode": zcode.SPEC, "hermes": hermes.SPEC,
    "goose": goose.SPEC, "kiro": kiro.SPEC, "agy": agy.SPEC,
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    backend: str
    name: str
    decode: Callable[[Any], AgentEvent | None]
    spec: BackendSpec
    objs: list[Any]
    exit_code: int | None
    stderr: str = ""


def _recorded(cli: str) -> Iterator[tuple[str, list[Any], int | None, str]]:
    for stdout in sorted((FIXTURES / cli).glob("*.stdout")):
        case = stdout.name.removesuffix(".stdout")
        objs = []
        for line in stdout.read_text(encoding="utf-8").splitlines():
            try:
                objs.append(json.loads(line))
            except ValueError:
                continue
        meta = json.loads((FIXTURES / cli / f"{case}.meta.json").read_text(encoding="utf-8"))
        err = FIXTURES / cli / f"{case}.stderr"
        tail = err.read_text(encoding="utf-8")[-4000:] if err.exists() else ""
        yield case, objs, meta.get("exit_code"), tail


_APP = [  # codex app-server messages (the shapes `codex.app_decode` reads)
    {"method": "thread/started", "params": {"thread": {"id": "T"}}},
    {"method": "error", "params": {"error": {"message": "Reconnecting 1/5"}, "willRetry": True}},
    {"method": "item/completed", "params": {"item": {"type": "agentMessage", "id": "m",
                                                     "text": "hello"}}},
    {"method": "thread/tokenUsage/updated",
     "params": {"tokenUsage": {"total": {"inputTokens": 7, "outputTokens": 2}}}},
    {"method": "turn/completed", "params": {"turn": {"status": "completed"}}},
]  # fmt: skip
_APP_FAILED = [
    {"method": "error", "params": {"error": {"message": "429 Too Many Requests"}}},
    {"method": "turn/completed", "params": {"turn": {"status": "failed",
                                                     "error": {"message": "429 Too Many"}}}},
]  # fmt: skip
_BUILT: dict[str, dict[str, list[Any]]] = {
    "grok": {
        "answer": [{"role": "user", "content": "q"},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "out"},
                   {"role": "assistant", "content": "the answer"}],
        "api-error": [{"role": "assistant",
                       "content": "Sorry, I encountered an error: Grok API error: 429 slow"}],
    },
    "zcode": {
        "answer": [{"line": "banner"}, {"document": {"response": "hi", "sessionId": "s",
                                                    "usage": {"input_tokens": 3}}}],
        "error": [{"document": {"error": {"message": "rate limit exceeded"}}}],
        "not-an-object": [{"document": [1, 2]}],
        "empty": [{"line": "x"}],
    },
    "hermes": {
        "answer": [{"line": "hello"}, {"line": ""}, {"line": "world"},
                   {"trailer": {"completed": True, "session_id": "s", "model": "m",
                                "input_tokens": 4, "output_tokens": 2}}],
        "failed": [{"line": "API call failed: 500 server error"},
                   {"trailer": {"failed": True, "completed": False}}],
    },
    "goose": {
        "answer": [{"type": "message", "message": {"role": "assistant", "content": [
                       {"type": "toolRequest", "id": "t1",
                        "toolCall": {"value": {"name": "shell"}}}]}},
                   {"type": "message", "message": {"role": "user", "content": [
                       {"type": "toolResponse", "id": "t1",
                        "toolResult": {"status": "success", "value": "ok"}}]}},
                   {"type": "message", "message": {"role": "assistant", "content": [
                       {"type": "thinking", "thinking": "hm"}]}},
                   {"type": "message", "message": {"role": "assistant", "content": [
                       {"type": "text", "text": "done"}]}},
                   {"type": "complete", "total_tokens": 9}],
        "error": [{"type": "error", "error": "approval required for shell"}],
        "open-tool": [{"type": "message", "message": {"role": "assistant", "content": [
                          {"type": "toolRequest", "id": "t9"}]}},
                      {"type": "complete"}],
    },
    "kiro": {"answer": [{"line": "> hello"}, {"line": ""}, {"line": "there"}]},
    "agy": {
        "answer": [{"event": "init", "init": {"conversation_id": "c", "model": "m"}},
                   {"event": "step_update", "step_update": {"tool_info": {"name": "ls"}}},
                   {"event": "step_update", "step_update": {"state": "done",
                                                            "tool_info": {"name": "ls",
                                                                          "output": "a"}}},
                   {"event": "step_update", "step_update": {"thinking_delta": "hm"}},
                   {"event": "step_update", "step_update": {"text_delta": "partial"}},
                   {"event": "result", "result": {"status": "SUCCESS", "response": "final",
                                                  "structured_output": {"a": 1},
                                                  "conversation_id": "c"}}],
        "error": [{"event": "result", "result": {"status": "ERROR",
                                                 "error": {"message": "quota exceeded"}}}],
    },
    "pi": {
        "rpc-refused": [{"type": "response", "command": "prompt", "success": False,
                         "error": "busy"}],
    },
}  # fmt: skip


def cases() -> list[Case]:
    out: list[Case] = []
    for cli in ("claude", "codex", "copilot", "gemini", "opencode", "pi", "qwen"):
        for name, objs, code, tail in _recorded(cli):
            out.append(Case(cli, name, SPECS[cli].decode, SPECS[cli], objs, code, tail))
            if cli == "pi":  # gjc prints pi's events through the same decoder
                out.append(Case("gjc", name, gjc.SPEC.decode, gjc.SPEC, objs, code, tail))
    for cli, built in _BUILT.items():
        for name, objs in built.items():
            for code in (0, 1):
                out.append(Case(cli, f"built-{name}-exit{code}", SPECS[cli].decode,
                                SPECS[cli], objs, code))  # fmt: skip
    out.append(Case("codex", "app-server-ok", codex.app_decode, codex.SPEC, _APP, None))
    out.append(Case("codex", "app-server-failed", codex.app_decode, codex.SPEC, _APP_FAILED, 1))
    return out


ACP_UPDATES = [
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}},
    {"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "read", "rawInput": {"p": 1}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed",
     "rawOutput": {"e": 1}},
    {"sessionUpdate": "plan", "entries": []},
]  # fmt: skip


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_default, sort_keys=True))


# fields added to the summarised models after the table was recorded (the billing route and
# cost state of a usage, the binary that answered): another feature's, not the end state's
LATER_FIELDS = ("billing_route", "cost_state", "binary")


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        dumped = value.model_dump(mode="json")
        for name in LATER_FIELDS:
            if isinstance(dumped, dict):
                dumped.pop(name, None)
        return dumped
    if isinstance(value, ProviderError):
        return _error(value)
    return repr(value)


def _error(error: ProviderError | None) -> Any:
    if error is None:
        return None
    fields = ("kind", "message", "retryable", "retry_after", "timeout", "exit_code", "status",
              "stderr_tail", "raw_text", "request_sent", "mid_stream")  # fmt: skip
    return _json({f: getattr(error, f) for f in fields} | {"details": dict(error.details)})


Signal = Callable[[AgentEvent], dict[str, Any]]
Caller = Callable[[AgentEvent], dict[str, Any]]


def summary(case: Case, signal: Signal, caller: Caller) -> dict[str, Any]:
    """One case as the generic adapter sees it: each event (with what `RunWatch.feed` said),
    the tool calls closed as abandoned, the usage and session, and the end state."""
    events: list[AgentEvent] = []
    rows: list[dict[str, Any]] = []
    watch, ledger = RunWatch(), ToolLedger()
    closed: list[AgentEvent] = []
    for obj in case.objs:
        if not isinstance(obj, dict):
            continue
        event = case.decode(obj)
        if event is not None:
            if signal(event).get("terminal"):
                closed += ledger.close()
            ledger.observe(event)
            events.append(event)
        fed = watch.feed(event)
        if event is not None:
            rows.append(_json({
                "type": event.type.value, "content": event.content, "is_error": event.is_error,
                "metadata": caller(event), "end": signal(event), "feed": fed,
            }))  # fmt: skip
        if fed is True:
            break
    notice = next((e for e in events if signal(e).get("retry_notice")), None)
    if notice is not None:
        state: dict[str, Any] = {"notice": _error(notice_error(notice, case.exit_code, ""))}
    else:
        outcome = RunOutcome(case.exit_code, case.stderr, events)
        end = settle(case.spec, outcome, watch.pending)
        state = {
            "error": _error(end.error), "text": end.text, "finish_reason": end.finish_reason,
            "warnings": list(end.warnings),
        }  # fmt: skip
    structured = [signal(e)["structured"] for e in events if "structured" in signal(e)]
    return _json({
        "events": rows, "abandoned": [caller(c) for c in closed], "state": state,
        "usage": reported_usage(events, case.spec.usage_mode),
        "structured": structured[-1] if structured else None,
    })  # fmt: skip
