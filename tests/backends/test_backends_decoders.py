"""Decoders and error tables against transcripts recorded from the real CLIs
(tests/fixtures/cli, copied from shared/fixtures/cli-transcripts), and the argv builders
against what the catalog claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _helpers import cli_call
from _runner_util import FIXTURES
from agentport.backends import CliCall, Invocation, RunOutcome, claude, codex, gemini
from agentport.catalog import get_capability
from agentport.core import (
    AgentEvent,
    CompletionConfig,
    ErrorKind,
    EventType,
    Param,
    ParamSupport,
    Sandbox,
    ToolPolicy,
)
from agentport.transport import LineFramer, parse_line

MODULES = {"codex": codex, "claude": claude, "gemini": gemini}


def replay(cli: str, case: str) -> tuple[list[AgentEvent], RunOutcome]:
    base = FIXTURES / cli / case
    meta = json.loads(Path(f"{base}.meta.json").read_text())
    framer = LineFramer()
    events = []
    data = Path(f"{base}.stdout").read_bytes()
    for line in framer.feed(data) + framer.close():
        frame = parse_line(line)
        if frame is not None and frame.is_json and isinstance(frame.value, dict):
            event = MODULES[cli].decode(frame.value)
            if event is not None:
                events.append(event)
    stderr = Path(f"{base}.stderr")
    tail = stderr.read_text() if stderr.exists() else ""
    return events, RunOutcome(meta["exit_code"], tail, events)


def test_codex_ok_transcript_decodes_to_init_warning_text_usage() -> None:
    events, outcome = replay("codex", "ok-json")
    assert [e.type for e in events] == [
        EventType.init,
        EventType.error,
        EventType.text,
        EventType.usage,
    ]
    assert not events[1].is_error  # `item.type == "error"` is only a warning
    assert events[-1].end.terminal
    assert events[-1].metadata["usage"].output_tokens == 7
    assert codex.classify(outcome) is None


def test_codex_tool_turn_pairs_call_and_result() -> None:
    events, _ = replay("codex", "tool-shell")
    call = next(e for e in events if e.type is EventType.tool_call)
    result = next(e for e in events if e.type is EventType.tool_result)
    assert "echo hello-from-tool" in call.content
    assert result.content == "hello-from-tool\n"
    assert not result.is_error


def test_codex_reconnect_errors_are_warnings_and_turn_failed_is_the_error() -> None:
    events, outcome = replay("codex", "http429")
    # the final plain `error` line and turn.failed; the "Reconnecting n/m" lines are notices
    assert [e.is_error for e in events if e.type is EventType.error][-2:] == [True, True]
    assert not any(e.is_error for e in events if e.content.startswith("Reconnecting"))
    error = codex.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.rate_limited


def test_codex_untrusted_dir_without_events_is_process_failed_with_stderr() -> None:
    _, outcome = replay("codex", "not-git-repo")
    error = codex.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.process_failed
    assert "skip-git-repo-check" in error.message


def test_claude_stream_decodes_tool_round_trip_and_cost() -> None:
    events, outcome = replay("claude", "tool-bash")
    types = [e.type for e in events]
    assert types == [
        EventType.init,
        EventType.tool_call,
        EventType.tool_result,
        EventType.text,
        EventType.usage,
    ]
    assert events[1].metadata["tool"] == "Bash"
    usage = events[-1].metadata["usage"]
    assert usage.cost_usd is not None
    assert usage.cost_usd > 0
    assert events[-1].end.final_text == '{"status": "ok", "answer": 42}'
    assert claude.classify(outcome) is None


def test_claude_is_error_with_subtype_success_is_still_an_error() -> None:
    events, outcome = replay("claude", "http500")
    raw = events[-1].raw
    assert raw["subtype"] == "success"
    assert raw["is_error"] is True
    error = claude.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.server_error
    assert error.status == 500
    assert events[-1].end.final_text is None  # an error text is never the answer


def test_claude_max_turns_is_a_non_retryable_failure() -> None:
    _, outcome = replay("claude", "max-turns")
    error = claude.classify(outcome)
    assert error is not None
    assert error.kind is ErrorKind.process_failed
    assert not error.retryable


def test_claude_schema_run_carries_structured_output() -> None:
    events, _ = replay("claude", "json-schema-stream")
    assert events[-1].end.structured == {"status": "ok", "answer": 42}
    no_tool, _ = replay("claude", "json-schema-no-tool")
    assert no_tool[-1].end.structured is None


@pytest.mark.parametrize(
    ("case", "kind"),
    [("bypass-as-root", ErrorKind.config), ("variadic-swallows-prompt", ErrorKind.invalid_request)],
)
def test_claude_exit_without_result_is_classified_from_stderr(case: str, kind: ErrorKind) -> None:
    _, outcome = replay("claude", case)
    error = claude.classify(outcome)
    assert error is not None
    assert error.kind is kind


def test_gemini_deltas_join_into_the_answer_after_the_tool() -> None:
    events, outcome = replay("gemini", "tool-shell")
    assert gemini.SPEC.final_text(events) == '{"status": "ok", "answer": 42}'
    assert [e.type for e in events][:3] == [
        EventType.init,
        EventType.tool_call,
        EventType.tool_result,
    ]
    assert events[-1].metadata["usage"].input_tokens == 25409
    assert gemini.classify(outcome) is None


@pytest.mark.parametrize(
    ("case", "kind", "status"),
    [
        ("http500-stream", ErrorKind.server_error, 500),
        ("http401", ErrorKind.auth_required, 401),
        ("http429", ErrorKind.rate_limited, 429),
        ("midstream", ErrorKind.network, None),
        ("untrusted-dir", ErrorKind.config, None),
    ],
)
def test_gemini_exit_code_is_the_http_status_mod_256(
    case: str, kind: ErrorKind, status: int | None
) -> None:
    _, outcome = replay("gemini", case)
    error = gemini.classify(outcome)
    assert error is not None
    assert error.kind is kind
    assert error.status == status


def test_gemini_partial_delta_before_a_cut_is_not_an_answer() -> None:
    events, outcome = replay("gemini", "midstream")
    assert any(e.type is EventType.text for e in events)
    assert gemini.classify(outcome) is not None


# --- the argv builders do what the catalog claims -------------------------------------------

_SETS = {
    Param.model: CompletionConfig(model="m-1"),
    Param.max_turns: CompletionConfig(max_turns=3),
    Param.sandbox: CompletionConfig(tools=ToolPolicy(sandbox=Sandbox.workspace_write)),
    # () is the one list every CLI backend enforces (codex has no allow-list)
    Param.tool_restriction: CompletionConfig(tools=ToolPolicy(allowed_tools=())),
    Param.session_resume: CompletionConfig(session_id="sess-1"),
    Param.temperature: CompletionConfig(temperature=0.3),
    Param.max_tokens: CompletionConfig(max_tokens=10),
}


@pytest.mark.parametrize("cli", sorted(MODULES))
@pytest.mark.parametrize("param", sorted(_SETS, key=str))
def test_argv_changes_exactly_when_the_catalog_says_native(
    cli: str, param: Param, tmp_path: Path
) -> None:
    module = MODULES[cli]
    # the base opts in to the CLI's own tools so the safety params count as unset there;
    # a setting may travel in argv or in the environment (gemini's per-run settings file)
    start = CompletionConfig(tools=ToolPolicy.cli_defaults())
    config = _SETS[param]
    if param not in (Param.sandbox, Param.tool_restriction):
        config = config.model_copy(update={"tools": ToolPolicy.cli_defaults()})

    def seen(inv: Invocation) -> tuple[list[str], dict[str, str]]:
        return list(inv.argv), dict(inv.env)

    base = seen(module.build(_call(tmp_path, start)))
    changed = seen(module.build(_call(tmp_path, config)))
    support = get_capability(cli).support(param)
    if support is ParamSupport.IGNORED:
        assert changed == base, f"{cli} claims {param} IGNORED but its argv changed"
    else:
        assert changed != base, f"{cli} claims {param} {support} but its argv did not change"


def _call(tmp: Path, config: CompletionConfig, schema: dict[str, object] | None = None) -> CliCall:
    return cli_call(tmp, config, schema=schema, session_id=config.session_id)


@pytest.mark.parametrize("cli", sorted(MODULES))
def test_native_schema_flag_only_where_the_catalog_says_native(cli: str, tmp_path: Path) -> None:
    module = MODULES[cli]
    schema = {"type": "object", "properties": {}}
    argv = list(module.build(_call(tmp_path, CompletionConfig(), schema)).argv)
    native = get_capability(cli).support(Param.output_schema) is ParamSupport.NATIVE
    assert (module.SPEC.native_schema is not None) == native
    # (the run folder's own name may contain "schema": tmp_path is named after this test)
    assert any("schema" in a.replace(str(tmp_path), "") for a in argv) == native


def test_endpoint_options_become_the_documented_settings(tmp_path: Path) -> None:
    opts = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "request_max_retries": 0}
    call = _call(tmp_path, CompletionConfig())
    inv = codex.build(CliCall(**{**_fields(call), "options": opts}))
    joined = " ".join(inv.argv)
    assert 'base_url = "http://127.0.0.1:9/v1"' in joined
    assert 'wire_api = "responses"' in joined
    assert "request_max_retries = 0" in joined
    assert inv.env["CODEX_AGENTPORT_API_KEY"] == "k"
    c = claude.build(
        CliCall(**{**_fields(call), "options": {"base_url": "http://h:1/", "max_retries": 0}})
    )
    assert c.env == {"ANTHROPIC_BASE_URL": "http://h:1", "CLAUDE_CODE_MAX_RETRIES": "0"}
    g = gemini.build(
        CliCall(**{**_fields(call), "options": {"base_url": "http://h:2", "api_key": "k"}})
    )
    assert g.env == {"GOOGLE_GEMINI_BASE_URL": "http://h:2", "GEMINI_API_KEY": "k"}


def _fields(call: CliCall) -> dict[str, object]:
    return {name: getattr(call, name) for name in CliCall.__slots__}  # type: ignore[attr-defined]


# --- robustness: a CLI upgrade that changes a field's shape must not crash the decoder ------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_TYPES = [
    "thread.started", "turn.completed", "turn.failed", "error", "item.started", "item.completed",
    "system", "assistant", "user", "result", "init", "message", "tool_use", "tool_result",
]  # fmt: skip
_KEYS = [
    "item", "usage", "error", "message", "subtype", "result", "structured_output", "stats",
    "content", "role", "status", "tool_name", "parameters", "output", "errors", "is_error",
    "api_error_status", "total_cost_usd", "text", "type",
]  # fmt: skip


@settings(max_examples=400)
@given(
    st.sampled_from(sorted(MODULES)),
    st.sampled_from(_TYPES),
    st.dictionaries(st.sampled_from(_KEYS), _json, max_size=6),
)
@example("codex", "item.completed", {"item": [1]})
@example("codex", "turn.failed", {"error": "x"})
@example("claude", "assistant", {"message": "x"})
@example("claude", "result", {"usage": {"input_tokens": "abc"}})
@example("gemini", "result", {"error": "x", "status": "error"})
@example("gemini", "tool_result", {"status": "error", "error": [1]})
def test_decoders_never_crash_on_unexpected_shapes(
    cli: str, kind: str, fields: dict[str, object]
) -> None:
    event = MODULES[cli].decode({**fields, "type": kind})
    assert event is None or isinstance(event, AgentEvent)
    if event is not None:
        outcome = RunOutcome(1, "", [event])
        error = MODULES[cli].classify(outcome)
        assert error is None or isinstance(error.kind, ErrorKind)


@given(st.integers(min_value=500, max_value=599))
def test_every_5xx_status_is_a_retryable_server_error(status: int) -> None:
    from agentport.backends._classify import kind_from_status

    kind = kind_from_status(status)
    assert kind is (ErrorKind.overloaded if status == 529 else ErrorKind.server_error)


@pytest.mark.parametrize(
    ("text", "kind"),
    [("The model response was blocked due to safety settings.", ErrorKind.content_filter),
     ("Your request was rejected as a result of our safety system.", ErrorKind.content_filter),
     ('{"code": "content_policy_violation"}', ErrorKind.content_filter),
     ("API Error: 529 Overloaded", ErrorKind.overloaded),
     ("[API Error: 503 The model is overloaded. Please try again later.]", ErrorKind.overloaded),
     ("The model `gpt-9` does not exist or you do not have access to it.",
      ErrorKind.model_not_found),
     ('{"error": {"code": "model_not_found"}}', ErrorKind.model_not_found),
     ("We're currently experiencing high demand, which may cause temporary errors.",
      ErrorKind.server_error)],
)  # fmt: skip
def test_the_new_kinds_are_read_from_every_clis_wording(text: str, kind: ErrorKind) -> None:
    """pydantic-ai's taxonomy has a refusal / content filter, model not found and overloaded;
    every CLI's error table reads its text through `kind_from_text`. codex says "high
    demand" for any HTTP 500 (cli-transcripts/codex/http500*): that stays a server error."""
    from agentport.backends._classify import kind_from_text

    assert kind_from_text(text) is kind
