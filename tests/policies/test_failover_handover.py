"""A failover chain hands over at once: a member's rate limit (or exhausted window, outage,
missing install) moves to the next member without retrying it or sleeping on its
Retry-After; the attempt history still shows what happened; the last member, which nothing
can replace, still retries.

Regression: with `backend = ["openai_compat", "echo"]` and the endpoint answering 429 with
`Retry-After: 20`, echo answered after 40 s (the first member was retried three times and its
Retry-After slept twice before the chain moved on). The time guard is a hang guard.
"""

from __future__ import annotations

import anyio
import pytest

from agentport import create_llm_adapter
from agentport.core import ErrorKind, Message
from agentport.testing import FakeModelServer, HttpFault

pytestmark = pytest.mark.anyio


async def test_a_rate_limited_member_hands_over_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer() as server:
        server.script(*[HttpFault.rate_limited(retry_after=20)] * 5)
        chain = create_llm_adapter(
            ["openai_compat", "echo"],
            openai_compat={"base_url": server.openai_base_url, "api_key": "k"},
        )
        with anyio.fail_after(15):  # sleeping on Retry-After would take 20 s or more
            response = (await chain.complete([Message.user("hi")])).unwrap()
        assert response.backend == "echo"
        assert len(server.model_requests) == 1  # the first member was not retried
    skipped = [s for s in response.skipped if s.backend == "openai_compat"]
    assert skipped
    assert skipped[0].kind is ErrorKind.rate_limited


def test_only_the_members_before_the_last_hand_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    chain = create_llm_adapter(
        ["openai_compat", "echo"], openai_compat={"base_url": "http://127.0.0.1:9/v1"}
    )
    first, last = (member.adapter() for member in chain.members)  # type: ignore[attr-defined]
    assert ErrorKind.rate_limited in first.hand_over
    assert last.hand_over == frozenset()  # nothing replaces the last: it retries as usual
