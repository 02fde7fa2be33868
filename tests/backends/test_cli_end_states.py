"""End-state tables, one per CLI backend, on transcripts: decode every line with
the backend's real decoder, then `settle` (the generic adapter's end-state judgment) decides.
Pure: no processes. The linger / grace timing is covered with fake CLIs in
test_cli_end_state_process.py.

Transcripts are the real CLIs' (tests/fixtures/cli, copied from
shared/fixtures/cli-transcripts). A shape no transcript shows is built from a real transcript
by editing the field the CLI's documented event schema names; such tests say `built:` in
their docstring, with the source of the shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import ROOT
from _runner_util import FIXTURES
from agentport.backends import (
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
from agentport.backends._endstate import (
    ABANDONED_TEXT,
    LENGTH_WARNING,
    MISSING_TERMINAL,
    EndState,
    RunWatch,
    ToolLedger,
    settle,
    stderr_failure,
)
from agentport.core import AgentEvent, EndSignal, ErrorKind, EventType

Obj = dict[str, Any]


def lines(cli: str, case: str) -> list[Obj]:
    text = (FIXTURES / cli / f"{case}.stdout").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def stderr(cli: str, case: str) -> str:
    path = FIXTURES / cli / f"{case}.stderr"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def exit_code(cli: str, case: str) -> int:
    return int(json.loads((FIXTURES / cli / f"{case}.meta.json").read_text())["exit_code"])


def decode(module: ModuleType, objs: list[Obj]) -> list[AgentEvent]:
    return [e for e in (module.decode(o) for o in objs) if e is not None]


def judge(
    module: ModuleType, objs: list[Obj], code: int | None = 0, tail: str = ""
) -> tuple[EndState, list[AgentEvent]]:
    """Decode as the adapter does (stop reading at the first terminal event) and settle."""
    events: list[AgentEvent] = []
    watch = RunWatch()
    for obj in objs:
        event = module.decode(obj)
        if event is not None:
            events.append(event)
        if watch.feed(event) is True:
            break
    return settle(module.SPEC, RunOutcome(code, tail, events), watch.pending), events


def ok(state: EndState) -> str:
    assert state.error is None, state.error
    return state.text


def failed(state: EndState) -> ErrorKind:
    assert state.error is not None, state
    return state.error.kind


def retyped(objs: list[Obj], match: Callable[[Obj], bool], **changes: Any) -> list[Obj]:
    """A copy of *objs* with *changes* merged into every object *match* selects."""
    return [{**o, **changes} if match(o) else o for o in objs]


# ---------------------------------------------------------------------------------- codex


def test_codex_completed_turn_is_stop_and_the_model_metadata_item_a_warning() -> None:
    state, _ = judge(codex, lines("codex", "ok-json"))
    assert ok(state) == '{"status": "ok", "answer": 42}'
    assert state.finish_reason == "stop"
    assert any("Model metadata" in w for w in state.warnings)


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500", ErrorKind.server_error),
        ("http429", ErrorKind.rate_limited),
        ("http401", ErrorKind.auth_required),
        ("close", ErrorKind.network),
        ("midstream", ErrorKind.network),
    ],
)
def test_codex_failure_transcripts_end_in_the_right_kind(case: str, kind: ErrorKind) -> None:
    state, _ = judge(codex, lines("codex", case), exit_code("codex", case))
    assert failed(state) is kind


def test_codex_final_plain_error_line_is_fatal_and_turn_failed_terminal() -> None:
    events = decode(codex, lines("codex", "http500-noretry"))
    assert events[-2].is_error
    assert events[-2].end.fatal
    assert events[-1].end.terminal


def test_codex_final_error_line_then_silence_fails_with_its_text() -> None:
    """built: codex 0.171.0 http500-noretry cut after its plain `error` line (no turn.failed:
    the CLI hung); the run ends after the grace with that text, not an idle timeout."""
    objs = [o for o in lines("codex", "http500-noretry") if o["type"] != "turn.failed"]
    state, events = judge(codex, objs, code=-15)
    assert failed(state) is ErrorKind.server_error
    assert state.error is not None
    assert state.error.message == objs[-1]["message"]
    assert events[-1].end.fatal


def test_codex_error_line_then_a_completed_turn_is_success_with_the_error_as_warning() -> None:
    """built: the plain `error` line of http500-noretry followed by ok-json's answer and
    turn.completed (the final stream state decides)."""
    error = next(o for o in lines("codex", "http500-noretry") if o["type"] == "error")
    state, _ = judge(codex, [error, *lines("codex", "ok-json")])
    assert ok(state) == '{"status": "ok", "answer": 42}'
    assert f"recovered error: {error['message']}" in state.warnings


def test_codex_command_with_null_exit_code_is_never_a_successful_tool_result() -> None:
    """built: tool-shell's completed command_execution with `exit_code: null` (codex's
    ThreadItem schema allows null: the command was killed or never reported one)."""
    objs = lines("codex", "tool-shell")
    done = next(o for o in objs if o["type"] == "item.completed" and "exit_code" in o["item"])
    nulled = {**done, "item": {**done["item"], "exit_code": None}}
    result = codex.decode(nulled)
    assert result is not None
    assert result.type is EventType.tool_result
    assert result.is_error
    good = codex.decode(done)
    assert good is not None
    assert not good.is_error


def test_codex_tool_started_and_never_completed_is_closed_as_abandoned() -> None:
    """built: tool-shell without its `item.completed` for the command (turn.completed came
    first); the end of the turn closes the call as an abandoned, failed tool result."""
    objs = [
        o
        for o in lines("codex", "tool-shell")
        if not (o["type"] == "item.completed" and o["item"]["type"] == "command_execution")
    ]
    ledger = ToolLedger()
    closed: list[AgentEvent] = []
    for event in decode(codex, objs):
        if event.end.terminal:
            closed = ledger.close()
        ledger.observe(event)
    assert len(closed) == 1
    assert closed[0].type is EventType.tool_result
    assert closed[0].is_error
    assert closed[0].metadata["abandoned"] is True
    assert closed[0].metadata["id"] == "item_1"
    assert closed[0].content == ABANDONED_TEXT


# --------------------------------------------------------------------------------- claude


def _claude_result(stop_reason: str) -> list[Obj]:
    return retyped(
        lines("claude", "ok-stream-json"),
        lambda o: o["type"] == "result",
        stop_reason=stop_reason,
    )


def test_claude_end_turn_is_stop() -> None:
    state, _ = judge(claude, lines("claude", "ok-stream-json"))
    assert ok(state)
    assert state.finish_reason == "stop"
    assert state.warnings == ()


def test_claude_max_tokens_is_length_with_a_warning() -> None:
    """built: ok-stream-json's result with `stop_reason: "max_tokens"` (Messages API)."""
    state, _ = judge(claude, _claude_result("max_tokens"))
    assert ok(state)
    assert state.finish_reason == "length"
    assert LENGTH_WARNING in state.warnings


