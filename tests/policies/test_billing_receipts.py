"""Every answer and failure says on whose bill it ran (`billing_route`) and how well its cost
is known (`cost_state`), from the facts each backend gives; a money budget over calls
without a price says "lower bound" (warn) or refuses (fail)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from _runner_util import FIXTURES, fake_executable
from agentport import create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    BackendCapability,
    Billing,
    BillingRoute,
    CompletionResponse,
    CostState,
    ErrorKind,
    Message,
    ProviderError,
    Usage,
)
from agentport.core._billing import key_handed, loopback_url, route_for
from agentport.policies import Budget, BudgetAdapter, RetryingAdapter, RetryPolicy
from agentport.testing import FakeModelServer
from agentport.transport._binary import forget_binaries

pytestmark = pytest.mark.anyio

ASK = [Message.user("Say hi")]

# what a backend may report: nothing, tokens only, a price, a failure before or after sending
REPORTS: dict[str, Any] = {
    "nothing": CompletionResponse(content="ok"),
    "tokens": CompletionResponse(content="ok", usage=Usage(input_tokens=5, output_tokens=2)),
    "priced": CompletionResponse(
        content="ok", usage=Usage(input_tokens=5, output_tokens=2, cost_usd=0.01)
    ),
    "refused": ProviderError(ErrorKind.invalid_request, "no", request_sent=False),
    "failed": ProviderError(
        ErrorKind.bad_output, "garbled", usage=Usage(input_tokens=9, output_tokens=1)
    ),
}


@pytest.fixture(autouse=True)
def _real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    forget_binaries()


class _Says:
    """An adapter that returns exactly *reply* (a response or a failure)."""

    def __init__(self, reply: Any, backend: str = "says") -> None:
        self.reply = reply
        self.backend = backend

    async def complete(self, messages: Any, config: Any = None) -> Any:
        reply = self.reply(messages, config) if callable(self.reply) else self.reply
        return Failure(reply) if isinstance(reply, ProviderError) else Success(reply)


def _usage(result: Result[CompletionResponse, ProviderError]) -> Usage:
    return result.unwrap().usage if isinstance(result, Success) else result.failure().usage


@pytest.mark.parametrize("report", sorted(REPORTS))
@pytest.mark.parametrize("capability", all_backends(), ids=lambda c: c.name)
async def test_every_backend_receipt_has_both_fields(
    capability: BackendCapability, report: str
) -> None:
    inner = _Says(REPORTS[report], backend=capability.name)
    llm = RetryingAdapter(inner, RetryPolicy(attempts=1), capability=capability)
    usage = _usage(await llm.complete(ASK))
    assert usage.billing_route is not None
    assert usage.cost_state is not None
    route = route_for(capability.billing, key=None)
    assert usage.billing_route is route
    if route is BillingRoute.local or report in ("refused", "priced"):
        assert usage.cost_state is CostState.priced  # own hardware, never sent, or priced
        assert usage.cost_usd is not None
    else:
        assert usage.cost_state is CostState.unpriced
        assert usage.cost_usd is None


def test_route_table_from_the_facts() -> None:
    sub_key = (Billing.subscription, Billing.api_key)
    assert route_for(sub_key, key=True) is BillingRoute.api_key
    assert route_for(sub_key, key=False) is BillingRoute.subscription
    assert route_for(sub_key, key=None) is BillingRoute.unknown
    said = BillingRoute.subscription
    assert route_for(sub_key, key=True, said=said) is said  # the CLI's own word wins
    # no key in the env of a CLI that usually runs on one: it may sit in its config file
    assert route_for((Billing.api_key, Billing.subscription), key=False) is BillingRoute.unknown
    assert route_for((Billing.api_key, Billing.local), key=False) is BillingRoute.unknown
    assert route_for((Billing.local,), key=True) is BillingRoute.local
    assert route_for((Billing.none,), key=None) is BillingRoute.local
    assert route_for((Billing.api_key, Billing.cloud), key=False) is BillingRoute.unknown
    assert route_for((), key=True) is BillingRoute.unknown
    assert key_handed({"ANTHROPIC_API_KEY": "sk"})
    assert key_handed({"OPENAI_API_KEY": "sk", "HOME": "/h"})
    assert not key_handed({"OPENAI_API_KEY": ""})  # set but empty: no key
    assert not key_handed({"CLAUDE_CODE_OAUTH_TOKEN": "t"})  # a login's token
    assert loopback_url("http://127.0.0.1:8080/v1")
    assert loopback_url("http://localhost:11434/v1")
    assert loopback_url("http://[::1]:8000/v1")
    assert not loopback_url("https://api.openai.com/v1")


_STATES = st.sampled_from([CostState.priced, CostState.unpriced, CostState.lower_bound])
_ROUTES = st.sampled_from(list(BillingRoute))


@given(st.lists(st.tuples(_STATES, _ROUTES), min_size=1, max_size=8))
def test_summed_usage_is_priced_only_when_every_part_is(parts: list[Any]) -> None:
    usages = [
        Usage(
            input_tokens=1,
            cost_usd=0.5 if state is CostState.priced else None,
            cost_state=state,
            billing_route=route,
        )
        for state, route in parts
    ]
    total = sum(usages, Usage())
    states = {state for state, _ in parts}
    routes = {route for _, route in parts}
    assert total.cost_state is (states.pop() if len(states) == 1 else CostState.lower_bound)
    assert total.billing_route is (routes.pop() if len(routes) == 1 else BillingRoute.unknown)
    assert total.input_tokens == len(parts)
    # an empty usage is the identity: it neither prices nor unprices a sum
    assert Usage() + total == total


def test_a_usage_states_its_cost_by_itself() -> None:
    assert Usage().cost_state is None  # nothing to price
    assert Usage(output_tokens=3).cost_state is CostState.unpriced
    assert Usage(cost_usd=0.0).cost_state is CostState.priced


# ---------------------------------------------------------------- the real adapters' facts


def _cli(tmp: Path, backend: str, case: str, **options: Any) -> Any:
    env = {"FAKE_CLI_STDOUT": str(FIXTURES / backend / f"{case}.stdout"), "FAKE_CLI_STDIN": "read"}
    settings = {"executable": str(fake_executable(tmp)), "env": env, "grace_s": 1.0, **options}
    return create_llm_adapter(backend, **{backend: settings}, retry_attempts=1)


async def test_claude_says_its_key_source_and_prices_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = await _cli(tmp_path, "claude", "ok-stream-json").complete(ASK)
    usage = result.unwrap().usage
    # the init event's apiKeySource is ANTHROPIC_API_KEY: metered, whatever the env says
    assert usage.billing_route is BillingRoute.api_key
    assert usage.cost_state is CostState.priced
    assert usage.cost_usd == pytest.approx(0.097975)


async def test_claude_logged_in_is_the_subscription(tmp_path: Path) -> None:
    lines = (FIXTURES / "claude" / "ok-stream-json.stdout").read_text().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj.get("subtype") == "init":
            obj["apiKeySource"] = "none"
        out.append(json.dumps(obj))
    (tmp_path / "login.stdout").write_text("\n".join(out) + "\n")
    env = {"FAKE_CLI_STDOUT": str(tmp_path / "login.stdout"), "FAKE_CLI_STDIN": "read"}
    options = {"executable": str(fake_executable(tmp_path)), "env": env}
    result = await create_llm_adapter("claude", claude=options).complete(ASK)
    assert result.unwrap().usage.billing_route is BillingRoute.subscription


async def test_codex_tokens_without_a_price_by_login_or_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    login = (await _cli(tmp_path, "codex", "ok-json").complete(ASK)).unwrap().usage
    assert login.billing_route is BillingRoute.subscription  # no key handed: the login
    assert login.cost_state is CostState.unpriced
    assert login.cost_usd is None
    keyed = _cli(tmp_path, "codex", "ok-json", env={"CODEX_API_KEY": "sk-test"})
    # the env table replaces the fixture's; give both
    keyed_env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "ok-json.stdout"),
        "FAKE_CLI_STDIN": "read",
        "CODEX_API_KEY": "sk-test",
    }
    keyed = _cli(tmp_path, "codex", "ok-json", env=keyed_env)
    usage = (await keyed.complete(ASK)).unwrap().usage
    assert usage.billing_route is BillingRoute.api_key
    assert usage.cost_state is CostState.unpriced


async def test_a_failed_cli_call_says_its_route_too(tmp_path: Path) -> None:
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "http401.stdout"),
        "FAKE_CLI_EXIT": "1",
        "CODEX_API_KEY": "sk-test",
    }
    llm = create_llm_adapter(
        "codex", codex={"executable": str(fake_executable(tmp_path)), "env": env}
    )
    result = await llm.complete(ASK)
    assert isinstance(result, Failure)
    assert result.failure().usage.billing_route is BillingRoute.api_key
    assert result.failure().usage.cost_state is not None


async def test_openai_compat_on_this_machine_is_local_and_priced_at_zero() -> None:
    with FakeModelServer() as server:
        server.reply("hello")
        llm = create_llm_adapter(
            "openai_compat", openai_compat={"base_url": server.openai_base_url}
        )
        usage = (await llm.complete(ASK)).unwrap().usage
    assert usage.billing_route is BillingRoute.local
    assert usage.cost_state is CostState.priced
    assert usage.cost_usd == 0.0


# ---------------------------------------------------------------- money budgets


def _unpriced(_m: Any, _c: Any) -> CompletionResponse:
    return CompletionResponse(content="ok", usage=Usage(input_tokens=10, output_tokens=5))


async def test_a_money_ceiling_over_unpriced_calls_warns_lower_bound() -> None:
    budget = BudgetAdapter(_Says(_unpriced), Budget(cost_usd=1.0))
    result = await budget.complete(ASK)
    assert any("lower bound" in w for w in result.unwrap().warnings)
    assert budget.unpriced
    assert budget.reached() is None  # warn: it goes on
    assert isinstance(await budget.complete(ASK), Success)


async def test_a_money_ceiling_over_unpriced_calls_can_refuse() -> None:
    budget = BudgetAdapter(_Says(_unpriced), Budget(cost_usd=1.0), on_unpriced="fail")
    assert isinstance(await budget.complete(ASK), Success)  # nothing known before the first
    refused = await budget.complete(ASK)
    assert isinstance(refused, Failure)
    error = refused.failure()
    assert error.kind is ErrorKind.budget_exhausted
    assert "lower bound" in error.message
    assert error.details["unpriced"] is True
    assert error.details["spent"]["cost_state"] == "unpriced"


async def test_a_lower_bound_shows_in_the_ceiling_reason() -> None:
    replies = iter([
        CompletionResponse(content="a", usage=Usage(input_tokens=1)),
        CompletionResponse(content="b", usage=Usage(input_tokens=1, cost_usd=1.2)),
    ])  # fmt: skip
    budget = BudgetAdapter(_Says(lambda _m, _c: next(replies)), Budget(cost_usd=1.0))
    await budget.complete(ASK)
    await budget.complete(ASK)
    why = budget.reached()
    assert why is not None
    assert "(lower bound)" in why
    assert budget.spent.cost_state is CostState.lower_bound


def test_a_bad_on_unpriced_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="on_unpriced"):
        BudgetAdapter(_Says(_unpriced), Budget(cost_usd=1.0), on_unpriced="ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "route", "priced_above_zero"),
    [
        ("openai/gpt-4o-mini", BillingRoute.api_key, True),  # in LiteLLM's price list
        ("openai/fake-model", BillingRoute.local, False),  # unknown, on this machine
    ],
)
async def test_litellm_prices_from_its_own_list_or_is_your_own_server(
    model: str, route: BillingRoute, priced_above_zero: bool
) -> None:
    pytest.importorskip("litellm")
    with FakeModelServer() as server:
        server.reply("hello")
        options = {"model": model, "api_base": server.openai_base_url, "api_key": "sk-fake-1"}
        result = await create_llm_adapter("litellm", litellm=options).complete(ASK)
    usage = result.unwrap().usage
    assert usage.billing_route is route
    assert usage.cost_state is CostState.priced
    assert usage.cost_usd is not None
    assert (usage.cost_usd > 0) is priced_above_zero


async def test_a_failed_chain_says_route_and_cost_too(tmp_path: Path) -> None:
    # neither member installed: nothing was sent, the chain's failure still says both
    missing = {"executable": str(tmp_path / "missing")}
    llm = create_llm_adapter(["codex", "claude"], codex=missing, claude=missing)
    result = await llm.complete(ASK)
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.not_installed
    usage = result.failure().usage
    assert usage.billing_route is BillingRoute.unknown  # claude's catalog has three routes
    assert usage.cost_state is CostState.priced  # never sent: nothing spent
    assert usage.cost_usd == 0.0
