"""opencode retries a model request whose stream broke after it began without logging a
reason (measured on 1.18.33 against a cut stream: up to 6 requests over 70 s, nothing at
WARN). At INFO each step logs `process` before its request line, so a second request line
with no `process` between is the CLI retrying: the run ends there as `network`, under
agentport's own retry policy. The watcher through `complete()` with a fake CLI that prints
the real log shape and hangs, the pure rule as a property, and the exit message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_retry_notice import _complete

from agentport.backends import opencode
from agentport.backends._spec import RunOutcome
from agentport.core import ErrorKind

_SESSION = "session.id=ses_dc8c3fbf4ffeM4pSYMov1Z2PGW"
_HEAD = "timestamp=2026-12-02T14:50:11.123Z level=INFO run=7ea36e1c"
LOOP = f"{_HEAD} message=loop {_SESSION} step={{n}}"
PROCESS = f"{_HEAD} message=process {_SESSION} messageID=msg_2373c093b001qg273NE5y9PMAM"
TITLE = (f"{_HEAD} message=stream providerID=agentport modelID=fake-model {_SESSION} "
         "small=true agent=title mode=primary")  # fmt: skip
REQUEST = (f"{_HEAD} message=stream providerID=agentport modelID=fake-model {_SESSION} "
           "small=false agent=build mode=primary")  # fmt: skip
OTHER = f'{_HEAD} message="llm runtime selected" llm.runtime=ai-sdk llm.provider=agentport'


@pytest.fixture(autouse=True)
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _step(n: int) -> list[str]:
    return [LOOP.format(n=n), PROCESS, REQUEST, OTHER]


def _watch(lines: list[str]) -> list[int]:
    """Indexes of the lines a fresh watcher flags."""
    assert opencode.SPEC.retry_notice is not None
    watch = opencode.SPEC.retry_notice()
    return [i for i, line in enumerate(lines) if watch(line) is not None]


@pytest.mark.anyio
async def test_a_request_sent_again_with_no_new_step_ends_the_run_as_network(
    tmp_path: Path,
) -> None:
    stderr = "\n".join([LOOP.format(n=0), TITLE, PROCESS, REQUEST, OTHER, REQUEST, OTHER])
    error = await _complete(tmp_path, "opencode", "", stderr=stderr + "\n")
    assert error.kind is ErrorKind.network
    assert "without logging why" in error.message


@given(st.integers(1, 8), st.booleans(), st.data())
def test_tool_steps_never_look_like_a_retry_and_a_repeat_always_does(
    steps: int, title: bool, data: st.DataObject
) -> None:
    lines = [TITLE] if title else []
    for n in range(steps):
        lines += _step(n)
    assert _watch(lines) == []  # a multi-step tool run is not a retry
    requests = [i for i, line in enumerate(lines) if line == REQUEST]
    at = data.draw(st.sampled_from(requests))
    repeated = [*lines[: at + 1], OTHER, REQUEST, *lines[at + 1 :]]
    assert _watch(repeated) == [at + 2]  # the repeat is flagged, at once


def test_every_run_gets_its_own_watcher() -> None:
    assert opencode.SPEC.retry_notice is not None
    first, second = opencode.SPEC.retry_notice(), opencode.SPEC.retry_notice()
    assert first(PROCESS) is None
    assert first(REQUEST) is None
    assert second(REQUEST) is None  # another run's request is not this run's repeat
    assert first(REQUEST) is not None


def test_a_failed_exit_names_the_error_line_not_the_info_chatter() -> None:
    error_line = f'{_HEAD.replace("INFO", "ERROR")} message=process error="ECONNRESET: reset"'
    tail = "\n".join([REQUEST, error_line, f'{_HEAD} message="disposing instance"']) + "\n"
    outcome = RunOutcome(exit_code=1, events=(), stderr_tail=tail)
    error = opencode.classify(outcome)
    assert error is not None
    assert error.message == error_line