def test_claude_refusal_is_a_non_retryable_failure_keeping_the_text() -> None:
    """built: ok-stream-json's result with `stop_reason: "refusal"` (Messages API)."""
    state, events = judge(claude, _claude_result("refusal"))
    assert failed(state) is ErrorKind.content_filter
    assert state.error is not None
    assert not state.error.retryable
    assert state.error.details["finish_reason"] == "refusal"
    assert state.error.raw_text == events[-1].end.final_text


def test_claude_schema_run_ending_in_tool_use_is_a_normal_stop() -> None:
    state, _ = judge(claude, lines("claude", "json-schema-stream"))
    assert ok(state)
    assert state.finish_reason == "stop"


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500", ErrorKind.server_error),
        ("http500-stream", ErrorKind.server_error),
        ("http429", ErrorKind.rate_limited),
        ("http401", ErrorKind.auth_required),
        ("close", ErrorKind.network),
        ("max-turns", ErrorKind.process_failed),
    ],
)
def test_claude_error_result_decides_over_its_api_retry_notices(case: str, kind: ErrorKind) -> None:
    state, _ = judge(claude, lines("claude", case), exit_code("claude", case))
    assert failed(state) is kind


def test_claude_api_retry_then_a_good_result_is_success_with_the_retry_as_warning() -> None:
    """built: http500-stream's `api_retry` line followed by ok-stream-json (a retry that
    worked)."""
    retry = next(o for o in lines("claude", "http500-stream") if o.get("subtype") == "api_retry")
    state, _ = judge(claude, [retry, *lines("claude", "ok-stream-json")])
    assert ok(state)
    assert any(w.startswith("API retry 1/") for w in state.warnings)


