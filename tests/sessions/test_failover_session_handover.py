"""A failover chain with `handover_on` continues a resumed session on the next member when the
member that holds it runs out of quota; without it, or for another kind, the resume fails
honestly. Members are in-test adapters that keep sessions like an agent CLI does; the real
CLIs run the same path in tests/contract/test_handoff_contract.py-style contract below."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Result, Success

from _more_clis_util import network_isolated
from _session_util import cli_options
from agentport import create_llm_adapter
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    RawInfo,
)
from agentport.policies import ChainMember, FailoverAdapter, SessionHandover
from agentport.testing import ALLOW_ENV, FakeModelServer, HttpFault

pytestmark = pytest.mark.anyio


class _Agent:
    """An adapter that keeps sessions by id, like an agent CLI: `fail` makes its next call
    fail with that kind; a resume of an id it does not hold is `session_not_found`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sessions: dict[str, list[str]] = {}
        self.calls: list[tuple[list[Message], CompletionConfig]] = []
        self.fail: ErrorKind | None = None

    @property
    def backend(self) -> str:
        return self.name

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        config = config or CompletionConfig()
        self.calls.append((list(messages), config))
        if self.fail is not None:
            kind, self.fail = self.fail, None
            return Failure(ProviderError(kind, "out", backend=self.name))
        sid = config.session_id or f"{self.name}-{len(self.sessions) + 1}"
        if config.session_id and sid not in self.sessions:
            return Failure(ProviderError(ErrorKind.session_not_found, "no", backend=self.name))
        history = self.sessions.setdefault(sid, [])
        history.append(messages[-1].content)
        answer = f"{self.name} answer {len(history)}"
        return Success(
            CompletionResponse(content=answer, backend=self.name, raw=RawInfo(session_id=sid))
        )


def _chain(handover: SessionHandover | None) -> tuple[FailoverAdapter, _Agent, _Agent]:
    a, b = _Agent("alpha"), _Agent("beta")
    members = [ChainMember("alpha", lambda: a), ChainMember("beta", lambda: b)]
    return FailoverAdapter(members, handover=handover), a, b


async def _ask(
    chain: FailoverAdapter, text: str, session: str | None = None
) -> Result[CompletionResponse, ProviderError]:
    return await chain.complete([Message.user(text)], CompletionConfig(session_id=session))


async def test_a_session_moves_on_quota_and_stays_reachable_by_its_old_id() -> None:
    chain, a, b = _chain(SessionHandover())
    first = (await _ask(chain, "question one MARK-1")).unwrap()
    sid = first.raw.session_id
    assert sid == "alpha-1"
    assert (await _ask(chain, "question two", sid)).unwrap().backend == "alpha"
    a.fail = ErrorKind.quota_exhausted
    moved = (await _ask(chain, "question three MARK-3", sid)).unwrap()
    assert moved.backend == "beta"
    sent, config = b.calls[-1]
    assert config.session_id is None  # beta starts a session of its own
    briefing = sent[-1].content
    for part in ("question one MARK-1", "alpha answer 1", "question two", "question three MARK-3"):
        assert part in briefing
    assert any("handed over from alpha to beta" in w for w in moved.warnings)
    # the old id now lives on beta: alpha is passed over, beta resumes its own session
    calls_before = len(a.calls)
    again = (await _ask(chain, "question four", sid)).unwrap()
    assert again.backend == "beta"
    assert len(a.calls) == calls_before
    assert b.calls[-1][1].session_id == moved.raw.session_id
    assert b.calls[-1][0][-1].content == "question four"  # no briefing: beta holds it now


@pytest.mark.parametrize(
    ("handover", "kind"),
    [
        (None, ErrorKind.quota_exhausted),  # not opted in
        (SessionHandover(frozenset({ErrorKind.quota_exhausted})), ErrorKind.rate_limited),
    ],
)
async def test_without_handover_the_resume_fails_honestly(
    handover: SessionHandover | None, kind: ErrorKind
) -> None:
    chain, a, b = _chain(handover)
    sid = (await _ask(chain, "question one")).unwrap().raw.session_id
    a.fail = kind
    result = await _ask(chain, "question two", sid)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.session_not_found
    assert b.calls[-1][1].session_id == sid  # beta was asked for alpha's session, and said no


def test_a_bad_bound_fails_when_the_chain_is_built() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        SessionHandover(max_tokens=5)


def test_the_setting_names_error_kinds() -> None:
    from agentport.config import LLMSettings

    settings = LLMSettings(backend="claude,codex", handover_on=["quota_exhausted"])
    assert settings.handover_on == ("quota_exhausted",)
    with pytest.raises(ValueError, match="quota_exausted"):
        LLMSettings(backend="claude,codex", handover_on=["quota_exausted"])


@pytest.mark.contract
@pytest.mark.skipif(not network_isolated(), reason="run under `unshare -n` (loopback only)")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_real_claude_session_continues_on_codex_when_claude_is_rate_limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALLOW_ENV, "1")
    with FakeModelServer(default="fallback") as server:
        options: dict[str, Any] = {
            "claude": cli_options("claude", server, tmp_path / "a"),
            "codex": cli_options("codex", server, tmp_path / "b"),
        }
        chain = create_llm_adapter(
            ["claude", "codex"], model="fake-model", retry_attempts=1,
            handover_on=["quota_exhausted", "rate_limited"], **options,
        )  # fmt: skip
        config = CompletionConfig(idle_timeout_s=30, total_timeout_s=120)
        server.reply("claude answer MARK-A1")
        first = (await chain.complete([Message.user("question MARK-Q1")], config)).unwrap()
        assert first.backend == "claude"
        sid = first.raw.session_id
        server.reply(HttpFault.rate_limited(retry_after=1))
        server.reply("codex continues")
        before = len(server.model_requests)
        resumed = config.model_copy(update={"session_id": sid})
        moved = (await chain.complete([Message.user("next MARK-Q2")], resumed)).unwrap()
    assert moved.backend == "codex"
    assert moved.content == "codex continues"
    assert moved.raw.session_id != sid
    assert any("handed over from claude to codex" in w for w in moved.warnings)
    codex_first = json.dumps(server.model_requests[before + 1].body)
    for marker in ("MARK-Q1", "MARK-A1", "MARK-Q2"):
        assert marker in codex_first
