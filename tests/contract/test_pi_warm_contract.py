"""Warm processes against the REAL pi (as .ci/steps/21-more-agent-clis installs it), with a
custom endpoint the way pi's docs tell users (a `models.json` provider: `[llm.pi] base_url`,
`api_key`), answering from FakeModelServer on 127.0.0.1.

Checked: two warm calls with a system prompt run on one `pi --mode rpc` process (its
`models.json`, system prompt file and preload copied into the process's own folder); the
second call's model request carries nothing of the first (`new_session`) but still the
system prompt; a refused call closes its process; nothing is left after `aclose()`. Skipped
when the binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from _more_clis_util import MARKER_ENV, cli_executable, live_processes, new_marker
from agentport.core import Message
from agentport.factory import create_llm_adapter
from agentport.testing import FakeModelServer, HttpFault

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    exe = cli_executable("pi")
    if exe is None:
        pytest.skip("pi not installed (.ci/steps/21-more-agent-clis)")
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return {"executable": str(exe), "api_key": "test-key", "env": {MARKER_ENV: new_marker()}}


def _pid(response: Any) -> int:
    return int(response.raw.extra["pid"])


async def test_pi_warm_calls_share_one_process_and_no_conversation(
    options: dict[str, Any],
) -> None:
    system = Message.system("Always answer in lower case.")
    with FakeModelServer() as server:
        server.script("first answer", "second answer")
        options["base_url"] = server.openai_base_url
        adapter = create_llm_adapter("pi", retry=False, warm=1, model="m", pi=options)
        one = (await adapter.complete([system, Message.user("remember pineapple")])).unwrap()
        two = (await adapter.complete([system, Message.user("which word?")])).unwrap()
        bodies = [json.dumps(r.body) for r in server.model_requests]
        marker = options["env"][MARKER_ENV]
        assert live_processes(marker) != []  # kept warm
        await adapter.aclose()
    assert (one.content, two.content) == ("first answer", "second answer")
    assert _pid(one) == _pid(two)
    assert len(bodies) == 2
    assert "pineapple" not in bodies[1]
    assert "which word" in bodies[1]
    assert all("Always answer in lower case." in body for body in bodies)
    assert live_processes(marker) == []


async def test_pi_warm_process_that_saw_an_error_is_not_reused(options: dict[str, Any]) -> None:
    with FakeModelServer() as server:
        server.script("fine", HttpFault(401, "bad key"), "fine again")
        options["base_url"] = server.openai_base_url
        adapter = create_llm_adapter("pi", retry=False, warm=1, model="m", pi=options)
        first = (await adapter.complete([Message.user("one")])).unwrap()
        failed = await adapter.complete([Message.user("two")])
        third = (await adapter.complete([Message.user("three")])).unwrap()
        await adapter.aclose()
    assert isinstance(failed, Failure)
    assert third.content == "fine again"
    assert _pid(third) != _pid(first)
    assert live_processes(options["env"][MARKER_ENV]) == []