# --------------------------------------------------------------------------------- gemini


def test_gemini_success_result_is_stop() -> None:
    state, _ = judge(gemini, lines("gemini", "ok-stream-json"))
    assert ok(state)
    assert state.finish_reason == "stop"


def _gemini_silent_success() -> list[Obj]:
    return [
        o
        for o in lines("gemini", "ok-stream-json")
        if not (o["type"] == "message" and o.get("role") == "assistant")
    ]


def test_gemini_empty_success_with_429_on_stderr_is_rate_limited_and_retryable() -> None:
    """built: ok-stream-json without assistant text (status success) + http429's stderr
    (`Attempt 1 failed with status 429 … RESOURCE_EXHAUSTED`)."""
    state, _ = judge(gemini, _gemini_silent_success(), 0, stderr("gemini", "http429"))
    assert failed(state) is ErrorKind.rate_limited
    assert state.error is not None
    assert state.error.retryable
    assert "without an answer" in state.error.message


def test_gemini_empty_success_with_a_clean_stderr_is_bad_output() -> None:
    """built: ok-stream-json without assistant text; its own (noisy but clean) stderr."""
    state, _ = judge(gemini, _gemini_silent_success(), 0, stderr("gemini", "ok-stream-json"))
    assert failed(state) is ErrorKind.bad_output


@pytest.mark.parametrize(
    ("case", "kind"),
    [("http500-stream", ErrorKind.server_error), ("midstream", ErrorKind.network)],
)
def test_gemini_error_result_decides(case: str, kind: ErrorKind) -> None:
    state, _ = judge(gemini, lines("gemini", case), exit_code("gemini", case))
    assert failed(state) is kind


def test_gemini_tool_use_without_result_is_abandoned_at_the_result() -> None:
    """built: tool-shell without its `tool_result` line."""
    objs = [o for o in lines("gemini", "tool-shell") if o["type"] != "tool_result"]
    ledger = ToolLedger()
    closed: list[AgentEvent] = []
    for event in decode(gemini, objs):
        if event.end.terminal:
            closed = ledger.close()
        ledger.observe(event)
    assert [c.metadata["abandoned"] for c in closed] == [True]
    assert all(c.is_error for c in closed)


# ------------------------------------------------------------------------------- opencode


def test_opencode_final_step_with_reason_stop_is_terminal() -> None:
    events = decode(opencode, lines("opencode", "tool-bash"))
    finishes = [e for e in events if e.type is EventType.usage]
    assert [bool(e.end.terminal) for e in finishes] == [False, True]
    state, _ = judge(opencode, lines("opencode", "tool-bash"))
    assert ok(state) == '{"status": "ok", "answer": 42}'
    assert state.finish_reason == "stop"


def test_opencode_early_error_then_answer_and_stop_is_success_with_a_warning() -> None:
    """built: http500's `error` line (isRetryable) followed by ok-json (the answer and a
    normal finish); exit 0."""
    error = lines("opencode", "http500")[0]
    state, _ = judge(opencode, [error, *lines("opencode", "ok-json")])
    assert ok(state) == '{"status": "ok", "answer": 42}'
    assert any(w.startswith("recovered error: stub: internal server error") for w in state.warnings)


