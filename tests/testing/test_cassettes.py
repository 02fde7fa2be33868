"""Cassettes (agentport.testing): the project's own CLI transcripts replayed as fake CLI
executables through the real adapters; a real codex recorded through the adapter against
`FakeModelServer` and replayed without it; the argv-shape check; save/load and bad input.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.result import Failure, Success

from _runner_util import FIXTURES
from agentport import create_llm_adapter
from agentport.core import ErrorKind, Message
from agentport.testing import Cassette, CassetteRecorder, FakeModelServer, cassette_calls

pytestmark = pytest.mark.anyio
ANSWER = '{"status": "ok", "answer": 42}'
OK_CASES = {
    "claude": "ok-stream-json",
    "codex": "ok-json",
    "copilot": "ok-json",
    "gemini": "ok-stream-json",
    "opencode": "tool-bash",
    "pi": "ok-json",
    "qwen": "ok-stream-json",
}


# codex reads its model catalog before a least-privilege run (`codex debug models`): an
# auxiliary run, replayed beside the main one
CODEX_MODELS = Cassette(
    cli="codex",
    argv=("codex", "debug", "models"),
    stdout=b'{"models": [{"slug": "fake-model", "tool_mode": "code_mode_only"}]}\n',
)


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


@pytest.mark.parametrize("cli", sorted(OK_CASES))
async def test_a_transcript_replays_through_the_real_adapter(cli: str, tmp_path: Path) -> None:
    cassette = Cassette.load(FIXTURES / cli, OK_CASES[cli])
    exe = cassette.install(tmp_path / "bin", cli, others=(CODEX_MODELS,))
    llm = create_llm_adapter(cli, **{cli: {"executable": str(exe)}})
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    assert result.unwrap().content == ANSWER
    call = cassette_calls(exe)[-1]
    assert call["argv"][0] == str(exe)
    assert cassette.flags  # the recorded command line has a shape to compare


async def test_strict_replay_refuses_a_command_line_of_another_shape(tmp_path: Path) -> None:
    recorded = Cassette.load(FIXTURES / "codex", "ok-json")
    shaped = Cassette(
        cli="codex",
        argv=("codex", *recorded.argv[1:]),
        stdout=recorded.stdout,
        exit_code=0,
    )
    exe = shaped.install(tmp_path / "bin", "codex", strict=True, others=(CODEX_MODELS,))
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(exe)})
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Failure)  # agentport's codex argv is not the lab's
    assert "cassette: argv flags" in result.failure().stderr_tail
    built = cassette_calls(exe)[-1]["argv"]
    again = Cassette(cli="codex", argv=tuple(built), stdout=recorded.stdout)
    same = again.install(tmp_path / "bin2", "codex", strict=True, others=(CODEX_MODELS,))
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(same)})
    assert (await llm.complete([Message.user("Say hi")])).unwrap().content == ANSWER


def test_save_then_load_is_the_same_cassette(tmp_path: Path) -> None:
    cassette = Cassette(
        cli="pi",
        argv=("pi", "--mode", "json", "-p", "hi"),
        stdout=b'{"type":"agent_end"}\n\xff',
        stderr=b"warn\n",
        exit_code=3,
        stdin="hello",
        requests=({"seq": 1, "path": "/v1/chat/completions"},),
        version="0.73.1",
    )
    cassette.save(tmp_path, "case")
    assert Cassette.load(tmp_path, "case") == cassette
    assert cassette.flags == ("--mode", "-p")


def test_a_malformed_cassette_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "bad.meta.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.meta\.json: not JSON"):
        Cassette.load(tmp_path, "bad")
    (tmp_path / "noargv.meta.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"noargv\.meta\.json: needs an object"):
        Cassette.load(tmp_path, "noargv")
    with pytest.raises(FileNotFoundError, match="missing"):
        Cassette.load(tmp_path, "missing")


async def test_a_replayed_failure_is_the_same_failure(tmp_path: Path) -> None:
    cassette = Cassette.load(FIXTURES / "codex", "http500-noretry")
    exe = cassette.install(tmp_path / "bin", "codex", others=(CODEX_MODELS,))
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(exe)})
    error = (await llm.complete([Message.user("Say hi")])).failure()
    assert error.kind is ErrorKind.server_error
    assert error.exit_code == cassette.exit_code


# ------------------------------------------------------------------ a real CLI, recorded


def _codex() -> Path | None:
    prefix = os.environ.get("AGENTPORT_CLI_PREFIX") or str(
        Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    marker = Path(prefix) / "bin-dir.txt"
    folder = (
        Path(os.environ.get("AGENTPORT_CLI_BIN_DIR") or "")
        if not marker.is_file()
        else (Path(marker.read_text().strip()))
    )
    exe = folder / "codex"
    return exe if exe.is_file() else None


CODEX = _codex()  # read at import: the autouse fixtures clear AGENTPORT_*


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(default="recorded hello") as srv:
        yield srv


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # a real CLI: one event loop is enough


@pytest.mark.skipif(CODEX is None, reason="codex not installed: run .ci/steps/20-agent-clis")
async def test_a_real_codex_run_recorded_then_replayed_offline(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CODEX is not None
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    recorder = CassetteRecorder(tmp_path / "rec", CODEX, cli="codex")
    options = {
        "executable": str(recorder.executable),
        "base_url": server.openai_base_url,
        "api_key": "test-key",
        "request_max_retries": 0,
        "stream_max_retries": 0,
    }
    live = await create_llm_adapter("codex", retry=False, codex=options).complete(
        [Message.user("Say hi")]
    )
    assert live.unwrap().content == "recorded hello"
    *aux, main = recorder.runs(server)
    assert [run.command for run in aux] == [("debug", "models")]  # the catalog read first
    # the cassette names the real binary that answered: file, bytes and version
    assert main.binary is not None
    real = Path(CODEX).resolve()  # noqa: ASYNC240 - a test's own read
    assert main.binary["real_path"] == str(real)
    assert main.binary["sha256"] == hashlib.sha256(real.read_bytes()).hexdigest()
    assert main.version is not None
    assert main.version == main.binary["version"]
    main.save(tmp_path / "fixtures", "say-hi")
    loaded = Cassette.load(tmp_path / "fixtures", "say-hi")
    assert loaded == main
    assert any("Say hi" in json.dumps(r["body"]) for r in loaded.requests)
    assert "--json" in loaded.flags

    server.stop()  # replay needs neither the server nor the CLI
    exe = loaded.install(tmp_path / "bin", "codex", strict=True, others=aux)
    replay_options = {**options, "executable": str(exe)}
    replayed = await create_llm_adapter("codex", retry=False, codex=replay_options).complete(
        [Message.user("Say hi")]
    )
    assert replayed.unwrap().content == "recorded hello"
