"""Warm processes against the REAL codex (`codex app-server`, as .ci installs it), with a custom
provider the way codex's docs tell users (`[llm.codex] base_url`, `api_key`), answering from
FakeModelServer on 127.0.0.1.

Checked: two warm calls run on one process, each on a thread of its own (the second model
request carries nothing of the first); a warm call offers the model the same tools and
instructions as a cold `codex exec` call of the same configuration; a schema is sent as the
same strict `json_schema`; an error is the same `ErrorKind` warm and cold, and closes the
process; a warm call's session id resumes with a cold call (`codex exec resume`); nothing is
left after `aclose()`. Skipped when the binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from _more_clis_util import MARKER_ENV, cli_executable, live_processes, new_marker
from agentport.core import CompletionConfig, Message
from agentport.factory import create_llm_adapter
from agentport.testing import FakeModelServer, HttpFault

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    exe = cli_executable("codex")
    if exe is None:
        pytest.skip("codex not installed (.ci/steps)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return {"executable": str(exe), "api_key": "test-key", "env": {MARKER_ENV: new_marker()}}


def _pid(response: Any) -> int:
    return int(response.raw.extra["pid"])


def _offer(body: dict[str, Any]) -> tuple[Any, ...]:
    """What a model request offers besides the conversation: tools, instructions, format."""
    tools = sorted(json.dumps(t, sort_keys=True) for t in body.get("tools") or ())
    return tuple(tools), body.get("instructions"), json.dumps(body.get("text"), sort_keys=True)


async def test_codex_warm_calls_share_one_process_and_no_conversation(
    options: dict[str, Any],
) -> None:
    with FakeModelServer() as server:
        server.script("first answer", "second answer", "cold answer")
        options["base_url"] = server.openai_base_url
        adapter = create_llm_adapter("codex", retry=False, warm=1, codex=options)
        one = (await adapter.complete([Message.user("remember pineapple")])).unwrap()
        two = (await adapter.complete([Message.user("which word?")])).unwrap()
        assert live_processes(options["env"][MARKER_ENV]) != []  # kept warm
        await adapter.aclose()
        cold = create_llm_adapter("codex", retry=False, codex=options)
        three = (await cold.complete([Message.user("which word?")])).unwrap()
        bodies = [r.body for r in server.model_requests]
    assert (one.content, two.content, three.content) == (
        "first answer",
        "second answer",
        "cold answer",
    )
    assert _pid(one) == _pid(two)
    assert one.raw.session_id
    assert two.raw.session_id
    assert one.raw.session_id != two.raw.session_id
    assert len(bodies) == 3
    assert "pineapple" not in json.dumps(bodies[1]["input"])
    assert "which word" in json.dumps(bodies[1]["input"])
    assert _offer(bodies[1]) == _offer(bodies[2])  # warm offers what cold `exec` offers
    assert two.usage.input_tokens > 0
    assert live_processes(options["env"][MARKER_ENV]) == []


async def test_codex_warm_schema_is_the_strict_format_of_exec(options: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    config = CompletionConfig(output_schema=schema)
    with FakeModelServer() as server:
        server.script('{"a": 1}', '{"a": 2}')
        options["base_url"] = server.openai_base_url
        warm = create_llm_adapter("codex", retry=False, warm=1, codex=options)
        one = (await warm.complete([Message.user("a?")], config)).unwrap()
        await warm.aclose()
        cold = create_llm_adapter("codex", retry=False, codex=options)
        two = (await cold.complete([Message.user("a?")], config)).unwrap()
        formats = [r.body.get("text", {}).get("format") for r in server.model_requests]
    assert (json.loads(one.content), json.loads(two.content)) == ({"a": 1}, {"a": 2})
    assert formats[0] == formats[1]
    assert formats[0]["type"] == "json_schema"
    assert formats[0]["strict"] is True


@pytest.mark.parametrize("fault", [HttpFault(429, "slow down"), HttpFault(500, "boom")])
async def test_codex_warm_error_is_the_cold_error_and_closes_its_process(
    options: dict[str, Any], fault: HttpFault
) -> None:
    options["request_max_retries"] = 0
    options["stream_max_retries"] = 0
    with FakeModelServer() as server:
        server.script("fine", fault, "fine again", fault)
        options["base_url"] = server.openai_base_url
        adapter = create_llm_adapter("codex", retry=False, warm=1, codex=options)
        first = (await adapter.complete([Message.user("one")])).unwrap()
        failed = await adapter.complete([Message.user("two")])
        third = (await adapter.complete([Message.user("three")])).unwrap()
        await adapter.aclose()
        cold = await create_llm_adapter("codex", retry=False, codex=options).complete(
            [Message.user("four")]
        )
    assert isinstance(failed, Failure)
    assert isinstance(cold, Failure)
    assert failed.failure().kind is cold.failure().kind
    assert failed.failure().retryable == cold.failure().retryable
    assert third.content == "fine again"
    assert _pid(third) != _pid(first)
    assert live_processes(options["env"][MARKER_ENV]) == []


async def test_codex_warm_session_resumes_cold(options: dict[str, Any]) -> None:
    with FakeModelServer() as server:
        server.script("noted", "it was pineapple")
        options["base_url"] = server.openai_base_url
        warm = create_llm_adapter("codex", retry=False, warm=1, codex=options)
        one = (await warm.complete([Message.user("remember pineapple")])).unwrap()
        await warm.aclose()
        assert one.raw.session_id
        cold = create_llm_adapter("codex", retry=False, codex=options)
        two = (
            await cold.complete(
                [Message.user("which word?")], CompletionConfig(session_id=one.raw.session_id)
            )
        ).unwrap()
        bodies = [r.body for r in server.model_requests]
    assert two.content == "it was pineapple"
    assert "pineapple" in json.dumps(bodies[1]["input"])


async def test_codex_warm_from_the_projects_agentport_toml(
    options: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as a user turns it on: `warm` in agentport.toml, the adapter with its default policies
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(project))
    monkeypatch.setenv(MARKER_ENV, options["env"][MARKER_ENV])
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", MARKER_ENV)
    with FakeModelServer() as server:
        server.script("one", "two")
        (project / "agentport.toml").write_text(
            '[llm]\nbackend = "codex"\nwarm = 1\n\n[llm.codex]\n'
            f'executable = "{options["executable"]}"\nbase_url = "{server.openai_base_url}"\n'
            'api_key = "test-key"\n'
        )
        adapter = create_llm_adapter(cwd=project)
        one = (await adapter.complete([Message.user("first")])).unwrap()
        two = (await adapter.complete([Message.user("second")])).unwrap()
        assert live_processes(options["env"][MARKER_ENV]) != []
        await adapter.aclose()  # type: ignore[attr-defined]
    assert (one.content, two.content) == ("one", "two")
    assert _pid(one) == _pid(two)
    assert live_processes(options["env"][MARKER_ENV]) == []


async def test_codex_warm_usage_of_a_tool_run_counts_both_requests(
    options: dict[str, Any],
) -> None:
    """app-server's `thread/tokenUsage/updated` comes after each model request; its `last`
    is that request's alone: the call spent the thread's `total`, 3000 / 30 here."""
    from agentport.core import ToolPolicy
    from agentport.testing import TextReply, TokenUsage, ToolCallReply

    with FakeModelServer() as server:
        then = TextReply("tool done", usage=TokenUsage(input_tokens=2000, output_tokens=20))
        first = TokenUsage(input_tokens=1000, output_tokens=10)
        args = {"cmd": "echo hello-from-tool"}
        server.reply(ToolCallReply("exec_command", args, then=then, usage=first))
        options["base_url"] = server.openai_base_url
        adapter = create_llm_adapter("codex", retry=False, warm=1, codex=options)
        config = CompletionConfig(tools=ToolPolicy(), idle_timeout_s=30, total_timeout_s=90)
        try:
            result = await adapter.complete([Message.user("Run the greeting")], config)
        finally:
            await adapter.aclose()
        served = len(server.model_requests)
    response = result.unwrap()
    assert response.content == "tool done"
    assert served == 2
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3000, 30)