def test_opencode_final_step_decides_even_with_a_non_zero_exit() -> None:
    """built: the early-error stream above ending with exit 1."""
    error = lines("opencode", "http500")[0]
    state, _ = judge(opencode, [error, *lines("opencode", "ok-json")], code=1)
    assert ok(state)


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500", ErrorKind.server_error),
        ("http429", ErrorKind.rate_limited),
        ("http401", ErrorKind.auth_required),
        ("close", ErrorKind.network),
        ("unknown-model", ErrorKind.process_failed),
    ],
)
def test_opencode_unanswered_error_line_decides(case: str, kind: ErrorKind) -> None:
    state, events = judge(opencode, lines("opencode", case), exit_code("opencode", case))
    assert failed(state) is kind
    assert events[-1].end.fatal


@pytest.mark.parametrize(
    ("reason", "finish"), [("length", "length"), ("other", "stop"), ("stop", "stop")]
)
def test_opencode_step_reasons_map_to_finish_reason(reason: str, finish: str) -> None:
    """built: ok-json's step_finish with the AI SDK finish reason *reason*."""
    objs = [
        {**o, "part": {**o["part"], "reason": reason}} if o["type"] == "step_finish" else o
        for o in lines("opencode", "ok-json")
    ]
    state, _ = judge(opencode, objs)
    assert ok(state)
    assert state.finish_reason == finish
    assert (LENGTH_WARNING in state.warnings) is (finish == "length")


def test_opencode_content_filter_is_a_refusal() -> None:
    """built: ok-json's step_finish with reason `content-filter` (AI SDK finish reason)."""
    objs = [
        {**o, "part": {**o["part"], "reason": "content-filter"}}
        if o["type"] == "step_finish"
        else o
        for o in lines("opencode", "ok-json")
    ]
    state, _ = judge(opencode, objs)
    assert failed(state) is ErrorKind.content_filter
    assert state.error is not None
    assert not state.error.retryable


# ----------------------------------------------------------------------------------- qwen


def test_qwen_success_result_is_stop() -> None:
    state, _ = judge(qwen, lines("qwen", "ok-stream-json"))
    assert ok(state)
    assert state.finish_reason == "stop"


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500-stream", ErrorKind.server_error),
        ("midstream", ErrorKind.network),  # the marker appended to the partial answer
    ],  # (http401 / close were recorded with `-o json`: one array, not stream-json lines)
)
def test_qwen_in_band_api_error_decides_and_is_a_fatal_line(case: str, kind: ErrorKind) -> None:
    state, events = judge(qwen, lines("qwen", case), exit_code("qwen", case))
    assert failed(state) is kind
    marked = [e for e in events if e.type is EventType.text and e.is_error]
    assert marked
    assert all(e.end.fatal for e in marked)


def test_qwen_api_error_text_then_silence_fails_with_the_marker_text() -> None:
    """built: http500-stream cut before its `result` line (qwen hung after the text)."""
    objs = [o for o in lines("qwen", "http500-stream") if o["type"] != "result"]
    state, _ = judge(qwen, objs, code=-15)
    assert failed(state) is ErrorKind.server_error


# ------------------------------------------------------------------------------------- pi


def test_pi_clean_agent_end_is_stop() -> None:
    state, _ = judge(pi, lines("pi", "ok-json"))
    assert ok(state)
    assert state.finish_reason == "stop"


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500", ErrorKind.server_error),
        ("http429", ErrorKind.rate_limited),
        ("http401", ErrorKind.auth_required),
        ("close", ErrorKind.network),
    ],
)
def test_pi_exit_zero_with_an_unrecovered_error_fails(case: str, kind: ErrorKind) -> None:
    state, _ = judge(pi, lines("pi", case), exit_code("pi", case))
    assert exit_code("pi", case) == 0
    assert failed(state) is kind


