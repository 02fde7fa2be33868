"""hermes (hermes-agent 0.19.0, installed by .ci/steps/22-hermes) against FakeModelServer on
127.0.0.1, configured as a user would: `[llm.hermes] base_url` + `api_key`. Skipped when the
CLI is absent. Runs on asyncio only: a hermes start costs seconds, and the adapter code these
tests reach is the generic one that the fake-CLI tests run on trio too."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from _fake_clis_util import live_processes_with
from agentport.core import CompletionConfig, ErrorKind, EventType, Message
from agentport.factory import create_agent_runtime, create_llm_adapter
from agentport.testing import FakeModelServer, Hang, HttpFault

pytestmark = [pytest.mark.anyio, pytest.mark.contract, pytest.mark.slow]


def _hermes() -> str | None:
    # Read at import: the autouse config fixture clears AGENTPORT_* variables.
    prefix = os.environ.get("AGENTPORT_HERMES_PREFIX") or str(
        Path.home() / ".cache" / "agentport-ci" / "hermes"
    )
    bin_file = Path(prefix) / "bin-dir.txt"
    if bin_file.exists():
        exe = Path(bin_file.read_text().strip()) / "hermes"
        if exe.exists():
            return str(exe)
    return shutil.which("hermes")


HERMES = _hermes()
if HERMES is None:
    pytest.skip("hermes not installed (.ci/steps/22-hermes)", allow_module_level=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Any:
    with FakeModelServer(default="hello from the fake model") as srv:
        yield srv


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeModelServer) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    return {
        "executable": HERMES,
        "base_url": server.openai_base_url,
        "api_key": "test-key",
        "home": str(tmp_path / "hermes-home"),
        "env": {"HERMES_CONTRACT_MARKER": str(tmp_path)},
        "grace_s": 2.0,
    }


def _chat(server: FakeModelServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


async def test_hermes_answers_through_the_fake_server(
    options: dict[str, Any], server: FakeModelServer, tmp_path: Path
) -> None:
    adapter = create_llm_adapter("hermes", retry=False, hermes=options)
    response = (await adapter.complete([Message.user("say hello")])).unwrap()
    assert response.content == "hello from the fake model"
    assert response.usage.input_tokens > 0
    assert response.raw.session_id
    assert _chat(server)[-1].model == "default"
    config = json.loads((tmp_path / "hermes-home" / "config.yaml").read_text())
    assert config["model"]["provider"] == "custom"
    assert live_processes_with(str(tmp_path)) == []


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (HttpFault.server_error(), ErrorKind.server_error),
        (HttpFault.unauthorized(), ErrorKind.auth_required),
    ],
)
async def test_hermes_failure_with_exit_0_is_read_from_the_usage_report(
    options: dict[str, Any], server: FakeModelServer, fault: HttpFault, kind: ErrorKind
) -> None:
    server.reply(fault, api="chat", times=None)
    adapter = create_llm_adapter("hermes", retry=False, hermes=options)
    config = CompletionConfig(total_timeout_s=120)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is kind, error
    assert error.exit_code == 0  # 0.19.0 exits 0 on failure: the report decided


async def test_hermes_silent_model_times_out_without_orphans(
    options: dict[str, Any], server: FakeModelServer, tmp_path: Path
) -> None:
    server.reply(Hang(), api="chat", times=None)
    adapter = create_llm_adapter("hermes", retry=False, hermes=options)
    config = CompletionConfig(total_timeout_s=25)
    error = (await adapter.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.timeout
    assert live_processes_with(str(tmp_path)) == []


async def test_hermes_runtime_turns_are_separate_sessions(
    options: dict[str, Any], server: FakeModelServer
) -> None:
    # -z ignores --resume on 0.19.0, so the catalog says session_resume IGNORED: this test
    # fails (and the catalog must change) the day a later pin carries the history.
    server.script("first answer", "second answer")
    async with create_agent_runtime("hermes", hermes=options) as runtime:
        one = [e async for e in runtime.send("remember the word pineapple")]
        session = runtime.handle.session_id
        two = [e async for e in runtime.send("which word?")]
    assert one[-1].type is EventType.final
    assert one[-1].content == "first answer"
    assert two[-1].content == "second answer"
    assert session
    assert "pineapple" not in json.dumps(_chat(server)[-1].body)
