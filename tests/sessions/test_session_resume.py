"""Honest resume: a call that names a session (`CompletionConfig.session_id`) runs in that
session or fails typed, on every backend of the catalog, never answers from a new one.

Three ways it could go silently wrong, each closed here:
- the backend cannot resume at all (catalog IGNORED): `unsupported` before anything runs,
  whatever `on_ignored` says (a table over every backend);
- the CLI says it has no such session (recorded from the real CLIs:
  tests/fixtures/cli/<cli>/resume-unknown.*): `session_not_found`;
- the CLI answers in a new session (it reports another id): `session_not_found`, the answer
  dropped.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from _runner_util import FIXTURES, fake_executable
from agentport import create_agent_runtime, create_llm_adapter
from agentport.backends import BackendSpec, CliCall
from agentport.backends._acp_rpc import rpc_error
from agentport.backends._resume import UNKNOWN_SESSION, honest_resume, not_loaded
from agentport.catalog import CATALOG
from agentport.core import (
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventType,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    RawInfo,
    ToolPolicy,
    check_params,
)

pytestmark = pytest.mark.anyio

UNKNOWN = "0badc0de-0000-4000-8000-000000000000"
RECORDED = ("claude", "codex", "qwen")  # the CLIs whose refusal was recorded


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _spec(name: str) -> BackendSpec:
    spec = importlib.import_module(CATALOG[name].module).SPEC
    assert isinstance(spec, BackendSpec)
    return spec


# --- every backend: a resume it cannot do fails before anything runs ----------------------


@pytest.mark.parametrize("name", sorted(CATALOG))
@pytest.mark.parametrize("on_ignored", ["warn", "fail"])
def test_a_resume_the_catalog_cannot_do_is_unsupported(name: str, on_ignored: Any) -> None:
    capability = CATALOG[name]
    # the CLI's own tools: the safety parameters are not what this test is about
    config = CompletionConfig(
        session_id="s-1", tools=ToolPolicy.cli_defaults(), on_ignored=on_ignored
    )
    checked = check_params(capability, [Message.user("hi")], config)
    if capability.support(Param.session_resume) is ParamSupport.IGNORED:
        assert isinstance(checked, Failure), f"{name} would answer from a new session"
        error = checked.failure()
        assert error.kind is ErrorKind.unsupported
        assert error.details["params"] == ["session_resume"]
        assert error.request_sent is False
        assert not error.retryable
        assert "s-1" in error.message
    else:
        assert isinstance(checked, Success), checked
        assert not any("session_resume" in w for w in checked.unwrap())


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, c in CATALOG.items()
        if c.kind is BackendKind.cli
        and n != "acp"  # a protocol, not an argv: session/load (test below)
        and c.support(Param.session_resume) is not ParamSupport.IGNORED
    ),
)
def test_every_cli_that_claims_resume_puts_the_id_on_its_command_line(
    name: str, tmp_path: Path
) -> None:
    config = CompletionConfig(session_id="sess-4711", tools=ToolPolicy.cli_defaults())
    call = CliCall(
        executable="cli", prompt="p", system_prompt=None, config=config, schema=None,
        options={}, run_dir=tmp_path, cwd=tmp_path, session_id=config.session_id,
    )  # fmt: skip
    argv = _spec(name).build(call).argv
    assert any("sess-4711" in a for a in argv), (name, argv)


# --- the CLI's own words: recorded refusals become session_not_found ---------------------


def _recorded_failure(cli: str) -> ProviderError:
    base = FIXTURES / cli / "resume-unknown"
    meta = json.loads(Path(f"{base}.meta.json").read_text())
    assert meta["model_requests"] == 0  # the refusal comes before any model request
    return ProviderError(
        ErrorKind.process_failed,
        "exit 1",
        exit_code=meta["exit_code"],
        stderr_tail=Path(f"{base}.stderr").read_text(),
    )


@pytest.mark.parametrize("cli", RECORDED)
def test_the_recorded_refusal_of_each_cli_is_session_not_found(cli: str) -> None:
    own = _spec(cli).unknown_session
    assert own is not None, f"{cli} has no unknown_session pattern"
    judged = honest_resume(cli, UNKNOWN, Failure(_recorded_failure(cli)), own)
    error = judged.failure()
    assert error.kind is ErrorKind.session_not_found
    assert error.details["session_id"] == UNKNOWN
    assert "started" not in error.details
    assert UNKNOWN in error.stderr_tail  # the CLI's words stay for diagnostics
    assert not error.retryable


@pytest.mark.parametrize("cli", RECORDED)
def test_no_other_recorded_failure_reads_as_an_unknown_session(cli: str) -> None:
    own = _spec(cli).unknown_session
    for stderr in sorted((FIXTURES / cli).glob("*.stderr")):
        if stderr.name.startswith("resume-unknown"):
            continue
        error = ProviderError(ErrorKind.process_failed, "exit 1", stderr_tail=stderr.read_text())
        judged = honest_resume(cli, UNKNOWN, Failure(error), own)
        assert judged.failure().kind is ErrorKind.process_failed, stderr.name


def test_a_failure_of_a_call_that_resumed_nothing_is_left_alone() -> None:
    error = _recorded_failure("claude")
    assert honest_resume("claude", None, Failure(error)).failure() is error


@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_the_adapter_turns_the_refusal_into_session_not_found(
    tmp_path: Path, cli: str
) -> None:
    # the whole CLI path: a fake CLI replays what the real one printed, exit 1
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / cli / "resume-unknown.stdout"),
        "FAKE_CLI_STDERR": str(FIXTURES / cli / "resume-unknown.stderr"),
        "FAKE_CLI_EXIT": "1",
        "FAKE_CLI_STDIN": "read",
    }
    options = {"executable": str(fake_executable(tmp_path)), "env": env, "grace_s": 1.0}
    llm = create_llm_adapter(cli, retry=False, **{cli: options})
    result = await llm.complete([Message.user("hi")], CompletionConfig(session_id=UNKNOWN))
    error = result.failure()
    assert error.kind is ErrorKind.session_not_found, error
    assert error.backend == cli
    assert error.details["session_id"] == UNKNOWN


# --- a new session where one was asked for ------------------------------------------------


def _answer(session: str | None) -> CompletionResponse:
    return CompletionResponse(content="hi", backend="x", raw=RawInfo(session_id=session))


@given(asked=st.text(min_size=1, max_size=40), started=st.none() | st.text(max_size=40))
def test_a_resume_succeeds_only_in_the_session_asked_for(asked: str, started: str | None) -> None:
    judged = honest_resume("x", asked, Success(_answer(started)))
    if started is None or started == asked:  # same session, or a CLI that reports none
        assert isinstance(judged, Success)
        return
    error = judged.failure()
    assert error.kind is ErrorKind.session_not_found
    assert error.request_sent is True  # the new session did ask the model
    assert error.details.get("started") == ProviderError(ErrorKind.config, started).message


def _claude_replay(tmp_path: Path) -> dict[str, Any]:
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "claude" / "ok-stream-json.stdout"),
        "FAKE_CLI_STDIN": "read",
    }
    return {"executable": str(fake_executable(tmp_path)), "env": env, "grace_s": 1.0}


async def test_an_answer_from_another_session_is_dropped(tmp_path: Path) -> None:
    llm = create_llm_adapter("claude", retry=False, claude=_claude_replay(tmp_path))
    fresh = (await llm.complete([Message.user("hi")])).unwrap()
    started = fresh.raw.session_id
    assert started is not None
    same = await llm.complete([Message.user("hi")], CompletionConfig(session_id=started))
    assert isinstance(same, Success), same
    other = await llm.complete([Message.user("hi")], CompletionConfig(session_id=UNKNOWN))
    error = other.failure()
    assert error.kind is ErrorKind.session_not_found
    # (the details also name the binary that answered, like every CLI failure's)
    assert {k: error.details[k] for k in ("session_id", "started")} == {
        "session_id": UNKNOWN,
        "started": started,
    }
    assert error.usage.output_tokens > 0  # what the stray session spent is still counted


async def test_a_runtime_keeps_naming_the_session_it_was_asked_to_resume(tmp_path: Path) -> None:
    async with create_agent_runtime("claude", claude=_claude_replay(tmp_path)) as rt:
        events = [e async for e in rt.send("hi", CompletionConfig(session_id=UNKNOWN))]
    assert events[-1].type is EventType.error
    assert events[-1].metadata["error"].kind is ErrorKind.session_not_found
    assert rt.handle.session_id != "94c1db52-a858-426c-9092-11cddc0afd7d"


# --- ACP: session/load ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"code": -32002, "message": "Resource not found: session"}, ErrorKind.session_not_found),
        ({"code": -32602, "message": "Invalid params"}, ErrorKind.session_not_found),
        ({"code": -32603, "message": "Internal error"}, ErrorKind.session_not_found),
        ({"code": -32000, "message": "Authentication required"}, ErrorKind.auth_required),
        ({"code": -32601, "message": "Method not found"}, ErrorKind.unsupported),
    ],
)
def test_an_acp_agent_that_cannot_load_the_session(error: dict[str, Any], kind: ErrorKind) -> None:
    judged = not_loaded("sess-9", rpc_error(error, "session/load"))
    assert judged.kind is kind
    if kind is ErrorKind.session_not_found:
        assert judged.details["session_id"] == "sess-9"


def test_the_generic_wordings() -> None:
    for text in ("Session abc not found", "no session found", "conversation 7 was not found"):
        assert UNKNOWN_SESSION.search(text), text
    for text in ("model not found", "file not found in session folder? no", "404 Not Found"):
        assert not UNKNOWN_SESSION.search(text), text