def test_pi_error_then_its_auto_retry_ends_the_run_with_the_attempts_error() -> None:
    """pi's `auto_retry_start` is its own retry beginning: terminal (agentport owns retries),
    so the run never waits through pi's loop; the failure is the attempt's error."""
    objs = lines("pi", "http500")
    state, events = judge(pi, objs, 0)
    assert events[-1].end.terminal
    assert events[-1].raw["type"] == "auto_retry_start"
    assert failed(state) is ErrorKind.server_error
    assert len(events) < len(decode(pi, objs))  # stopped at the first notice


def test_pi_error_then_a_good_answer_is_success_with_a_recovered_warning() -> None:
    """built: http500's first failed assistant message followed by ok-json's good one (pi
    answering after an error without a retry notice): the final state decides."""
    error = next(o for o in lines("pi", "http500") if o["type"] == "message_end"
                 and o["message"].get("stopReason") == "error")  # fmt: skip
    state, _ = judge(pi, [error, *lines("pi", "ok-json")])
    assert ok(state) == '{"status": "ok", "answer": 42}'
    assert any(w.startswith("recovered error: 500") for w in state.warnings)


def test_pi_length_stop_is_length_with_a_warning() -> None:
    """built: ok-json's assistant message with `stopReason: "length"` (pi's StopReason)."""
    objs = []
    for o in lines("pi", "ok-json"):
        message = o.get("message")
        assistant = isinstance(message, dict) and message.get("role") == "assistant"
        if o["type"] == "message_end" and assistant:
            o = {**o, "message": {**o["message"], "stopReason": "length"}}
        objs.append(o)
    state, _ = judge(pi, objs)
    assert ok(state)
    assert state.finish_reason == "length"
    assert LENGTH_WARNING in state.warnings


# -------------------------------------------------------------------------------- copilot


def test_copilot_clean_result_is_stop() -> None:
    state, _ = judge(copilot, lines("copilot", "ok-json"))
    assert ok(state)
    assert state.finish_reason == "stop"


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        ("http500", ErrorKind.server_error),
        ("http429", ErrorKind.rate_limited),
        ("http401", ErrorKind.auth_required),
    ],
)
def test_copilot_session_error_decides(case: str, kind: ErrorKind) -> None:
    state, _ = judge(copilot, lines("copilot", case), exit_code("copilot", case))
    assert failed(state) is kind


def test_copilot_session_error_then_silence_fails_with_its_text() -> None:
    """built: http500 cut before its `result` line."""
    objs = [o for o in lines("copilot", "http500") if o["type"] != "result"]
    state, _ = judge(copilot, objs, code=-15)
    assert failed(state) is ErrorKind.server_error


def test_copilot_clean_result_decides_over_an_earlier_session_error() -> None:
    """built: http500's session.error followed by ok-json (exitCode 0)."""
    error = next(o for o in lines("copilot", "http500") if o["type"] == "session.error")
    state, _ = judge(copilot, [error, *lines("copilot", "ok-json")])
    assert ok(state)
    assert any(w.startswith("recovered error: ") for w in state.warnings)


# ------------------------------------------------- hermes, goose, kiro, agy (documented shapes)


def test_hermes_completed_report_is_stop_and_a_failed_one_an_error() -> None:
    """built: hermes 0.19.0 `--usage-file` report as `_lines.py` frames it."""
    good = [{"line": "hello"}, {"trailer": {"completed": True, "failed": False}}]
    state, _ = judge(hermes, good)
    assert ok(state) == "hello"
    assert state.finish_reason == "stop"
    bad = [{"line": "API call failed after 3 retries: 429"}, {"trailer": {"failed": True}}]
    assert failed(judge(hermes, bad)[0]) is ErrorKind.rate_limited


def test_goose_complete_is_stop_and_error_line_decides() -> None:
    """built: goose stream-json `message` / `complete` / `error` lines
    (reference/undriveable-clis.md §2)."""
    text = {"type": "message", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "hi"}]}}  # fmt: skip
    state, _ = judge(goose, [text, {"type": "complete", "total_tokens": 3}])
    assert ok(state) == "hi"
    assert state.finish_reason == "stop"
    error = {"type": "error", "error": "Request failed: 503 Service Unavailable"}
    assert failed(judge(goose, [text, error], code=1)[0]) is ErrorKind.server_error


