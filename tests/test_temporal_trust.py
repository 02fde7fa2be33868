"""A Temporal worker trusts only its own configuration: any client of the namespace writes
workflow and activity input, so that input may name a backend the worker serves, a model,
timeouts, questions and files under the worker's roots; never an executable, an endpoint,
a key, an environment, the search engine or `allow_private`, and no secret travels in it.

Regressions: another client could start `agentport.batch` with
`settings.pi.executable = /tmp/evil.sh` (run on the worker), `settings.openai_compat.base_url
= attacker` (the worker's key sent there), read and write any path through the file
activities, and the SearxNG URL's password was stored in the workflow history.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

pytest.importorskip("temporalio")

from temporalio.exceptions import ApplicationError

from _temporal_server import WorkerProcess, temporal_server  # noqa: F401
from agentport.core import ErrorKind
from agentport.temporal import _activities, _batch
from agentport.temporal._data import CompleteInput
from agentport.temporal._worker import serving_only
from agentport.web import WebSettings, narrow_web, without_secrets
from agentport.web._search import SearxngProvider
from agentport.web._types import SearchError

HOSTILE = [
    {"pi": {"executable": "/tmp/evil.sh"}},
    {"openai_compat": {"base_url": "http://attacker.example/v1"}},
    {"openai_compat": {"api_key_env": "AWS_SECRET_ACCESS_KEY"}},
    {"acp": {"command": ["/bin/sh", "-c", "id"]}},
    {"codex": {"env": {"LD_PRELOAD": "/tmp/x.so"}}},
    {"local": {"model": "/tmp/evil.gguf"}},
    {"retry_attempts": 100000},
]


@pytest.mark.parametrize("settings", HOSTILE)
def test_activity_input_cannot_choose_what_runs_or_where(settings: dict[str, object]) -> None:
    error = _activities._refused(CompleteInput("openai_compat", [], settings=settings))
    assert error is not None
    assert error.kind is ErrorKind.config
    assert error.retryable is False
    assert "worker's own configuration" in error.message


def test_activity_input_may_name_a_model_and_timeouts() -> None:
    settings = {"model": "gpt-5", "total_timeout_s": 60, "openai_compat": {"model": "m"}}
    assert _activities._refused(CompleteInput("openai_compat", [], settings=settings)) is None


def test_only_the_backends_the_worker_serves_run() -> None:
    with serving_only(["openai_compat"], [Path.cwd()]):
        assert _activities._refused(CompleteInput("openai_compat", [])) is None
        error = _activities._refused(CompleteInput("pi", []))
        assert error is not None
        assert "does not serve backend 'pi'" in error.message
    assert _activities._SERVED is None  # restored: no rule leaks out of the block


def test_file_activities_stay_under_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "out").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "out" / "link").symlink_to(outside)
    with serving_only([], [root]):
        assert _batch._inside(root / "out" / "r.md", "report") == root / "out" / "r.md"
        for path in (outside / "r.md", root / "out" / "link" / "r.md", root / ".." / "x"):
            with pytest.raises(ApplicationError, match="outside this worker's roots") as caught:
                _batch._inside(path, "report")
            assert caught.value.non_retryable
    assert _batch._ROOTS is None


_SENT = st.dictionaries(
    st.sampled_from(
        ["engine", "searxng_url", "max_results", "timeout_s", "max_bytes", "allow_private",
         "respect_robots", "per_host_delay_s", "user_agent", "proxy", "max_page_chars"]
    ),
    st.one_of(st.booleans(), st.integers(-10, 10**9), st.floats(allow_nan=True),
              st.sampled_from(["http://attacker", "searxng", "none", "evil-agent"])),
)  # fmt: skip


@given(_SENT)
@example({"max_results": float("-inf")})  # int(-inf) raised OverflowError (a CI run found it)
@example({"max_bytes": float("nan"), "timeout_s": float("inf")})
@example({"max_results": -5, "timeout_s": 1})  # an invalid value drops only itself
def test_sent_web_settings_only_narrow_the_workers_own(sent: dict[str, object]) -> None:
    own = WebSettings(searxng_url="http://127.0.0.1:8888", max_bytes=1 << 20, timeout_s=10)
    used = narrow_web(own, sent)
    for key in ("engine", "searxng_url", "user_agent", "proxy"):
        assert getattr(used, key) == getattr(own, key)
    assert used.allow_private is False  # the worker's own says no: nothing turns it on
    assert used.respect_robots or not own.respect_robots
    for key in ("max_results", "timeout_s", "max_bytes", "max_page_chars", "max_redirects"):
        assert getattr(used, key) <= getattr(own, key)
    assert used.per_host_delay_s >= own.per_host_delay_s


def test_one_invalid_sent_value_does_not_undo_the_others() -> None:
    own = WebSettings(timeout_s=10, max_results=8)
    used = narrow_web(own, {"max_results": -5, "timeout_s": 1, "max_bytes": float("-inf")})
    assert (used.timeout_s, used.max_results, used.max_bytes) == (1, 8, own.max_bytes)


def test_no_engine_password_in_workflow_input_or_errors() -> None:
    settings = WebSettings(searxng_url="http://user:hunter2@127.0.0.1:1/searx", proxy="http://p:1")
    sent = without_secrets(settings)
    assert "hunter2" not in json.dumps(sent)
    assert sent["searxng_url"] == "http://127.0.0.1:1/searx"
    assert "proxy" not in sent
    provider = SearxngProvider(settings.searxng_url or "", timeout_s=2)
    with pytest.raises(SearchError) as caught:
        asyncio.run(provider.search("q", 3))  # nothing listens on port 1
    assert "hunter2" not in str(caught.value)
    assert "127.0.0.1:1" in str(caught.value)


@pytest.mark.slow
def test_a_hostile_client_on_the_namespace_cannot_redirect_the_worker(
    temporal_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    from agentport.temporal._batch import BatchJob
    from agentport.temporal._client import connect, follow, start_batch

    (tmp_path / "w").mkdir()
    worker = WorkerProcess(temporal_server, tmp_path / "w")  # roots: tmp_path
    outside = Path(tempfile.mkdtemp(prefix="agentport-outside-"))
    try:

        async def run(job: BatchJob, batch_id: str) -> object:
            client = await connect(temporal_server)
            await start_batch(client, job, batch_id)
            return await asyncio.wait_for(follow(client, batch_id, None, poll_s=0.3), 60)

        settings = {"openai_compat": {"base_url": "http://127.0.0.1:9/v1"}}
        web = {"assume_web_tools": True}  # straight to the model calls
        job = BatchJob("research", [["q1", 1, "Q?"]], "openai_compat", str(tmp_path / "out"),
                       config=web, settings=settings)  # fmt: skip
        final = asyncio.run(run(job, "hostile-settings"))
        assert final.progress is not None  # type: ignore[attr-defined]
        assert final.progress.failed == 1  # type: ignore[attr-defined]
        state = (tmp_path / "out" / "batch.json").read_text(encoding="utf-8")
        assert "worker's own configuration" in state, state
        job = BatchJob("research", [["q3", 1, "Q?"]], "openai_compat", str(outside), config=web)
        asyncio.run(run(job, "hostile-path"))
        assert os.listdir(outside) == [], "a file was written outside the worker's roots"
        log = "".join(worker.lines)
        assert "127.0.0.1:9" not in log
    finally:
        worker.stop()


def test_workers_in_one_process_leave_no_rule_behind() -> None:
    """Regression: two in-process workers ending in the opposite order left the first's
    rule in place (each restored what it had saved), and later tests' activities refused
    their backend."""
    first = serving_only(["scripted"], [Path.cwd()])
    second = serving_only(["openai_compat"], [Path.cwd()])
    first.__enter__()
    second.__enter__()
    assert {"scripted", "openai_compat"} == _activities._SERVED  # both workers' backends
    first.__exit__(None, None, None)
    assert {"openai_compat"} == _activities._SERVED
    second.__exit__(None, None, None)
    assert _activities._SERVED is None
    assert _batch._ROOTS is None
