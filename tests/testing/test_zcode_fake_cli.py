"""zcode against a fake CLI that replays the shapes ouroboros's driver reads (one buffered JSON
document; reference/ouroboros.md §4.13): argv, policy refusal, the document in either layout,
the error table, a hang, resume and the runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel
from returns.result import Failure

from _fake_clis_util import claimed, install_fake, live_processes_with, recorded
from agentport.catalog import get_capability
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    EventType,
    Message,
    Param,
    ParamSupport,
    Sandbox,
    ToolPolicy,
)
from agentport.factory import create_agent_runtime, create_llm_adapter

pytestmark = pytest.mark.anyio
ANSWER = '{"status": "ok", "answer": 42}'
OWN_TOOLS = ToolPolicy.cli_defaults()


class Answer(BaseModel):
    status: str
    answer: int


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_zcode_catalog_entry_is_marked_unverified() -> None:
    cap = get_capability("zcode_cli")
    assert cap.name == "zcode"
    assert cap.verified_against is None
    assert cap.auto_priority is None
    assert claimed("zcode", Param.model) is ParamSupport.IGNORED


@pytest.mark.parametrize(
    "tools",
    [
        ToolPolicy(),
        ToolPolicy(allowed_tools=("read",)),
        ToolPolicy(sandbox=Sandbox.read_only),
        ToolPolicy(sandbox=Sandbox.workspace_write),
    ],
)
async def test_least_privilege_policies_are_refused_before_the_cli_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: ToolPolicy
) -> None:
    record = install_fake(tmp_path, monkeypatch, "zcode")
    config = CompletionConfig(tools=tools)
    result = await create_llm_adapter("zcode", retry=False).complete([Message.user("x")], config)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.unsupported
    assert not record.exists()


@pytest.mark.parametrize(
    ("tools", "mode"),
    [(OWN_TOOLS, "edit"), (ToolPolicy(sandbox=Sandbox.full), "yolo")],
)
@pytest.mark.parametrize("scenario", ["ok", "compact"])
async def test_the_document_is_the_answer_in_either_layout(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tools: ToolPolicy,
    mode: str,
    scenario: str,
) -> None:
    record = install_fake(tmp_path, monkeypatch, "zcode")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    config = CompletionConfig(tools=tools, model="glm-4.6", cwd=tmp_path)
    adapter = create_llm_adapter("zcode", retry=False)
    response = (await adapter.complete([Message.user("-dash first")], config)).unwrap()
    assert response.content == ANSWER
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 30)
    assert response.usage.cached_tokens == 4
    assert response.raw.session_id == "zc-session-1"
    assert any("model" in w for w in response.warnings)  # IGNORED, said so
    argv = recorded(record)["argv"]
    assert _flag(argv, "--mode") == mode
    assert _flag(argv, "--cwd") == str(tmp_path)
    assert _flag(argv, "--prompt") == " -dash first"  # never taken for a flag
    assert "glm-4.6" not in argv
    assert response.model is None  # not claimed: zcode picks its own model


async def test_script_prefix_runs_the_app_binary_as_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "zcode")
    adapter = create_llm_adapter("zcode", retry=False, zcode={"script": "/opt/zcode/zcode.cjs"})
    config = CompletionConfig(tools=OWN_TOOLS, session_id="zc-7")
    response = (await adapter.complete([Message.user("hi")], config)).unwrap()
    seen = recorded(record)
    assert seen["argv"][0] == "/opt/zcode/zcode.cjs"
    assert seen["env"]["ELECTRON_RUN_AS_NODE"] == "1"
    assert _flag(seen["argv"], "--resume") == "zc-7"
    assert response.raw.session_id == "zc-7"


async def test_schema_is_translated_and_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "zcode")
    config = CompletionConfig(tools=OWN_TOOLS, output_schema=Answer)
    response = (await create_llm_adapter("zcode", retry=False).complete(
        [Message.system("be terse"), Message.user("x")], config)).unwrap()  # fmt: skip
    assert response.parsed == Answer(status="ok", answer=42)
    prompt = _flag(recorded(record)["argv"], "--prompt")
    assert prompt.startswith("System instructions:\nbe terse")
    assert "answer" in prompt


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("error", ErrorKind.overloaded),
        ("quota", ErrorKind.quota_exhausted),
        ("crash", ErrorKind.process_failed),
        ("banner", ErrorKind.bad_output),
        ("list", ErrorKind.bad_output),
    ],
)
async def test_error_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: ErrorKind
) -> None:
    install_fake(tmp_path, monkeypatch, "zcode")
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    config = CompletionConfig(tools=OWN_TOOLS)
    result = await create_llm_adapter("zcode", retry=False).complete([Message.user("x")], config)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, error
    if scenario == "quota":
        assert error.retry_after is not None
        assert 2.9 * 3600 < error.retry_after <= 3 * 3600


async def test_a_hang_times_out_and_kills_the_pass_through_and_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = install_fake(tmp_path, monkeypatch, "zcode")
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    adapter = create_llm_adapter("zcode", retry=False, zcode={"grace_s": 0.5})
    config = CompletionConfig(tools=OWN_TOOLS, total_timeout_s=3, startup_timeout_s=60)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert live_processes_with(str(record)) == []


async def test_runtime_ends_with_the_document_as_final(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "zcode")
    async with create_agent_runtime("zcode") as runtime:
        events = [e async for e in runtime.send("hi", CompletionConfig(tools=OWN_TOOLS))]
        assert runtime.handle.session_id == "zc-session-1"
    assert events[-1].type is EventType.final
    assert events[-1].content == ANSWER
