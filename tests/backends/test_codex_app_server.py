"""codex's warm invocation (`codex app-server`) and how its JSON-RPC lines are read: the same
events as the `codex exec --json` lines they stand for (shapes of codex-cli 0.171.0, checked
on the real binary in tests/contract/test_codex_warm_contract.py)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from _helpers import cli_call
from agentport.backends import CliCall
from agentport.backends.codex import SPEC, app_decode, decode
from agentport.core import CompletionConfig, EndSignal, EventType, ImagePart, Sandbox, ToolPolicy

WARM = SPEC.warm
assert WARM is not None


def _call(tmp_path: Path, **kw: Any) -> CliCall:
    config = CompletionConfig(model="m", reasoning_effort="high")
    base = {"executable": "/bin/codex", "prompt": "hello --sandbox", "config": config}
    return cli_call(tmp_path, **(base | {"cwd": tmp_path / "work"} | kw))


def _configured(argv: Sequence[str]) -> set[str]:
    """The `-c KEY=VALUE` settings of an argv."""
    return {value for flag, value in itertools.pairwise(argv) if flag == "-c"}


def test_the_warm_invocation_is_app_server_with_config_keys_and_the_turn_on_stdin(
    tmp_path: Path,
) -> None:
    schema = {"type": "object"}
    call = _call(
        tmp_path, schema=schema, images=(ImagePart(data=b"\x89PNG\r\n\x1a\n" + b"\0" * 16),)
    )
    warm = WARM.build(call)
    argv = list(warm.argv)
    assert argv[:2] == ["/bin/codex", "app-server"]
    assert not any(a.startswith(("--sandbox", "--model", "--cd", "--output-schema")) for a in argv)
    assert "exec" not in argv
    assert "hello" not in " ".join(argv)  # the prompt is never in argv
    configured = _configured(argv)
    assert 'sandbox_mode="read-only"' in configured
    assert 'approval_policy="never"' in configured
    assert 'model="m"' in configured
    assert 'model_reasoning_effort="high"' in configured
    opening = json.loads(warm.stdin or b"")
    assert opening["method"] == "thread/start"
    assert opening["params"] == {"cwd": str(tmp_path / "work")}
    assert warm.replies is not None
    reply = warm.replies({"id": opening["id"], "result": {"thread": {"id": "T"}}})
    turn = json.loads(reply or b"")
    assert turn["method"] == "turn/start"
    assert turn["params"]["threadId"] == "T"
    assert turn["params"]["input"][0] == {"type": "text", "text": "hello --sandbox"}
    assert turn["params"]["input"][1]["type"] == "localImage"
    assert turn["params"]["outputSchema"] == schema
    # a request of codex's is answered with an error; other lines get no reply
    refused = json.loads(warm.replies({"id": 7, "method": "x/requestApproval"}) or b"")
    assert refused["id"] == 7
    assert "error" in refused
    assert warm.replies({"method": "turn/started", "params": {}}) is None


def test_warm_fits_only_extra_args_app_server_understands(tmp_path: Path) -> None:
    assert WARM.fits(_call(tmp_path))
    assert WARM.fits(_call(tmp_path, options={"extra_args": ["-c", "a=1", "--config", "b=2"]}))
    assert not WARM.fits(_call(tmp_path, options={"extra_args": ["--oss"]}))
    assert not WARM.fits(_call(tmp_path, options={"extra_args": ["-c", "a=1", "--full-auto"]}))


def test_sandbox_full_and_tools_map_to_the_same_config_as_exec(tmp_path: Path) -> None:
    config = CompletionConfig(tools=ToolPolicy(sandbox=Sandbox.full))
    warm = WARM.build(_call(tmp_path, config=config))
    cold = SPEC.build(_call(tmp_path, config=config))
    assert 'sandbox_mode="danger-full-access"' in warm.argv
    assert "--sandbox=danger-full-access" in cold.argv
    assert _configured(cold.argv) <= _configured(warm.argv)


def _events(obj: dict[str, Any]) -> tuple[Any, ...]:
    event = app_decode(obj)
    if event is None:
        return ()
    meta = {k: v for k, v in event.metadata.items() if k != "usage"}
    return (event.type, event.content, event.is_error, json.dumps(meta, sort_keys=True), event.end)


def _same(app: dict[str, Any], exec_line: dict[str, Any]) -> None:
    cold = decode(exec_line)
    assert cold is not None
    meta = {k: v for k, v in cold.metadata.items() if k != "usage"}
    assert _events(app) == (
        cold.type,
        cold.content,
        cold.is_error,
        json.dumps(meta, sort_keys=True),
        cold.end,
    )


@given(st.text(max_size=40))
def test_an_answer_reads_as_exec_reads_it(text: str) -> None:
    item = {"type": "agentMessage", "id": "m", "text": text}
    _same(
        {"method": "item/completed", "params": {"item": item}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": text}},
    )


@given(
    st.sampled_from(["completed", "failed", "declined", "inProgress"]),
    st.one_of(st.none(), st.integers(-2, 2)),
    st.booleans(),
)
def test_a_command_reads_as_exec_reads_it(status: str, exit_code: int | None, done: bool) -> None:
    item = {"type": "commandExecution", "id": "c", "command": "ls", "status": status,
            "aggregatedOutput": "out", "exitCode": exit_code}  # fmt: skip
    cold = {"type": "command_execution", "id": "c", "command": "ls", "status": status,
            "aggregated_output": "out", "exit_code": exit_code}  # fmt: skip
    method, kind = (
        ("item/completed", "item.completed") if done else ("item/started", "item.started")
    )
    _same({"method": method, "params": {"item": item}}, {"type": kind, "item": cold})


@given(
    st.sampled_from(
        [("openPage", "open_page"), ("findInPage", "find_in_page"), ("search", "search")]
    )
)
def test_a_web_search_reads_as_exec_reads_it(action: tuple[str, str]) -> None:
    app_item = {"type": "webSearch", "id": "w", "query": "q",
                "action": {"type": action[0], "url": "https://x.test/", "query": "q"}}  # fmt: skip
    exec_item = {"type": "web_search", "id": "w", "query": "q",
                 "action": {"type": action[1], "url": "https://x.test/", "query": "q"}}  # fmt: skip
    _same(
        {"method": "item/completed", "params": {"item": app_item}},
        {"type": "item.completed", "item": exec_item},
    )


def test_the_turn_end_errors_usage_and_session() -> None:
    started = app_decode({"method": "thread/started", "params": {"thread": {"id": "T"}}})
    assert started is not None
    assert started.metadata["session_id"] == "T"
    last = {"inputTokens": 7, "outputTokens": 2, "cachedInputTokens": 1}
    usage = app_decode(
        {"method": "thread/tokenUsage/updated", "params": {"tokenUsage": {"last": last}}}
    )
    assert usage is not None
    assert (usage.metadata["usage"].input_tokens, usage.metadata["usage"].cached_tokens) == (7, 1)
    assert not usage.end.terminal
    done = app_decode({"method": "turn/completed", "params": {"turn": {"status": "completed"}}})
    assert done is not None
    assert done.metadata == {}
    assert done.end == EndSignal(terminal=True, finish_reason="stop")
    error = {"message": "exceeded retry limit, last status: 429 Too Many Requests"}
    _same(
        {"method": "turn/completed", "params": {"turn": {"status": "failed", "error": error}}},
        {"type": "turn.failed", "error": error},
    )
    _same(
        {"method": "error", "params": {"error": error, "willRetry": False}},
        {"type": "error", "message": error["message"]},
    )
    retrying = app_decode({"method": "error", "params": {"error": error, "willRetry": True}})
    assert retrying is not None
    assert retrying.metadata == {}
    assert retrying.end == EndSignal(warning=error["message"])
    refused = app_decode({"id": "agentport-thread", "error": {"code": -1, "message": "bad cwd"}})
    assert refused is not None
    assert refused.type is EventType.error
    assert refused.end.terminal is True
    assert refused.content == "bad cwd"
    assert app_decode({"id": "agentport-turn", "result": {}}) is None
    assert app_decode({"method": "thread/status/changed", "params": {}}) is None
