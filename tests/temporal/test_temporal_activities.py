"""The `complete` activity on a real Temporal server: the Result comes back as data, Temporal
retries exactly the kinds that should be retried (no sooner than the backend asked), a
killed worker's call is picked up by another worker, and a worker refuses what it cannot
serve. Pure parts (wire data, retry rule, queues) are tested without a server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from returns.result import Failure, Success
from typer.testing import CliRunner

temporalio = pytest.importorskip("temporalio", reason="needs agentport[temporal]")

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from _temporal_probe import CallArgs, CallWorkflow  # noqa: E402
from _temporal_server import worker_env  # noqa: E402
from agentport.catalog import all_backends  # noqa: E402
from agentport.cli import app  # noqa: E402
from agentport.config import load_settings  # noqa: E402
from agentport.core import (  # noqa: E402
    Attempt,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    Sandbox,
    ToolPolicy,
)
from agentport.temporal import (  # noqa: E402
    CompleteOutput,
    complete,
    concurrency_for,
    config_from_dict,
    config_to_dict,
    error_from_dict,
    error_to_dict,
    plan_worker,
    queue_for,
    retry_decision,
)
from agentport.testing import FakeModelServer, FunctionAdapter, HttpFault, TextReply  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Temporal SDK runs on asyncio only


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

# ---------------------------------------------------------------- the retry rule, pure

# kind -> retried by Temporal (with ProviderError's default `retryable`)
RETRIED = {
    ErrorKind.rate_limited: True,
    ErrorKind.server_error: True,
    ErrorKind.overloaded: True,
    ErrorKind.network: True,
    ErrorKind.timeout: True,
    ErrorKind.quota_exhausted: True,  # when its reset time is known (below)
}


def _error(kind: ErrorKind) -> ProviderError:
    extra: dict[str, Any] = {}
    if kind is ErrorKind.rate_limited:
        extra["retry_after"] = 0.2
    if kind is ErrorKind.quota_exhausted:
        extra["retry_at"] = datetime.now(UTC) + timedelta(seconds=1)
    if kind is ErrorKind.timeout:
        extra["timeout"] = "attempt"
    return ProviderError(kind, f"scripted {kind.value}", backend="scripted", **extra)


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_retry_rule_covers_every_error_kind(kind: ErrorKind) -> None:
    retry, delay = retry_decision(_error(kind), datetime.now(UTC))
    assert retry is RETRIED.get(kind, False)
    if not retry:
        assert delay is None


def test_rate_limit_waits_its_retry_after_and_a_window_until_it_resets() -> None:
    limited = ProviderError(ErrorKind.rate_limited, "slow down", retry_after=7.5)
    assert retry_decision(limited, NOW) == (True, timedelta(seconds=7.5))
    window = ProviderError(
        ErrorKind.quota_exhausted, "window", retry_at=NOW + timedelta(hours=2, seconds=0.2)
    )
    assert retry_decision(window, NOW) == (True, timedelta(hours=2, seconds=1))
    unknown_reset = ProviderError(ErrorKind.quota_exhausted, "window")
    assert retry_decision(unknown_reset, NOW) == (False, None)
    deadline = ProviderError(ErrorKind.timeout, "deadline", timeout="total", retryable=False)
    assert retry_decision(deadline, NOW) == (False, None)
    no_hint = ProviderError(ErrorKind.server_error, "500")
    assert retry_decision(no_hint, NOW) == (True, None)  # the retry policy's back-off


@given(st.floats(min_value=0, max_value=10_000, allow_nan=False))
def test_never_retried_sooner_than_the_backend_asked(seconds: float) -> None:
    limited = ProviderError(ErrorKind.rate_limited, "x", retry_after=seconds)
    _, delay = retry_decision(limited, NOW)
    assert delay is not None
    assert delay.total_seconds() >= seconds - 1e-6
    window = ProviderError(
        ErrorKind.quota_exhausted, "x", retry_at=NOW + timedelta(seconds=seconds)
    )
    _, delay = retry_decision(window, NOW)
    assert delay is not None
    assert window.retry_at is not None
    assert NOW + delay >= window.retry_at


# ---------------------------------------------------------------- wire data, pure


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_a_typed_failure_survives_the_wire(kind: ErrorKind) -> None:
    error = ProviderError(
        kind, "boom", backend="codex", retry_after=3.0, exit_code=2, status=429,
        stderr_tail="tail", raw_text="raw", details={"k": "v"}, window="weekly",
        retry_at=NOW, timeout="idle",
        attempts=(Attempt(kind, 1.5, exit_code=2, backend="codex", timeout="idle"),),
    )  # fmt: skip
    back = error_from_dict(error_to_dict(error))
    assert error_to_dict(back) == error_to_dict(error)
    assert str(back) == str(error)


class Answer(BaseModel):
    claim: str
    votes: int


def test_config_keeps_exactly_the_fields_the_caller_set() -> None:
    config = CompletionConfig(
        model="m", total_timeout_s=12, output_schema=Answer,
        tools=ToolPolicy(sandbox=Sandbox.workspace_write), cwd=Path("/tmp/x"),
    )  # fmt: skip
    back = config_from_dict(config_to_dict(config))
    assert back.model_fields_set == config.model_fields_set
    assert (back.model, back.total_timeout_s, back.cwd) == ("m", 12, Path("/tmp/x"))
    assert back.tools == config.tools
    assert back.output_schema == Answer.model_json_schema()
    assert config_to_dict(None) == {} == config_to_dict(CompletionConfig())


def test_output_comes_back_as_the_result_with_the_callers_model() -> None:
    response = CompletionResponse(content='{"claim": "c", "votes": 3}', parsed={"claim": "c",
                                  "votes": 3}, backend="scripted")  # fmt: skip
    result = CompleteOutput.of(Success(response)).to_result(Answer)
    assert result.unwrap().parsed == Answer(claim="c", votes=3)
    wrong = response.model_copy(update={"parsed": {"claim": "c"}})
    mismatch = CompleteOutput.of(Success(wrong)).to_result(Answer)
    assert mismatch.failure().kind is ErrorKind.schema_mismatch
    failed = CompleteOutput.of(Failure(ProviderError(ErrorKind.auth_required, "login")))
    assert failed.to_result().failure().kind is ErrorKind.auth_required


# ---------------------------------------------------------------- queues and capacity


def test_a_queue_per_backend_named_by_its_canonical_name() -> None:
    assert queue_for("claude-code") == "agentport.claude"
    assert queue_for("codex", prefix="team") == "team.codex"
    assert queue_for("codex,claude") == "agentport.codex+claude"
    for bad in ("auto", "nope", "codex,auto"):
        with pytest.raises(ProviderError) as info:
            queue_for(bad)
        assert info.value.kind is ErrorKind.config


def test_concurrency_from_config_else_the_kinds_default() -> None:
    assert concurrency_for("codex") == 2
    assert concurrency_for("codex", {"codex": 5}) == 5
    assert concurrency_for("claude-code", {"claude": 1}) == 1
    assert concurrency_for("codex,claude", {"claude": 1}) == 1
    with pytest.raises(ProviderError):
        concurrency_for("codex", {"codex": 0})
    for cap in all_backends():
        assert concurrency_for(cap.name) >= 1


def test_temporal_table_is_validated_and_ignored_from_untrusted_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = Path(os.environ["AGENTPORT_CONFIG_FILE"])
    user.write_text('[temporal]\naddress = "10.0.0.5:7233"\nconcurrency = {codex = 3}\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "agentport.toml").write_text('[temporal]\naddress = "evil:7233"\n')
    with pytest.warns(UserWarning, match="temporal ignored"):
        settings = load_settings(project)
    assert settings.temporal.address == "10.0.0.5:7233"
    assert settings.temporal.concurrency == {"codex": 3}
    user.write_text("[temporal]\nconcurrency = {codex = 0}\n")
    with pytest.raises(ProviderError, match="concurrency"):
        load_settings(tmp_path)


def test_worker_refuses_a_queue_whose_cli_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path))  # no agent CLI on PATH
    with pytest.raises(ProviderError) as info:
        plan_worker(["scripted", "codex"])
    assert info.value.kind is ErrorKind.not_installed
    assert "queue agentport.codex" in info.value.message
    result = CliRunner().invoke(app, ["worker", "--temporal", "127.0.0.1:1", "-b", "codex"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "refusing to serve queue agentport.codex" in lines[0]


def test_unreachable_server_is_one_line() -> None:
    with socket_closed_port() as port:
        result = CliRunner().invoke(
            app, ["worker", "--temporal", f"127.0.0.1:{port}", "-b", "scripted", "--no-workflows"]
        )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [
        f"agentport: network: cannot reach the Temporal server at 127.0.0.1:{port}: "
        "connection refused"
    ]
    bad = CliRunner().invoke(app, ["worker", "--temporal", "no-port", "-b", "scripted"])
    assert bad.exit_code == 2
    assert "HOST:PORT" in bad.output


def socket_closed_port() -> Any:
    import contextlib
    import socket

    @contextlib.contextmanager
    def closed() -> Iterator[int]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        yield port  # bound then released: nothing listens there

    return closed()


# ---------------------------------------------------------------- on the real server


@asynccontextmanager
async def serving(address: str, backend: str) -> AsyncIterator[tuple[Client, str]]:
    """An in-process worker for the probe workflow and *backend*'s queue (fresh prefix)."""
    client = await Client.connect(address)
    prefix = f"t{uuid.uuid4().hex[:8]}"
    probe = Worker(client, task_queue=prefix + ".probe", workflows=[CallWorkflow])
    calls = Worker(client, task_queue=queue_for(backend, prefix), activities=[complete])
    async with probe, calls:
        yield client, prefix


