"""The grok backend (npm `@vibe-kit/grok-cli` 0.0.34): its argv, its least-privilege refusal,
its output and error table on the lines the real CLI prints, and the REAL binary
(.ci/steps/21-more-agent-clis) driven the way its own README configures it (`GROK_BASE_URL`,
`GROK_API_KEY`) against `FakeModelServer`: an answer, an opt-in tool run, an API error, a
quota message, a hang under a deadline, and the default no-tools policy refused before the
CLI starts. Loopback only: run under `unshare -n` (scripts/test.sh)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Failure, Success

from _helpers import cli_call
from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport.backends import CliCall, grok
from agentport.backends._spec import RunOutcome
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    Message,
    ProviderError,
    Sandbox,
    ToolPolicy,
)
from agentport.testing import FakeModelServer, Hang, HttpFault, ToolCallReply

ALL_TOOLS = ToolPolicy.cli_defaults()


def _call(tmp_path: Path, config: CompletionConfig, **options: Any) -> CliCall:
    return cli_call(tmp_path, config, executable="grok", prompt="-rf hi", options=options)


@pytest.mark.parametrize(
    "tools",
    [ToolPolicy(), ToolPolicy(allowed_tools=("bash",)), ToolPolicy(sandbox=Sandbox.read_only),
     ToolPolicy(allowed_tools=None, sandbox=Sandbox.workspace_write)],
)  # fmt: skip
def test_every_policy_but_all_tools_is_refused(tmp_path: Path, tools: ToolPolicy) -> None:
    """grok -p approves every tool it has (checked: `bash` ran with --max-tool-rounds 0), so
    a policy it cannot enforce fails closed."""
    with pytest.raises(ProviderError) as caught:
        grok.build(_call(tmp_path, CompletionConfig(tools=tools)))
    assert caught.value.kind is ErrorKind.unsupported
    assert "approves every tool" in caught.value.message


def test_argv_keeps_the_prompt_a_value_and_the_key_out_of_argv(tmp_path: Path) -> None:
    config = CompletionConfig(tools=ALL_TOOLS, model="grok-4", max_tokens=99)
    inv = grok.build(_call(tmp_path, config, base_url="http://127.0.0.1:9/v1", api_key="sk-x"))
    assert inv.argv[-1] == "--prompt=-rf hi"  # a prompt starting with '-' stays a value
    assert f"--directory={tmp_path}" in inv.argv
    assert "--model=grok-4" in inv.argv
    assert not any("sk-x" in a or a in ("-k", "-u", "--api-key", "--base-url") for a in inv.argv)
    assert inv.env == {
        "GROK_BASE_URL": "http://127.0.0.1:9/v1", "GROK_API_KEY": "sk-x", "GROK_MAX_TOKENS": "99",
    }  # fmt: skip
    assert inv.passthrough == ()  # a custom endpoint gets no key from the environment
    own = grok.build(_call(tmp_path, CompletionConfig(tools=ALL_TOOLS)))
    assert "GROK_API_KEY" in own.passthrough


# what grok-cli 0.0.34 printed against FakeModelServer (an answer after a tool, an API error)
ANSWER = [
    {"role": "user", "content": "say hi"},
    {"role": "assistant", "content": "Using tools to help you...", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Command executed successfully"},
    {"role": "assistant", "content": "hello from fake"},
]  # fmt: skip


def _outcome(lines: list[dict[str, Any]], code: int = 0) -> RunOutcome:
    events = [e for e in (grok.decode(line) for line in lines) if e is not None]
    return RunOutcome(exit_code=code, events=events, stderr_tail="")


def test_the_answer_is_the_last_assistant_message() -> None:
    outcome = _outcome(ANSWER)
    assert grok.classify(outcome) is None
    assert grok.final_text(outcome.events) == "hello from fake"
    assert [e.type.value for e in outcome.events] == ["tool_call", "tool_result", "text"]


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [(429, "Rate limit reached for requests", ErrorKind.rate_limited),
     (401, "fake: invalid api key", ErrorKind.auth_required),
     (500, "fake: internal server error", ErrorKind.server_error),
     (400, "bad model", ErrorKind.invalid_request)],
)  # fmt: skip
def test_an_api_error_with_exit_0_is_a_failure(status: int, message: str, kind: ErrorKind) -> None:
    text = f"Sorry, I encountered an error: Grok API error: {status} {message}"
    error = grok.classify(_outcome([{"role": "assistant", "content": text}]))
    assert error is not None
    assert (error.kind, error.status) == (kind, status)
    assert message in error.message


def test_a_crash_and_an_empty_run_are_failures() -> None:
    crash = grok.classify(_outcome([{"role": "assistant", "content": "Error: boom"}], code=1))
    assert crash is not None
    assert (crash.kind, crash.message) == (ErrorKind.process_failed, "Error: boom")
    empty = grok.classify(_outcome([{"role": "user", "content": "q"}]))
    assert empty is not None
    assert empty.kind is ErrorKind.bad_output


# ------------------------------------------------------------------- the real binary

EXE = cli_executable("grok")
real = pytest.mark.skipif(
    EXE is None or not network_isolated(),
    reason="grok not installed (.ci/steps/21-more-agent-clis) or network not isolated",
)


@pytest.fixture(autouse=True)
def _allow_the_real_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")


def _adapter(srv: FakeModelServer, **llm: Any) -> Any:
    options = {"executable": str(EXE), "base_url": srv.openai_base_url, "api_key": "test-key"}
    return create_llm_adapter("grok", retry=False, grok=options, **llm)


@real
def test_real_grok_answers_and_runs_its_tools_only_when_opted_in(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    with FakeModelServer() as srv:
        srv.reply(ToolCallReply("bash", {"command": f"echo ran > {marker}"}, then="all done"))
        adapter = _adapter(srv)

        async def main() -> tuple[Any, Any]:
            refused = await adapter.complete([Message.user("hi")])
            ran = await adapter.complete(
                [Message.system("Be brief."), Message.user("run it")],
                CompletionConfig(tools=ALL_TOOLS, max_tokens=64),
            )
            return refused, ran

        refused, ran = anyio.run(main)
        requests = srv.model_requests
    assert isinstance(refused, Failure)
    assert refused.failure().kind is ErrorKind.unsupported
    assert isinstance(ran, Success), ran
    assert ran.unwrap().content == "all done"
    assert marker.read_text().strip() == "ran"  # the opted-in tool really ran
    assert len(requests) == 2  # the refused call never started the CLI
    first = requests[0].body
    assert first["max_tokens"] == 64
    assert first["messages"][-1]["content"].startswith("System instructions:\nBe brief.")


@real
@pytest.mark.parametrize(
    ("fault", "kind"),
    [(HttpFault(401), ErrorKind.auth_required),
     (HttpFault(429, "You exceeded your current quota, please check your plan"),
      ErrorKind.quota_exhausted)],
)  # fmt: skip
def test_real_grok_api_errors_are_typed_failures(fault: HttpFault, kind: ErrorKind) -> None:
    with FakeModelServer() as srv:
        srv.set_default(fault)
        result = anyio.run(
            lambda: _adapter(srv).complete([Message.user("hi")], CompletionConfig(tools=ALL_TOOLS))
        )
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is kind, error
    assert error.status == fault.status


@real
def test_catalog_records_the_version_the_binary_prints() -> None:
    import subprocess

    from agentport.catalog import get_capability

    out = subprocess.run(
        [str(EXE), "--version"], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    verified = get_capability("grok").verified_against
    assert verified is not None
    assert verified in out.stdout, (verified, out.stdout)


@real
def test_real_grok_hang_ends_at_the_deadline() -> None:
    with FakeModelServer() as srv:
        srv.set_default(Hang())
        started = time.monotonic()
        result = anyio.run(
            lambda: _adapter(srv, total_timeout_s=6).complete(
                [Message.user("hi")], CompletionConfig(tools=ALL_TOOLS)
            )
        )
        elapsed = time.monotonic() - started
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.timeout, result
    assert elapsed < 20, elapsed
