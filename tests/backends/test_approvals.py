"""Typed approvals: the option-choice rule (a hypothesis property over every option order),
the one decision path every backend goes through (`decide`: policy first, hook deadline,
a raising hook), and the ACP answers against the fake ACP agent."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _fake_clis_util import FAKE_CLIS
from agentport.backends._acp_wire import permission_request
from agentport.backends._approval_server import (
    ApprovalEndpoint,
    approval_server,
    claude_policy_allows,
)
from agentport.backends._approvals import POLICY_DENIES, decide
from agentport.backends.claude import tool_flags as claude_tool_flags
from agentport.catalog import all_backends
from agentport.core import (
    Allow,
    CompletionConfig,
    Deny,
    ErrorKind,
    EventType,
    Message,
    OptionKind,
    Param,
    ParamSupport,
    PermissionKind,
    PermissionOption,
    PermissionRequest,
    Sandbox,
    ToolPolicy,
)
from agentport.core._approvals import SUMMARY_CHARS, choose_option
from agentport.core._redact import register_secret
from agentport.factory import create_agent_runtime, create_llm_adapter

pytestmark = pytest.mark.anyio
AGENT = FAKE_CLIS / "fake_acp_agent.py"

# ---------------------------------------------------------------- the option-choice rule

_options = st.lists(
    st.builds(
        PermissionOption,
        option_id=st.text(min_size=1, max_size=8),
        kind=st.sampled_from([*OptionKind, None]),
        name=st.text(max_size=8),
    ),
    max_size=8,
).flatmap(st.permutations)
_decisions = st.sampled_from([Allow(), Deny("no")])


@given(_options, _decisions)
def test_the_chosen_option_always_carries_the_decision(
    options: list[PermissionOption], decision: Allow | Deny
) -> None:
    chosen = choose_option(options, decision)
    allow = isinstance(decision, Allow)
    matching = {
        OptionKind.allow_once, OptionKind.allow_always
    } if allow else {OptionKind.reject_once, OptionKind.reject_always}  # fmt: skip
    if not any(o.kind in matching for o in options):
        assert chosen is None  # the caller refuses (ACP: the cancelled outcome)
        return
    assert chosen is not None
    assert chosen.kind in matching
    once = OptionKind.allow_once if allow else OptionKind.reject_once
    if any(o.kind is once for o in options):
        assert chosen.kind is once  # never a standing grant when a one-off exists


def test_the_first_option_is_not_taken_for_an_allow() -> None:
    options = [
        PermissionOption("always", OptionKind.allow_always),
        PermissionOption("no", OptionKind.reject_once),
        PermissionOption("once", OptionKind.allow_once),
    ]
    assert choose_option(options, Allow()) == options[2]
    assert choose_option(options, Deny()) == options[1]
    assert choose_option(options[:1], Deny()) is None  # an allow is never sent for a deny


def test_an_acp_request_is_typed_redacted_and_bounded() -> None:
    secret = "sk-approvals-test-0123456789abcdef"
    register_secret(secret)
    call = {
        "toolCallId": "run_shell_command__1",
        "title": "curl",
        "kind": "execute",
        "rawInput": {"command": f"curl -H 'x: {secret}' " + "a" * 2000},
    }
    options = [{"optionId": "x", "kind": "allow_once"}, {"optionId": "y", "kind": "frobnicate"}]
    request = permission_request("acp", call, options)
    assert request.kind is PermissionKind.execute
    assert request.tool == "curl"
    assert request.call_id == "run_shell_command__1"
    assert secret not in request.input_summary
    assert len(request.input_summary) <= SUMMARY_CHARS
    assert [o.kind for o in request.options] == [OptionKind.allow_once, None]
    with pytest.raises(AttributeError):
        request.tool = "other"  # type: ignore[misc]


# ---------------------------------------------------------------- decide


REQUEST = PermissionRequest(backend="acp", tool="touch", kind=PermissionKind.execute)


async def test_the_policy_denies_before_the_hook_is_asked() -> None:
    asked: list[PermissionRequest] = []

    def hook(request: PermissionRequest) -> Allow:
        asked.append(request)
        return Allow()

    config = CompletionConfig(on_permission=hook)
    assert await decide(REQUEST, config, policy_allows=False) == Deny(POLICY_DENIES)
    assert asked == []
    assert await decide(REQUEST, config) == Allow()
    assert asked == [REQUEST]


async def test_sync_and_async_hooks_both_decide() -> None:
    async def deny(request: PermissionRequest) -> Deny:
        return Deny(f"not {request.tool}")

    assert await decide(REQUEST, CompletionConfig(on_permission=deny)) == Deny("not touch")
    assert await decide(REQUEST, CompletionConfig(on_permission=lambda r: Allow())) == Allow()


async def test_a_hook_that_raises_or_answers_nonsense_is_a_deny_with_the_reason() -> None:
    def broken(request: PermissionRequest) -> Allow:
        raise RuntimeError("database down")

    decision = await decide(REQUEST, CompletionConfig(on_permission=broken))
    assert isinstance(decision, Deny)
    assert "RuntimeError: database down" in decision.reason
    odd = await decide(REQUEST, CompletionConfig(on_permission=lambda r: True))  # type: ignore[arg-type,return-value]
    assert isinstance(odd, Deny)
    assert "bool" in odd.reason


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
async def test_no_answer_within_the_deadline_is_a_deny(sync: bool) -> None:
    release = threading.Event()

    def blocks(request: PermissionRequest) -> Allow:
        release.wait(5)  # a terminal prompt nobody answers
        return Allow()

    async def sleeps(request: PermissionRequest) -> Allow:
        await anyio.sleep(5)
        return Allow()

    config = CompletionConfig(on_permission=blocks if sync else sleeps, permission_timeout_s=0.2)
    started = time.monotonic()
    decision = await decide(REQUEST, config)
    release.set()
    assert isinstance(decision, Deny)
    assert "did not answer within 0.2s" in decision.reason
    assert time.monotonic() - started < 2


# ---------------------------------------------------------------- the catalog


def test_every_backend_declares_approvals_and_acp_claude_codex_ask_natively() -> None:
    native = {c.name for c in all_backends() if c.support(Param.approvals) is ParamSupport.NATIVE}
    assert native == {"acp", "claude", "codex"}
    for c in all_backends():
        assert Param.approvals in c.notes, (
            f"{c.name}: say why approvals are {c.support(Param.approvals)}"
        )


async def test_a_hook_on_a_backend_that_cannot_ask_is_never_silent() -> None:
    config = CompletionConfig(on_permission=lambda r: Allow())
    adapter = create_llm_adapter("echo", retry=False)
    response = (await adapter.complete([Message.user("hi")], config)).unwrap()
    assert any("ignores approvals" in w for w in response.warnings)
    strict = config.model_copy(update={"on_ignored": "fail"})
    error = (await adapter.complete([Message.user("hi")], strict)).failure()
    assert error.kind is ErrorKind.unsupported
    assert "approvals" in error.message


# ---------------------------------------------------------------- ACP, the fake agent


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    path = tmp_path / "received.jsonl"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    monkeypatch.setenv("FAKE_SCENARIO", "tool")
    monkeypatch.setenv("AGENTPORT_INHERIT_ENV", "FAKE_*")
    return path


def _answers(record: Path) -> list[dict[str, Any]]:
    msgs = [json.loads(line) for line in record.read_text().splitlines()]
    return [m["result"]["outcome"] for m in msgs if "result" in m]


_ACP = {"command": [sys.executable, str(AGENT)]}


@pytest.mark.parametrize(
    ("answer", "option"),
    [(Allow(), "proceed_once"), (Deny("not today"), "cancel")],
)
async def test_acp_answers_with_the_option_of_the_hooks_decision(
    record: Path, answer: Allow | Deny, option: str
) -> None:
    asked: list[PermissionRequest] = []

    def hook(request: PermissionRequest) -> Allow | Deny:
        asked.append(request)
        return answer

    config = CompletionConfig(tools=ToolPolicy.cli_defaults(), on_permission=hook)
    adapter = create_llm_adapter("acp", retry=False, acp=_ACP)
    response = (await adapter.complete([Message.user("make a file")], config)).unwrap()
    assert _answers(record)[0] == {"outcome": "selected", "optionId": option}
    assert [(r.backend, r.tool, r.kind) for r in asked] == [
        ("acp", "touch made.txt", PermissionKind.execute)
    ]
    assert {o.option_id for o in asked[0].options} == {"proceed_always", "proceed_once", "cancel"}
    assert response.raw.extra["permissions"][0]["allowed"] is isinstance(answer, Allow)


async def test_acp_hook_never_widens_the_tool_policy(record: Path) -> None:
    asked: list[PermissionRequest] = []

    def hook(request: PermissionRequest) -> Allow:
        asked.append(request)
        return Allow()

    adapter = create_llm_adapter("acp", retry=False, acp=_ACP)
    config = CompletionConfig(on_permission=hook)  # the default policy: no tools
    response = (await adapter.complete([Message.user("make a file")], config)).unwrap()
    assert asked == []
    assert _answers(record)[0] == {"outcome": "selected", "optionId": "cancel"}
    assert response.raw.extra["permissions"][0]["reason"] == POLICY_DENIES


async def test_acp_runtime_streams_a_typed_denial_and_the_deadline_denies(record: Path) -> None:
    async def slow(request: PermissionRequest) -> Allow:
        await anyio.sleep(30)
        return Allow()

    config = CompletionConfig(
        tools=ToolPolicy.cli_defaults(), on_permission=slow, permission_timeout_s=0.3
    )
    async with create_agent_runtime("acp", acp=_ACP) as runtime:
        events = [e async for e in runtime.send("make a file", config)]
    denied = [e for e in events if e.type is EventType.permission_denied]
    assert len(denied) == 1
    request = denied[0].metadata["request"]
    assert isinstance(request, PermissionRequest)
    assert request.kind is PermissionKind.execute
    assert "did not answer within 0.3s" in denied[0].metadata["reason"]
    assert _answers(record)[0] == {"outcome": "selected", "optionId": "cancel"}
    tool_results = [e for e in events if e.type is EventType.tool_result]
    assert tool_results[0].is_error  # the agent did not run it
    assert events[-1].type is EventType.final


# ---------------------------------------------------------------- claude


@pytest.mark.parametrize(
    ("tools", "tool", "args", "allowed"),
    [
        (ToolPolicy(), "Bash", {}, False),  # no tools: nothing may run
        (ToolPolicy(allowed_tools=("Read",)), "Bash", {}, False),  # not listed
        (ToolPolicy(sandbox=Sandbox.read_only), "Write", {"file_path": "x"}, False),
        (ToolPolicy(sandbox=Sandbox.read_only), "Read", {"file_path": "/etc/x"}, True),
        (ToolPolicy(sandbox=Sandbox.workspace_write), "Write", {"file_path": "a/b"}, True),
        (ToolPolicy(sandbox=Sandbox.workspace_write), "Write", {"file_path": "/etc/x"}, False),
        (ToolPolicy(sandbox=Sandbox.workspace_write), "Edit", {"file_path": "../x"}, False),
        (ToolPolicy(sandbox=Sandbox.workspace_write), "Bash", {}, False),
        (ToolPolicy(allowed_tools=("Bash",), sandbox=Sandbox.full), "Bash", {}, True),
        (ToolPolicy.cli_defaults(), "mcp__other__tool", {}, True),
    ],
)
def test_claude_policy_bounds_what_the_hook_may_allow(
    tools: ToolPolicy, tool: str, args: dict[str, Any], allowed: bool, tmp_path: Path
) -> None:
    assert claude_policy_allows(tool, args, tools, tmp_path) is allowed


def test_claude_argv_asks_the_prompt_tool_and_never_preapproves() -> None:
    endpoint = ApprovalEndpoint("http://127.0.0.1:1/mcp", "tok")
    listed = ToolPolicy(allowed_tools=("Bash",), sandbox=Sandbox.full)
    flags = claude_tool_flags(listed, asks=True)
    assert "--tools=Bash" in flags
    assert not [f for f in flags if f.startswith("--allowedTools")]
    assert "--permission-mode=bypassPermissions" not in flags  # it would never ask
    assert "--permission-mode=bypassPermissions" in claude_tool_flags(listed)
    config = json.loads(endpoint.mcp_config())
    server = config["mcpServers"]["agentport_approvals"]
    assert server == {
        "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer tok"}
    }  # fmt: skip


async def test_the_approval_server_refuses_a_caller_without_the_token() -> None:
    pytest.importorskip("mcp", reason="the approval server needs the mcp extra")
    import httpx

    asked: list[PermissionRequest] = []

    def hook(request: PermissionRequest) -> Allow:
        asked.append(request)
        return Allow()

    async def emit(event: Any) -> None:
        pass

    config = CompletionConfig(on_permission=hook)
    async with approval_server("claude", config, emit) as endpoint:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as client:
            for token in (None, "wrong", endpoint.token[:-1]):
                sent = headers | ({"Authorization": f"Bearer {token}"} if token else {})
                answer = await client.post(endpoint.url, json=body, headers=sent)
                assert answer.status_code == 401
            good = headers | {"Authorization": f"Bearer {endpoint.token}"}
            answer = await client.post(endpoint.url, json=body, headers=good)
            assert answer.status_code != 401
    assert asked == []


# ---------------------------------------------------------------- workflows: least privilege

_ACP_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
_CLAUDE_TOOLS = ["Bash", "Write", "Edit", "Read", "WebFetch", "WebSearch", "mcp__x__y"]


@pytest.mark.parametrize("kind", _ACP_KINDS)
@pytest.mark.parametrize("tool", _CLAUDE_TOOLS)
async def test_an_allow_all_hook_never_widens_the_workflows_no_tools_policy(
    kind: str, tool: str, tmp_path: Path
) -> None:
    # what deep research and DeepRefine give their agents: ToolPolicy.none()
    from agentport.backends._acp_wire import permission_allowed

    config = CompletionConfig(tools=ToolPolicy.none(), on_permission=lambda r: Allow())
    acp = permission_allowed({"kind": kind}, config.tools, tmp_path, hook=True)
    claude = claude_policy_allows(tool, {"file_path": "x"}, config.tools, tmp_path)
    for policy in (acp, claude):
        decision = await decide(REQUEST, config, policy_allows=policy)
        assert decision == Deny(POLICY_DENIES)
    assert claude_tool_flags(config.tools, asks=True)[0] == "--tools="  # claude offers none


def test_a_hook_cannot_travel_to_a_temporal_worker() -> None:
    pytest.importorskip("temporalio")
    from agentport.temporal._data import config_from_dict, config_to_dict

    with pytest.raises(ValueError, match="on_permission cannot travel to a Temporal worker"):
        config_to_dict(CompletionConfig(on_permission=lambda r: Allow()))
    plain = CompletionConfig(permission_timeout_s=5)
    assert config_from_dict(config_to_dict(plain)) == plain