async def run_call(client: Client, args: CallArgs) -> CompleteOutput:
    return await client.execute_workflow(
        CallWorkflow.run, args, id=f"{args.prefix}-{args.call_id}",
        task_queue=args.prefix + ".probe", result_type=CompleteOutput,
    )  # fmt: skip


@pytest.mark.anyio
async def test_the_result_comes_back_as_data(temporal_server: str) -> None:
    async with serving(temporal_server, "scripted") as (client, prefix):
        ok = await run_call(client, CallArgs("scripted", "hello", prefix))
        assert ok.error is None
        assert ok.to_result().unwrap().content == "ok"  # `[llm.scripted] default`


@pytest.mark.anyio
async def test_each_error_kind_is_retried_or_returned_as_a_value(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One workflow per ErrorKind: a backend that fails once with that kind, then answers.
    Retried kinds answer on the second call; the others come back as the typed failure
    after exactly one call."""
    import anyio

    calls: dict[str, int] = {}

    def adapter(backend: str | None = None, **overrides: Any) -> FunctionAdapter:
        def reply(messages: list[Message], config: CompletionConfig) -> Any:
            kind = ErrorKind(messages[-1].content)
            calls[kind.value] = calls.get(kind.value, 0) + 1
            if calls[kind.value] == 1:
                return _error(kind)
            return f"answered {kind.value}"

        assert overrides["retry_attempts"] == 1  # Temporal owns the retries
        return FunctionAdapter(reply)

    monkeypatch.setattr("agentport.factory.create_llm_adapter", adapter)
    outputs: dict[ErrorKind, CompleteOutput] = {}
    async with serving(temporal_server, "scripted") as (client, prefix):

        async def one(kind: ErrorKind) -> None:
            args = CallArgs("scripted", kind.value, prefix, call_id=kind.value)
            outputs[kind] = await run_call(client, args)

        async with anyio.create_task_group() as group:
            for kind in ErrorKind:
                group.start_soon(one, kind)
    for kind in ErrorKind:
        if RETRIED.get(kind, False):
            assert calls[kind.value] == 2, kind
            assert outputs[kind].to_result().unwrap().content == f"answered {kind.value}"
        else:
            assert calls[kind.value] == 1, kind  # never retried
            assert outputs[kind].to_result().failure().kind is kind


def _fake_settings(server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The worker's own configuration points openai_compat at *server* (a worker takes its
    endpoint and key from its own config, never from workflow input); the call's input
    carries only the model name."""
    import tempfile

    config = Path(tempfile.mkdtemp()) / "worker.toml"
    config.write_text(
        f'[llm.openai_compat]\nbase_url = "{server.openai_base_url}"\n'
        'api_key = "sk-fake-0123456789"\n'
    )
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    return {"model": "fake-model"}


FAST = {"startup_timeout_s": 10, "idle_timeout_s": 10, "total_timeout_s": 60}


@pytest.mark.anyio
async def test_a_rate_limited_backend_waits_for_retry_after_instead_of_failing(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer(shutdown_timeout=1.0) as server:
        server.script(HttpFault.rate_limited(retry_after=1), TextReply("after the wait"))
        async with serving(temporal_server, "openai_compat") as (client, prefix):
            settings = _fake_settings(server, monkeypatch)
            args = CallArgs("openai_compat", "q", prefix, settings=settings, config=FAST)
            output = await run_call(client, args)
        first, second = server.model_requests  # one refused request, one answered: no more
    assert output.to_result().unwrap().content == "after the wait"
    assert second.received_at - first.received_at >= 1.0  # not sooner than Retry-After


@pytest.mark.anyio
async def test_a_call_longer_than_the_heartbeat_timeout_is_kept_alive(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without heartbeats a 3 s call under a 1 s heartbeat timeout would be timed out and
    made again; with them it is made once."""
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer(shutdown_timeout=1.0) as server:
        server.reply(TextReply("slow but alive", delay=3.0))
        async with serving(temporal_server, "openai_compat") as (client, prefix):
            settings = _fake_settings(server, monkeypatch)
            args = CallArgs("openai_compat", "q", prefix, settings=settings,
                            config=FAST, heartbeat_s=1.0, attempts=1)  # fmt: skip
            output = await run_call(client, args)
        assert len(server.model_requests) == 1
    assert output.to_result().unwrap().content == "slow but alive"


def _start_worker(address: str, prefix: str) -> tuple[subprocess.Popen[str], list[str]]:
    """`agentport worker` for openai_compat (no workflows) as a subprocess, once it polls."""
    import threading

    env = worker_env() | {"AGENTPORT_ALLOW_REAL_BACKENDS": "1"}
    argv = [sys.executable, "-m", "agentport", "worker", "--temporal", address,
            "--backend", "openai_compat", "--queue-prefix", prefix, "--no-workflows"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip())
            if "ready" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(60):
        proc.kill()
        pytest.fail(f"worker did not start: {lines}")
    return proc, lines


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_killed_workers_call_is_picked_up_by_another_worker(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    client = await Client.connect(temporal_server)
    prefix = f"k{uuid.uuid4().hex[:8]}"
    workers: list[subprocess.Popen[str]] = []
    try:
        with FakeModelServer(shutdown_timeout=1.0) as server:
            server.script(TextReply("never sent", delay=600), TextReply("from the second worker"))
            settings = _fake_settings(server, monkeypatch)  # before the workers start
            first, lines = _start_worker(temporal_server, prefix)
            workers.append(first)
            assert any("agentport.openai_compat" not in ln and f"{prefix}.openai_compat" in ln
                       for ln in lines)  # fmt: skip
            probe = Worker(client, task_queue=prefix + ".probe", workflows=[CallWorkflow])
            async with probe:
                args = CallArgs("openai_compat", "q", prefix, settings=settings,
                                config=FAST, heartbeat_s=2.0)  # fmt: skip
                handle = await client.start_workflow(
                    CallWorkflow.run, args, id=f"{prefix}-kill", task_queue=prefix + ".probe",
                    result_type=CompleteOutput, execution_timeout=timedelta(seconds=90),
                )  # fmt: skip
                await anyio.to_thread.run_sync(server.wait_for_requests, 1, 60.0)
                os.kill(first.pid, signal.SIGKILL)  # mid-call
                first.wait(10)
                second, _ = _start_worker(temporal_server, prefix)
                workers.append(second)
                output = await handle.result()
            requests = server.model_requests
        assert output.to_result().unwrap().content == "from the second worker"
        assert len(requests) == 2  # the killed call, made once more; nothing else
    finally:
        for proc in workers:
            proc.kill()
            proc.wait(10)


def test_the_worker_without_the_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['temporalio'] = None; sys.argv = ['agentport', 'worker', "
        "'--temporal', '127.0.0.1:7233', '-b', 'scripted']; from agentport.cli import main; main()"
    )
    env = worker_env() | {"PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=False)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "agentport: agentport.temporal needs the Temporal SDK: pip install 'agentport[temporal]'"
    ]


@pytest.mark.anyio
async def test_calls_of_a_backend_never_exceed_its_cap_times_the_workers(
    temporal_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers with `concurrency = {scripted = 2}`, ten calls at once: never more than
    four run at the same time, and all ten finish."""
    import anyio

    from agentport.temporal import run_worker

    running = 0
    peak = 0

    async def slow(messages: list[Message], config: CompletionConfig) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.3)
        running -= 1
        return "done"

    monkeypatch.setattr(
        "agentport.factory.create_llm_adapter", lambda *a, **k: FunctionAdapter(slow)
    )
    client = await Client.connect(temporal_server)
    prefix = f"c{uuid.uuid4().hex[:8]}"
    ready = anyio.Event()
    started: list[str] = []

    def on_ready(plan: Any) -> None:
        started.append(plan.describe()[0])
        if len(started) == 2:
            ready.set()

    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(
                lambda: run_worker(
                    temporal_server,
                    ["scripted"],
                    prefix=prefix,
                    concurrency={"scripted": 2},
                    workflows=False,
                    on_ready=on_ready,
                )
            )
        await ready.wait()
        outputs: list[CompleteOutput] = []
        async with Worker(client, task_queue=prefix + ".probe", workflows=[CallWorkflow]):

            async def one(i: int) -> None:
                outputs.append(await run_call(client, CallArgs("scripted", "q", prefix,
                                                               call_id=f"n{i}")))  # fmt: skip

            async with anyio.create_task_group() as calls:
                for i in range(10):
                    calls.start_soon(one, i)
        group.cancel_scope.cancel()
    assert started[0].endswith("at most 2 call(s) at once on this worker")
    assert [o.to_result().unwrap().content for o in outputs] == ["done"] * 10
    assert 1 <= peak <= 4


def test_every_exported_name_exists() -> None:
    import agentport.temporal

    for name in agentport.temporal.__all__:
        assert hasattr(agentport.temporal, name), name