def test_kiro_reports_no_finish_reason_and_an_empty_answer_reads_stderr() -> None:
    """built: kiro-cli plain-text lines as `_lines.py` frames them (no JSON mode)."""
    state, _ = judge(kiro, [{"line": "> hi"}])
    assert ok(state) == "hi"
    assert state.finish_reason is None
    empty, _ = judge(kiro, [{"line": ""}], 0, "error: 429 Too Many Requests\n")
    assert failed(empty) is ErrorKind.rate_limited


def test_agy_success_result_is_stop_and_error_status_decides() -> None:
    """built: agy `--output-format stream-json` `result` lines (1.1.8 release notes)."""
    good = {"event": "result", "result": {"status": "SUCCESS", "response": "hi"}}
    state, _ = judge(agy, [good])
    assert ok(state) == "hi"
    assert state.finish_reason == "stop"
    bad = {"event": "result", "result": {"status": "ERROR", "error": "quota exhausted"}}
    assert failed(judge(agy, [bad])[0]) is ErrorKind.rate_limited


# ------------------------------------------------------------------------ shared mechanics


def test_run_watch_arms_the_grace_on_a_fatal_error_and_a_recovery_disarms_it() -> None:
    watch = RunWatch(2.0)
    fatal = AgentEvent(type=EventType.error, content="x", is_error=True, end=EndSignal(fatal=True))
    assert watch.feed(fatal) == 2.0
    assert watch.feed(None) == 2.0  # a line we do not surface: still pending
    tool = AgentEvent(type=EventType.tool_result, is_error=True)
    assert watch.feed(tool) == 2.0  # a tool failure is not a recovery
    assert watch.feed(AgentEvent(type=EventType.text, content="back")) is False
    assert watch.feed(AgentEvent(type=EventType.usage, end=EndSignal(terminal=True))) is True


def test_the_empty_answer_stderr_scan_ignores_the_clis_usual_noise() -> None:
    for cli, case in [("gemini", "ok-stream-json"), ("gemini", "tool-shell")]:
        assert stderr_failure(stderr(cli, case)) is None


@given(st.lists(st.sampled_from(["open", "close", "other"]), max_size=30))
def test_every_open_tool_call_is_closed_exactly_once(steps: list[str]) -> None:
    ledger = ToolLedger()
    opened: set[str] = set()
    for n, step in enumerate(steps):
        key = str(n % 4)
        if step == "open":
            ledger.observe(AgentEvent(type=EventType.tool_call, metadata={"id": key}))
            opened.add(key)
        elif step == "close":
            ledger.observe(AgentEvent(type=EventType.tool_result, metadata={"id": key}))
            opened.discard(key)
    closed = ledger.close()
    assert sorted(c.metadata["id"] for c in closed) == sorted(opened)
    assert all(c.is_error and c.metadata["abandoned"] for c in closed)
    assert ledger.close() == []


def test_fixtures_exist_for_every_case_used_here() -> None:
    for cli in ("codex", "claude", "gemini", "opencode", "qwen", "pi", "copilot"):
        assert (FIXTURES / cli).is_dir(), Path(cli)


@pytest.mark.parametrize(
    "name",
    ["codex", "claude", "gemini", "opencode", "qwen", "pi", "copilot", "hermes", "goose", "kiro",
     "agy", "grok", "gjc", "zcode", "acp"],
)  # fmt: skip
def test_every_cli_backend_page_has_its_end_state_table(name: str) -> None:
    page = ROOT / "docs" / "backends" / f"{name}.md"
    text = page.read_text(encoding="utf-8")
    assert "## End states" in text
    assert "| The run ends with | Outcome |" in text


