"""Typed failover in one configuration line, hedging, and the receipt per call: the chain moves on
only for failures another backend can fix, passes over a backend whose catalog cannot honour the
call, records what happened to each backend before the one that answered; a hedge's loser is
cancelled with its whole process group. Driven the way users call it: `llm.backend` as a list /
comma list, `create_llm_adapter`."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Result, Success

from _runner_util import FAKE_CLI, FIXTURES
from agentport import create_llm_adapter
from agentport.catalog import get_capability
from agentport.config import load_settings
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    LLMAdapter,
    Message,
    Param,
    ParamSupport,
    ProviderError,
    Usage,
    as_messages,
)
from agentport.policies import ChainMember, FailoverAdapter, default_store
from agentport.transport import group_members

pytestmark = pytest.mark.anyio


class _Fixed:
    """An adapter that answers or fails the same way every time, counting calls."""

    def __init__(self, name: str, error: ErrorKind | None = None, delay: float = 0.0) -> None:
        self.backend = name
        self.error = error
        self.calls = 0
        self.delay = delay

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        import anyio

        self.calls += 1
        await anyio.sleep(self.delay)
        if self.error is not None:
            return Failure(
                ProviderError(self.error, f"{self.backend} failed", backend=self.backend)
            )
        usage = Usage(input_tokens=3, output_tokens=2)
        return Success(CompletionResponse(content=self.backend, backend=self.backend, usage=usage))


def _chain(*adapters: _Fixed, **kw: Any) -> FailoverAdapter:
    def member(a: _Fixed) -> ChainMember:
        def build() -> LLMAdapter:
            return a

        return ChainMember(a.backend, build, get_capability(a.backend))

    return FailoverAdapter([member(a) for a in adapters], **kw)


@pytest.mark.parametrize(
    "kind",
    [
        ErrorKind.not_installed, ErrorKind.auth_required, ErrorKind.rate_limited,
        ErrorKind.quota_exhausted, ErrorKind.timeout, ErrorKind.server_error, ErrorKind.network,
    ],
)  # fmt: skip
async def test_failures_another_backend_can_fix_move_on_and_are_recorded(kind: ErrorKind) -> None:
    first, second = _Fixed("codex", kind), _Fixed("claude")
    result = await _chain(first, second).complete(as_messages("hi"))
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert response.backend == "claude"
    assert [(s.backend, s.kind, s.called) for s in response.skipped] == [("codex", kind, True)]
    assert response.skipped[0].duration_s >= 0


@pytest.mark.parametrize(
    "kind", [ErrorKind.invalid_request, ErrorKind.schema_mismatch, ErrorKind.context_length]
)
async def test_the_callers_own_errors_never_move_on(kind: ErrorKind) -> None:
    first, second = _Fixed("codex", kind), _Fixed("claude")
    result = await _chain(first, second).complete(as_messages("hi"))
    assert isinstance(result, Failure)
    assert result.failure().kind is kind
    assert second.calls == 0


async def test_which_failures_move_on_is_configurable() -> None:
    first, second = _Fixed("codex", ErrorKind.timeout), _Fixed("claude")
    chain = _chain(first, second, failover_on=frozenset({ErrorKind.rate_limited}))
    result = await chain.complete(as_messages("hi"))
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout
    assert second.calls == 0


async def test_when_every_backend_fails_the_last_failure_carries_all_of_them() -> None:
    chain = _chain(_Fixed("codex", ErrorKind.rate_limited), _Fixed("claude", ErrorKind.network))
    result = await chain.complete(as_messages("hi"))
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is ErrorKind.network
    assert [s["backend"] for s in error.details["skipped"]] == ["codex", "claude"]
    assert [a.backend for a in error.attempts] == ["codex", "claude"]


async def test_a_backend_that_ignores_a_needed_parameter_is_skipped_not_called() -> None:
    assert get_capability("claude").support(Param.temperature) is ParamSupport.IGNORED
    assert get_capability("openai_compat").support(Param.temperature) is ParamSupport.NATIVE
    first, second = _Fixed("claude"), _Fixed("openai_compat")
    config = CompletionConfig(temperature=0.1, on_ignored="fail")
    result = await _chain(first, second).complete(as_messages("hi"), config)
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert first.calls == 0
    assert response.backend == "openai_compat"
    (skip,) = response.skipped
    assert (skip.backend, skip.kind, skip.called) == ("claude", ErrorKind.unsupported, False)
    assert "temperature" in skip.reason
    # under `warn` the same backend is called, and the receipt says what it did with it
    result = await _chain(_Fixed("claude"), _Fixed("openai_compat")).complete(
        as_messages("hi"), CompletionConfig(temperature=0.1)
    )
    assert result.unwrap().backend == "claude"
    (temperature,) = [r for r in result.unwrap().receipt if r.param is Param.temperature]
    assert temperature.support is ParamSupport.IGNORED
    assert temperature.note == "the CLI has no sampling flags"


async def test_a_cooling_backend_is_passed_over_without_a_call() -> None:
    default_store().record("codex", datetime.now(UTC) + timedelta(hours=1), reason="limit")
    first, second = _Fixed("codex"), _Fixed("claude")
    result = await _chain(first, second, cooldown=default_store()).complete(as_messages("hi"))
    assert result.unwrap().backend == "claude"
    assert first.calls == 0
    (skip,) = result.unwrap().skipped
    assert (skip.kind, skip.called) == (ErrorKind.quota_exhausted, False)


async def test_hedge_starts_the_next_backend_and_the_first_success_wins() -> None:
    slow, fast = _Fixed("codex", delay=30), _Fixed("claude")
    result = await _chain(slow, fast, hedge_after_s=0.05).complete(as_messages("hi"))
    response = result.unwrap()
    assert response.backend == "claude"
    assert (slow.calls, fast.calls) == (1, 1)
    (loser,) = response.skipped
    assert loser.backend == "codex"
    assert loser.kind is None
    assert "cancelled" in loser.reason


# ---- configuration: one line, one-line errors -------------------------------------------------


def test_chain_from_toml_list_and_from_a_comma_list_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentport.toml").write_text('[llm]\nbackend = ["codex", "claude-code", "local"]\n')
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(tmp_path))  # a project may pick backends
    assert load_settings(tmp_path).llm.backend == "codex,claude,local"
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "codex, claude ,local")
    assert load_settings(tmp_path).llm.backend == "codex,claude,local"
    llm = create_llm_adapter(cwd=tmp_path)
    assert isinstance(llm, FailoverAdapter)
    assert [m.name for m in llm.members] == ["codex", "claude", "local"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("codex,cluade", "did you mean 'claude'"),
        ("codex,codex-cli", "appears twice"),
        ("codex,,claude", "empty member"),
        (",", "empty member"),
        ("auto,codex", "only be the last"),
    ],
)
def test_bad_chains_are_one_line_errors_naming_source_and_field(
    value: str, says: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", value)
    with pytest.raises(ProviderError) as caught:
        create_llm_adapter(cwd=tmp_path)
    error = caught.value
    assert error.kind is ErrorKind.config
    assert says in error.message
    assert "AGENTPORT_LLM_BACKEND" in error.message
    assert "llm.backend" in error.message
    assert "\n" not in error.message


def test_an_empty_list_and_an_unknown_failover_kind_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="backend chain is empty"):
        create_llm_adapter(backend=[], cwd=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="unknown error kind 'sometimes'"):
        create_llm_adapter("echo,scripted", cwd=tmp_path, failover_on=["sometimes"])
    with pytest.raises(ProviderError, match="hedge_after_s"):
        create_llm_adapter("echo,scripted", cwd=tmp_path, hedge_after_s=0)


async def test_chain_of_test_doubles_answers_with_a_receipt(tmp_path: Path) -> None:
    llm = create_llm_adapter("echo,scripted", cwd=tmp_path)
    result = await llm.complete(
        [Message.system("be brief"), Message.user("hello")], CompletionConfig(temperature=0.2)
    )
    response = result.unwrap()
    assert response.backend == "echo"
    assert response.skipped == ()
    seen = {r.param.value: r.support for r in response.receipt}
    assert seen["temperature"] is ParamSupport.IGNORED  # echo ignores it, and says so
    assert seen["system_prompt"] is ParamSupport.IGNORED
    assert seen["tool_restriction"] is ParamSupport.NATIVE
    assert "max_tokens" not in seen  # only what the caller set


async def test_a_single_backend_response_has_a_receipt_with_catalog_notes(tmp_path: Path) -> None:
    llm = create_llm_adapter("echo", cwd=tmp_path)
    config = CompletionConfig(output_schema={"type": "object"})
    result = await llm.complete(as_messages('{"a": 1}'), config)
    receipt = {r.param.value: r for r in result.unwrap().receipt}
    assert receipt["output_schema"].support is ParamSupport.TRANSLATED
    assert receipt["output_schema"].note == "the echoed text is validated against the schema"


# ---- with processes: the real CLI adapters on fake executables --------------------------------

LIMITS: dict[str, Any] = {"startup_timeout_s": 30, "idle_timeout_s": 30, "total_timeout_s": 90}


@pytest.fixture
def _allow_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _fake(tmp: Path, name: str, stdout: Path, **fake: str) -> dict[str, Any]:
    home = tmp / name
    home.mkdir()
    exe = home / "fake-agent"
    exe.write_text(
        "#!/bin/sh\n"
        # `codex debug models` (the catalog read before a run) is not a start
        f'[ "$1" = debug ] || echo start >> "{home / "starts"}"\n'
        f'exec "{sys.executable}" "{FAKE_CLI}" "$@"\n'
    )
    exe.chmod(0o755)
    env = {
        "FAKE_CLI_STDOUT": str(stdout), "FAKE_CLI_STDIN": "read",
        "FAKE_CLI_PIDFILE": str(home / "grandchild.pid"),
        **{f"FAKE_CLI_{k.upper()}": v for k, v in fake.items()},
    }  # fmt: skip
    return {"executable": str(exe), "env": env, "grace_s": 1.0, "linger_s": 0.2}


def _starts(tmp: Path, name: str) -> int:
    path = tmp / name / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.usefixtures("_allow_real")
async def test_an_exhausted_codex_window_fails_over_once_then_is_never_called(
    tmp_path: Path,
) -> None:
    """built: codex's real http429 transcript with the usage-limit message of
    quota-messages.md in place of the stub's text."""
    text = (FIXTURES / "codex" / "http429.stdout").read_text()
    message = "You've hit your usage limit. Upgrade to Pro or try again in 2 days 17 hours."
    limited = tmp_path / "limited.jsonl"
    limited.write_text(text.replace("exceeded retry limit, last status: 429 Too Many Requests",
                                    message))  # fmt: skip
    codex = _fake(tmp_path, "codex", limited, exit="1")
    claude = _fake(tmp_path, "claude", FIXTURES / "claude" / "ok-stream-json.stdout")
    llm = create_llm_adapter(["codex", "claude"], **LIMITS, codex=codex, claude=claude)
    for _ in range(3):
        result = await llm.complete([Message.user("Say hi")])
        assert isinstance(result, Success), result
        assert result.unwrap().backend == "claude"
    assert _starts(tmp_path, "codex") == 1  # the exhausted window is not called again
    assert _starts(tmp_path, "claude") == 3
    first_skip = result.unwrap().skipped[0]
    assert (first_skip.backend, first_skip.kind, first_skip.called) == (
        "codex", ErrorKind.quota_exhausted, False,
    )  # fmt: skip
    cooling = default_store().active("codex")
    assert cooling is not None
    expected = datetime.now(UTC) + timedelta(days=2, hours=17)
    assert abs((cooling.until - expected).total_seconds()) < 300


@pytest.mark.usefixtures("_allow_real")
async def test_a_hedged_loser_is_cancelled_and_its_process_group_killed(tmp_path: Path) -> None:
    slow_out = tmp_path / "slow.jsonl"
    slow_out.write_text(json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n")
    codex = _fake(tmp_path, "codex", slow_out, hang="1", child="1")
    claude = _fake(tmp_path, "claude", FIXTURES / "claude" / "ok-stream-json.stdout")
    llm = create_llm_adapter(
        ["codex", "claude"], hedge_after_s=1.5, **LIMITS, codex=codex, claude=claude
    )
    result = await llm.complete([Message.user("Say hi")])
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert response.backend == "claude"
    assert response.usage.output_tokens > 0  # the winner's usage
    (loser,) = response.skipped
    assert (loser.backend, loser.kind, loser.usage) == ("codex", None, None)
    _no_orphan(tmp_path / "codex" / "grandchild.pid")


def _no_orphan(pidfile: Path) -> None:
    pid = int(pidfile.read_text())
    assert group_members(pid) == []  # zero orphans: the loser's whole group is gone
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
