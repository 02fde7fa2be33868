"""How far a failed call got: `ProviderError.request_sent` (True / False / None for "cannot
tell") and `mid_stream` (part of the answer had arrived), the two flags pydantic-ai's errors
carry and a caller needs before it retries work that may have been billed or acted on.

Checked the way users call it: the seven CLIs with transcripts replayed by the fake CLI (an
answer cut before its terminal event, a CLI that died silently), openai_compat and litellm
against `FakeModelServer` (a closed port, an HTTP error, a cut stream, a stall), and through
the policy layer (retries, a failover chain), where the flags say how far the whole call got.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result

from _runner_util import FAKE_CLI, FIXTURES
from agentport import create_llm_adapter
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventType,
    Message,
    ProviderError,
)
from agentport.policies import ChainMember, FailoverAdapter, RetryingAdapter, RetryPolicy
from agentport.testing import CutStream, FakeModelServer, Hang, HttpFault

FAST = CompletionConfig(startup_timeout_s=5, idle_timeout_s=2, total_timeout_s=20)
SENT = (True, False, None)


# --------------------------------------------------------------------------- the pure rules


def test_each_kind_says_by_itself_whether_the_request_left() -> None:
    for kind in ErrorKind:
        error = ProviderError(kind, "x")
        if kind in (ErrorKind.config, ErrorKind.not_installed, ErrorKind.unsupported,
                    ErrorKind.budget_exhausted, ErrorKind.binary_changed,
                    ErrorKind.runaway):  # fmt: skip
            assert error.request_sent is False, kind
        elif kind in (ErrorKind.timeout, ErrorKind.network, ErrorKind.process_failed,
                      ErrorKind.auth_required, ErrorKind.context_length,
                      ErrorKind.invalid_request,
                      # a resume refused before sending, or answered in another session;
                      # a turn interrupted before or during its request
                      ErrorKind.session_not_found, ErrorKind.interrupted):  # fmt: skip
            assert error.request_sent is None, kind
        else:  # only a reply of the provider produces it
            assert error.request_sent is True, kind
        assert ProviderError(kind, "x", status=400).request_sent is True  # a status: answered
        assert error.mid_stream is False


@given(st.sampled_from(list(ErrorKind)), st.sampled_from(SENT), st.sampled_from(SENT),
       st.booleans())  # fmt: skip
def test_sent_never_forgets_an_answer_and_mid_stream_implies_sent(
    kind: ErrorKind, given_sent: bool | None, seen: bool | None, mid: bool
) -> None:
    error = ProviderError(kind, "x", request_sent=given_sent)
    marked = error.sent(seen, mid_stream=mid)
    if error.request_sent or mid:
        assert marked.request_sent is True
    else:
        assert marked.request_sent is seen
    assert marked.mid_stream is mid
    assert marked.kind is kind
    assert marked.message == error.message
    assert error.replace(mid_stream=True).request_sent is True


@given(st.lists(st.sampled_from(SENT), min_size=1, max_size=6))
def test_a_call_reached_the_provider_when_any_attempt_did(flags: list[bool | None]) -> None:
    errors = [ProviderError(ErrorKind.network, "x", request_sent=f) for f in flags]
    # ProviderError derives network as None when not given: keep the given False
    errors = [e.replace(request_sent=f) for e, f in zip(errors, flags, strict=True)]
    last = errors[-1].reached_by(errors)
    want = True if True in flags else None if None in flags else False
    assert last.request_sent is want


# ---------------------------------------------------------------------- HTTP backends


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(backend: str, base_url: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    if backend == "litellm":
        pytest.importorskip(
            "agentport.backends.litellm", reason="needs the litellm extra", exc_type=ImportError
        )
        options = {"model": "openai/fake-model", "api_base": base_url, "api_key": "sk-fake-0123"}
        return create_llm_adapter("litellm", cwd=tmp, retry=False, litellm=options)
    options = {"base_url": base_url, "api_key": "sk-fake-0123"}
    return create_llm_adapter(
        "openai_compat", cwd=tmp, retry=False, model="fake-model", openai_compat=options
    )


HTTP = ("openai_compat", "litellm")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", HTTP)
async def test_http_a_connection_never_opened_was_not_sent(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = _http(backend, f"http://127.0.0.1:{_closed_port()}/v1", tmp_path, monkeypatch)
    error = (await llm.complete([Message.user("hi")], FAST)).failure()
    assert error.kind is ErrorKind.network, error
    if backend == "openai_compat":  # litellm wraps the connect error: it cannot tell
        assert error.request_sent is False
    assert error.request_sent is not True
    assert error.mid_stream is False


@pytest.mark.anyio
@pytest.mark.parametrize("backend", HTTP)
@pytest.mark.parametrize("stream", [True, False])
async def test_http_a_status_means_the_provider_answered(
    backend: str, stream: bool, server: FakeModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    server.reply(HttpFault.server_error())
    llm = _http(backend, server.openai_base_url, tmp_path, monkeypatch)
    config = FAST.model_copy(update={"stream": stream})
    error = (await llm.complete([Message.user("hi")], config)).failure()
    assert error.kind is ErrorKind.server_error, error
    assert (error.request_sent, error.mid_stream) == (True, False)


@pytest.mark.anyio
@pytest.mark.parametrize("backend", HTTP)
@pytest.mark.parametrize("fault", [CutStream(after_deltas=2), Hang(after_deltas=2)])
async def test_http_a_stream_cut_or_stalled_after_chunks_failed_mid_stream(
    backend: str, fault: Any, server: FakeModelServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    server.reply(fault)
    llm = _http(backend, server.openai_base_url, tmp_path, monkeypatch)
    error = (await llm.complete([Message.user("hi")], FAST)).failure()
    assert error.kind in (ErrorKind.network, ErrorKind.timeout, ErrorKind.bad_output), error
    assert (error.request_sent, error.mid_stream) == (True, True), error


@pytest.mark.anyio
async def test_http_a_server_that_never_answers_cannot_tell(
    server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(Hang())
    llm = _http("openai_compat", server.openai_base_url, tmp_path, monkeypatch)
    silent = CompletionConfig(startup_timeout_s=1, idle_timeout_s=1, total_timeout_s=20)
    error = (await llm.complete([Message.user("hi")], silent)).failure()
    assert error.kind is ErrorKind.timeout, error
    assert (error.request_sent, error.mid_stream) == (None, False)


# ---------------------------------------------------------------------- CLI backends

CLIS = {
    "claude": "ok-stream-json",
    "codex": "ok-json",
    "gemini": "ok-stream-json",
    "copilot": "ok-json",
    "opencode": "tool-bash",
    "pi": "ok-json",
    "qwen": "ok-stream-json",
}


def _cut_after_first_answer_event(cli: str, case: str, tmp: Path) -> Path:
    """The real transcript up to its first text or tool event (built: a CLI killed mid-answer
    prints exactly a prefix of its stream)."""
    decode = import_module(f"agentport.backends.{cli}").decode
    kept: list[str] = []
    for line in (FIXTURES / cli / f"{case}.stdout").read_text("utf-8").splitlines():
        kept.append(line)
        try:
            event = decode(json.loads(line))
        except ValueError:
            continue
        if event is not None and event.type in (EventType.text, EventType.tool_call):
            break
    else:
        raise AssertionError(f"{cli}/{case} has no answer event")
    path = tmp / "cut.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


def _fake(tmp: Path, stdout: Path | None) -> dict[str, Any]:
    exe = tmp / "fake-agent"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
    exe.chmod(0o755)
    env = {"FAKE_CLI_STDIN": "read", "FAKE_CLI_EXIT": "1"}
    if stdout is not None:
        env["FAKE_CLI_STDOUT"] = str(stdout)
    return {"executable": str(exe), "env": env}


async def _cli_failure(cli: str, tmp: Path, stdout: Path | None) -> ProviderError:
    llm = create_llm_adapter(cli, retry=False, total_timeout_s=30, **{cli: _fake(tmp, stdout)})
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Failure), result
    return result.failure()


@pytest.mark.anyio
@pytest.mark.parametrize("cli", sorted(CLIS))
async def test_cli_killed_mid_answer_failed_mid_stream(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    stdout = _cut_after_first_answer_event(cli, CLIS[cli], tmp_path)
    error = await _cli_failure(cli, tmp_path, stdout)
    assert (error.request_sent, error.mid_stream) == (True, True), error


@pytest.mark.anyio
@pytest.mark.parametrize("cli", sorted(CLIS))
async def test_cli_dying_silently_cannot_tell(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    error = await _cli_failure(cli, tmp_path, None)
    assert error.kind is ErrorKind.process_failed, error
    assert (error.request_sent, error.mid_stream) == (None, False), error


# ---------------------------------------------------------------------- the policy layer


class _Errors:
    """An adapter failing with the given errors in turn."""

    backend = "fake"

    def __init__(self, errors: Sequence[ProviderError]) -> None:
        self.errors = list(errors)

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return Failure(self.errors.pop(0))


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.anyio
async def test_retries_report_that_an_earlier_attempt_reached_the_provider() -> None:
    reached = ProviderError(ErrorKind.server_error, "500", status=500)
    refused = ProviderError(ErrorKind.network, "connect refused", request_sent=False)
    llm = RetryingAdapter(_Errors([reached, refused]), RetryPolicy(attempts=2), sleep=_no_sleep)
    error = (await llm.complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.network
    assert len(error.attempts) == 2
    assert (error.request_sent, error.mid_stream) == (True, False)
    alone = RetryingAdapter(_Errors([refused]), RetryPolicy(attempts=1), sleep=_no_sleep)
    assert (await alone.complete([Message.user("hi")])).failure().request_sent is False


@pytest.mark.anyio
async def test_a_deadline_spent_before_any_attempt_was_not_sent() -> None:
    llm = RetryingAdapter(_Errors([]), sleep=_no_sleep)
    error = await llm.complete([Message.user("hi")], CompletionConfig(total_timeout_s=1e-9))
    assert error.failure().kind is ErrorKind.timeout
    assert error.failure().request_sent is False


@pytest.mark.anyio
async def test_a_failover_chain_reports_that_a_member_reached_a_provider() -> None:
    limited = ProviderError(ErrorKind.rate_limited, "429", status=429)
    refused = ProviderError(ErrorKind.network, "connect refused", request_sent=False)
    chain = FailoverAdapter(
        [ChainMember("a", lambda: _Errors([limited])), ChainMember("b", lambda: _Errors([refused]))]
    )
    error = (await chain.complete([Message.user("hi")])).failure()
    assert error.kind is ErrorKind.network
    assert error.backend == "b"
    assert error.request_sent is True