_ALL = {
    m.__name__.rsplit(".", 1)[1]: m
    for m in (
        codex,
        claude,
        gemini,
        opencode,
        qwen,
        pi,
        copilot,
        hermes,
        goose,
        kiro,
        agy,
        grok,
        gjc,
        zcode,
    )
}
_EVENT_TYPES = [
    "thread.started", "turn.completed", "turn.failed", "error", "item.started",
    "item.completed", "system", "assistant", "user", "result", "init", "message", "tool_use",
    "tool_result", "step_start", "step_finish", "text", "session", "message_update",
    "message_end", "agent_end", "auto_retry_start", "auto_retry_end", "tool_execution_end",
    "assistant.message", "assistant.message_delta", "tool.execution_start",
    "tool.execution_complete", "session.error", "session.info", "complete", "step_update",
    "no-such-type",
]  # fmt: skip
_KEYS = [
    "item", "error", "message", "usage", "result", "part", "data", "stop_reason", "stopReason",
    "status", "subtype", "is_error", "messages", "line", "trailer", "event", "exitCode",
    "assistantMessageEvent", "content", "role", "reason", "structured_output", "errors",
    "api_error_status", "structured_result", "toolRequests", "state", "tool_info",
]  # fmt: skip
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.sampled_from(sorted(_ALL)),
    st.sampled_from(_EVENT_TYPES),
    st.dictionaries(st.sampled_from(_KEYS), _json, max_size=5),
)
def test_every_cli_decoder_and_end_state_survive_unknown_shapes(
    cli: str, kind: str, fields: dict[str, Any]
) -> None:
    """An event of an unexpected shape is a kept event or skipped, and the end-state
    judgment of a stream of them is a value: never an exception out of complete()."""
    module = _ALL[cli]
    obj = {**fields, "type": kind, "event": kind}
    event = module.decode(obj)
    assert event is None or isinstance(event, AgentEvent)
    state, _ = judge(module, [obj, obj], code=1)
    assert isinstance(state, EndState)
    assert state.error is None or isinstance(state.error.kind, ErrorKind)


# ------------------------------------------------ a stream cut before its terminal event


@pytest.mark.parametrize("name", sorted(n for n, m in _ALL.items() if m.SPEC.terminal_event))
def test_an_answer_without_the_terminal_event_is_never_a_clean_success(name: str) -> None:
    """Regression: a codex stream with an `agent_message` and then exit 0, no
    `turn.completed`, was a plain Success. Every CLI whose complete stream ends with one
    event: the answer alone is a failure, or a success that says the end is missing."""
    spec = _ALL[name].SPEC
    answer = AgentEvent(type=EventType.text, content="the answer", raw={})
    state = settle(spec, RunOutcome(0, "", [answer]))
    if state.error is None:
        assert state.text == "the answer"
        assert MISSING_TERMINAL.format(event=spec.terminal_event) in state.warnings, state
    assert state.error is not None or state.finish_reason is None


def test_codex_agent_message_then_exit_0_warns_and_a_completed_turn_does_not() -> None:
    message = {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "hi"}}
    done = {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}
    cut, _ = judge(codex, [message])
    assert cut.error is None
    assert (cut.text, cut.finish_reason) == ("hi", None)
    assert cut.warnings == (MISSING_TERMINAL.format(event="turn.completed"),)
    whole, _ = judge(codex, [message, done])
    assert (whole.text, whole.finish_reason, whole.warnings) == ("hi", "stop", ())


def test_gemini_keeps_its_own_reason_from_the_stream() -> None:
    """Regression: a safety block arrives as a stream `error` line, then `result` with
    status error and no message, exit 0; it became `bad_output "gemini failed (exit 0)"`,
    and against the real CLI an unrelated stderr line."""
    said = "The model response was blocked due to safety settings."
    lines = [
        {"type": "init", "session_id": "s", "model": "gemini-2.5-flash"},
        {"type": "error", "severity": "error", "message": said},
        {"type": "result", "status": "error", "stats": {}},
    ]
    state, _ = judge(gemini, lines, tail="[WARN] Skipping unreadable directory: /proc\n")
    assert state.error is not None
    assert state.error.message == said
    assert state.error.kind is ErrorKind.content_filter
