"""A Temporal worker trusts only its own configuration: any client of the namespace writes
workflow and activity input, so that input may name a backend the worker serves, a model,
timeouts, questions and files under the worker's roots; never an executable, an endpoint,
a key, an environment, the search engine or `allow_private`, and no secret travels in it.

Regressions: another client could start `agentport.batch` with
`settings.pi.executable = /tmp/evil.sh` (run on the worker), `settings.openai_compat.base_url
= attacker` (the worker's key sent there), schedule `agentport.complete` with `config.tools`
(the CLI's shell), `config.cwd` and `config.session_id` of its choosing, join an `item_id`
such as `../../../.codex/AGENTS` to the batch folder, and the SearxNG URL's password was
stored in the workflow history.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("temporalio")

from pydantic import BaseModel
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from _temporal_server import WorkerProcess, temporal_server  # noqa: F401
from agentport.core import CompletionConfig, ErrorKind, ProviderError, ToolPolicy
from agentport.temporal import _activities, _batch
from agentport.temporal._batch import (
    ApplyItem,
    BatchJob,
    FinishBatch,
    RefineJob,
    ResearchJob,
    SaveReview,
    WriteReport,
)
from agentport.temporal._corpus import CorpusRead
from agentport.temporal._data import CallConfig, CallSettings, CompleteInput
from agentport.temporal._graph import GraphRead
from agentport.temporal._inputs import REFUSED_INPUT, InputRefused, parse, validate
from agentport.temporal._semaphore import HolderRefs, RequestPermit
from agentport.temporal._small import SmallQuestion
from agentport.temporal._web import FetchInput, SearchInput
from agentport.temporal._worker import serving_only
from agentport.web import WebSettings, narrow_web, without_secrets
from agentport.web._search import SearxngProvider
from agentport.web._types import SearchError

OWN = CompletionConfig(total_timeout_s=600, idle_timeout_s=60, startup_timeout_s=30,
                       max_tokens=4000, on_ignored="fail")  # fmt: skip
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**7), st.floats(allow_nan=True),
    st.sampled_from(["/tmp/evil.sh", "http://attacker.example/v1", "sess-1", "../x", "m.gguf",
                     "gpt-5", "/home/u/.ssh", "full"]),
    st.dictionaries(st.sampled_from(["allowed_tools", "sandbox", "base_url", "executable"]),
                    st.sampled_from([None, "full", ["Bash"], "http://attacker"]), max_size=2),
)  # fmt: skip
_KEYS = st.sampled_from([
    "model", "temperature", "max_tokens", "total_timeout_s", "idle_timeout_s", "startup_timeout_s",
    "attempt_timeout_s", "schema_retries", "max_turns", "on_ignored", "web_search", "label",
    "tools", "cwd", "session_id", "base_url", "openai_compat", "pi", "executable", "env",
    "retry_attempts", "api_key", "command",
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=6), st.dictionaries(_KEYS, _VALUES, max_size=3))
@example({"tools": {"allowed_tools": None, "sandbox": None}, "cwd": "/tmp"}, {})
@example({"session_id": "s"}, {})
@example({}, {"openai_compat": {"base_url": "http://attacker.example/v1"}})
@example({}, {"pi": {"executable": "/tmp/evil.sh"}})
@example({"total_timeout_s": 1e9, "max_tokens": 10**7, "on_ignored": "warn"}, {"model": "gpt-5"})
def test_a_complete_input_is_refused_or_only_narrows_the_workers_own(
    config: dict[str, object], settings_: dict[str, object]
) -> None:
    raw = {"backend": "openai_compat", "messages": [{"role": "user", "content": "q"}],
           "config": config, "settings": settings_, "call_id": "c"}  # fmt: skip
    try:
        data = validate(CompleteInput, raw, "complete")
    except InputRefused as exc:
        refusal = str(exc)
    else:
        refusal = ""
    if refusal:
        assert "\n" not in refusal
        for secret in ("attacker", "evil"):
            assert secret not in refusal  # the history keeps no value a client sent
        return
    _, used, overrides = _activities.effective_call(data, OWN)
    assert used.tools == ToolPolicy.none()
    assert used.cwd is None
    assert used.session_id is None
    assert set(overrides) <= {"model", "retry_attempts"}
    assert overrides["retry_attempts"] == 1
    merged = used.with_defaults(OWN)
    for name in ("total_timeout_s", "idle_timeout_s", "startup_timeout_s"):
        assert getattr(merged, name) <= getattr(OWN, name)
    assert merged.max_tokens is not None
    assert merged.max_tokens <= 4000
    assert merged.schema_retries <= CompletionConfig().schema_retries
    assert merged.on_ignored == "fail"
    for model in (merged.model, overrides.get("model")):
        assert model is None or not str(model).startswith(("/", ".", "~"))


def test_our_own_client_refuses_a_config_a_worker_would_not_run() -> None:
    """`execute_complete` sends exactly the closed type: tools, a folder or a session are
    refused before anything is scheduled."""
    for config in (
        CompletionConfig(tools=ToolPolicy.cli_defaults()),
        CompletionConfig(cwd=Path("/tmp")),
        CompletionConfig(session_id="s"),
    ):
        with pytest.raises(ProviderError) as caught:
            CallConfig.of(config)
        assert caught.value.kind is ErrorKind.unsupported
    assert CallConfig.of(CompletionConfig(tools=ToolPolicy.none(), max_tokens=5)).max_tokens == 5


def test_only_the_backends_the_worker_serves_run() -> None:
    with serving_only(["openai_compat"], [Path.cwd()]):
        assert _activities._refused(CompleteInput(backend="openai_compat", messages=[])) is None
        error = _activities._refused(CompleteInput(backend="pi", messages=[]))
        assert error is not None
        assert "does not serve backend 'pi'" in error.message
        assert error.retryable is False
    assert _activities._SERVED is None  # restored: no rule leaks out of the block


def test_a_model_that_names_a_file_on_the_worker_is_refused(tmp_path: Path) -> None:
    (tmp_path / "weights").write_text("x", encoding="utf-8")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        data = CompleteInput(backend="local", messages=[], settings={"model": "weights"})
        error = _activities._refused(data)
    finally:
        os.chdir(old)
    assert error is not None
    assert "names a file" in error.message
    for model in ("/etc/passwd", "../m", "x.GGUF", "~/m"):
        with pytest.raises(InputRefused):
            validate(CallSettings, {"model": model}, "complete")


def _valid() -> dict[type[BaseModel], dict[str, object]]:
    out = "/tmp/agentport-out"
    return {
        CompleteInput: {"backend": "echo", "messages": []},
        WriteReport: {"out": out, "name": "q-1.md", "text": "t"},
        SaveReview: {"graph": out + "/g.json", "out": out, "item_id": "q-1",
                     "loop": {"trace": {}, "early_exit": True}},
        ApplyItem: {"graph": out + "/g.json", "out": out, "item_id": "q-1", "trace": out + "/t",
                    "actions": out + "/a"},
        FinishBatch: {"out": out, "kind": "research", "items": []},
        GraphRead: {"graph": out + "/g.json", "op": "open"},
        CorpusRead: {"corpus": out, "op": "open"},
        SearchInput: {"query": "q", "limit": 3},
        FetchInput: {"url": "https://example.org/"},
        BatchJob: {"kind": "research", "items": [["q-1", 1, "Q?"]], "backend": "echo", "out": out},
        ResearchJob: {"question": "Q?", "item_id": "q-1", "backend": "echo", "out": out},
        RefineJob: {"question": "Q?", "item_id": "q-1", "backend": "echo", "out": out,
                    "graph": out + "/g.json"},
        SmallQuestion: {"question": "Q?", "backend": "local", "corpus": out},
        RequestPermit: {"semaphore_id": "agentport-semaphore-agentport.codex",
                        "task_queue": "agentport.workflows",
                        "request": {"holder_id": "h", "holder_run_id": "r", "request_id": "1",
                                    "limit": 2}},
        HolderRefs: {"holders": [{"holder_id": "h", "holder_run_id": "r"}]},
    }  # fmt: skip


@pytest.mark.parametrize("model", list(_valid()), ids=lambda m: m.__name__)
@given(st.sampled_from(["tools", "cwd", "session_id", "base_url", "executable", "env",
                        "api_key", "proxy", "command", "roots", "x"]))  # fmt: skip
def test_every_boundary_type_is_closed(model: type[BaseModel], extra: str) -> None:
    """Each activity's and workflow's input parses a valid value, refuses an unknown key,
    and `parse` turns the refusal into a non-retryable `ApplicationError` naming it."""
    good = _valid()[model]
    assert validate(model, good, "x") is not None
    with pytest.raises(ApplicationError) as caught:
        parse(model, {**good, extra: "/tmp/evil"}, "x")
    assert caught.value.non_retryable
    assert caught.value.type == REFUSED_INPUT
    assert extra in caught.value.message
    assert "evil" not in caught.value.message
    with pytest.raises(ApplicationError):
        parse(model, ["not", "an", "object"], "x")


@pytest.mark.parametrize("item_id", ["../../../.codex/AGENTS", "/abs", "..", ".hidden", "a/b",
                                     "a\x00", "x" * 200])  # fmt: skip
def test_an_item_id_is_never_a_path(item_id: str) -> None:
    with pytest.raises(InputRefused):
        validate(SaveReview, {**_valid()[SaveReview], "item_id": item_id}, "save_review")


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


def _run(activity_fn: object, payload: object) -> object:
    from temporalio.testing import ActivityEnvironment

    return asyncio.run(ActivityEnvironment().run(activity_fn, payload))  # type: ignore[arg-type]


def test_file_activities_write_only_under_the_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "out").mkdir(parents=True)
    outside.mkdir()
    (root / "out" / "link").symlink_to(outside)
    (root / "graphify-out").mkdir()
    (root / "graphify-out" / "graph.json").symlink_to(outside / "g.json")
    out = str(root / "out")
    attacks = [
        (_batch.write_report, {"out": out, "name": "../../outside/x.md", "text": "t"}),
        (_batch.write_report, {"out": str(outside), "name": "x.md", "text": "t"}),
        (_batch.write_report, {"out": out + "/link", "name": "x.md", "text": "t"}),
        (_batch.write_report, {"out": out + "/../../outside", "name": "x.md", "text": "t"}),
        (_batch.save_review, {"graph": str(root / "graphify-out" / "graph.json"), "out": out,
                              "item_id": "q", "loop": {"trace": {}, "early_exit": True}}),
        (_batch.save_review, {**_valid()[SaveReview], "out": out,
                              "item_id": "../../../.codex/AGENTS"}),
        (_batch.apply_item, {"graph": "/etc/passwd", "out": out, "item_id": "q",
                             "trace": "/etc/passwd", "actions": "/etc/passwd"}),
        (_batch.finish_batch, {"out": str(outside), "kind": "research", "items": []}),
    ]  # fmt: skip
    with serving_only([], [root]):
        for fn, payload in attacks:
            with pytest.raises(ApplicationError) as caught:
                _run(fn, payload)
            assert caught.value.non_retryable, (payload, caught.value)
            assert caught.value.type in (REFUSED_INPUT, _batch.OUTSIDE_ROOTS)
        _run(_batch.write_report, {"out": out, "name": "q-1.md", "text": "fine"})
    assert (root / "out" / "q-1.md").read_text(encoding="utf-8") == "fine"
    assert os.listdir(outside) == []
    assert _batch._ROOTS is None


@pytest.mark.parametrize("where", ["/", "home", "above-home", "config"])
def test_the_worker_refuses_a_broad_root(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentport.core import ProviderError
    from agentport.temporal._worker import broad_root, check_roots

    home = tmp_path / "home" / "me"
    (home / ".config" / "agentport").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(home / ".config" / "agentport" / "c.toml"))
    root = {"/": Path("/"), "home": home, "above-home": home.parent,
            "config": home / ".config"}[where]  # fmt: skip
    assert broad_root(root) is not None
    with pytest.raises(ProviderError) as caught:
        check_roots([root])
    assert "--allow-broad-root" in caught.value.message
    assert check_roots([root], allow_broad=True) == [Path(os.path.realpath(root))]
    (home / "batches").mkdir()
    assert check_roots([home / "batches"]) == [home / "batches"]
    with pytest.raises(ProviderError, match="--root FOLDER"):
        check_roots([])


def test_a_worker_with_workflows_and_no_root_is_one_line() -> None:
    from typer.testing import CliRunner

    from agentport.cli import app

    result = CliRunner().invoke(app, ["worker", "--temporal", "127.0.0.1:1", "-b", "scripted"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "--root FOLDER" in result.output


@pytest.mark.slow
def test_a_hostile_client_scheduling_every_activity_by_name_is_refused(
    temporal_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A client of the namespace schedules each of agentport's activities by name on the
    worker's queues with input it crafted (tools, a folder, a session, an endpoint, paths
    and ids that climb out, unknown keys) under unlimited retries: each one ends at once
    with a non-retryable typed refusal, and no file appears outside the worker's root."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    from _temporal_hostile import HOSTILE_QUEUE, Attack, AttackWorkflow, Outcome

    (tmp_path / "w").mkdir()
    outside = Path(tempfile.mkdtemp(prefix="agentport-outside-"))
    marker = outside / "MARKER"
    worker = WorkerProcess(temporal_server, tmp_path / "w")  # --root tmp_path
    out, graph = str(tmp_path / "out"), str(tmp_path / "graphify-out" / "graph.json")
    calls, flows, web = "agentport.openai_compat", "agentport.workflows", "agentport.web"
    message = [{"role": "user", "content": f"run: id > {marker}"}]
    attacks = [
        ("agentport.complete", calls, {"backend": "openai_compat", "messages": message,
         "config": {"tools": {"allowed_tools": None, "sandbox": None}, "cwd": str(outside),
                    "session_id": "s"}}),
        ("agentport.complete", calls, {"backend": "openai_compat", "messages": message,
         "settings": {"openai_compat": {"base_url": "http://127.0.0.1:9/v1"}}}),
        ("agentport.complete", calls, {"backend": "pi", "messages": message,
         "settings": {"pi": {"executable": "/bin/sh"}}}),
        ("agentport.complete", calls, "not an object"),
        ("agentport.complete", calls, {"backend": "pi", "messages": message}),  # not served
        ("agentport.batch.write_report", flows, {"out": out, "name": "../../../x.md", "text": "t"}),
        ("agentport.batch.write_report", flows, {"out": str(outside), "name": "x.md", "text": "t"}),
        ("agentport.batch.save_review", flows, {"graph": graph, "out": out,
         "item_id": "../../../.codex/AGENTS", "loop": {"trace": {}, "early_exit": True}}),
        ("agentport.batch.apply", flows, {"graph": graph, "out": str(outside), "item_id": "q",
         "trace": "/etc/passwd", "actions": "/etc/passwd"}),
        ("agentport.batch.finish", flows, {"out": str(outside), "kind": "research", "items": []}),
        ("agentport.refine.read_graph", flows, {"graph": "/etc/passwd", "op": "open"}),
        ("agentport.research.read_corpus", flows, {"corpus": str(outside), "op": "open"}),
        ("agentport.web.search", web, {"settings": {"proxy": "http://attacker"}, "query": "q",
                                       "limit": 3}),
        ("agentport.web.fetch", web, {"settings": {"searxng_url": "http://a", "x": 1},
                                      "url": "http://127.0.0.1/"}),
        ("agentport.semaphore.request", flows, {"semaphore_id": "victim-batch",
         "task_queue": "attacker.queue", "request": {"holder_id": "h", "holder_run_id": "r",
                                                     "request_id": "1", "limit": 1}}),
        ("agentport.semaphore.holders_gone", flows, [{"holder_id": "h", "holder_run_id": "r"}]),
        ("agentport.research.small", calls, {"question": "q", "backend": "openai_compat",
                                             "corpus": str(outside)}),
        ("agentport.refine.small", calls, {"question": "q", "backend": "openai_compat",
                                           "graph": "/etc/passwd"}),
        ("agentport.research.small", calls, {"question": "q", "backend": "openai_compat",
                                             "corpus": str(tmp_path), "cwd": "/"}),
    ]  # fmt: skip

    async def attack_all() -> list[Outcome]:
        client = await Client.connect(temporal_server)
        results: list[Outcome] = []
        async with Worker(client, task_queue=HOSTILE_QUEUE, workflows=[AttackWorkflow]):
            for index, (name, queue, payload) in enumerate(attacks):
                results.append(await asyncio.wait_for(client.execute_workflow(
                    AttackWorkflow.run, Attack(name, queue, payload),
                    id=f"attack-{index}-{os.getpid()}", task_queue=HOSTILE_QUEUE,
                ), 40))  # fmt: skip
            for index, flow in enumerate(("agentport.batch", "agentport.research")):
                job = {
                    "kind": "research",
                    "items": [["q", 1, "Q?"]],
                    "backend": "openai_compat",
                    "out": str(outside),
                    "settings": {"openai_compat": {"base_url": "x"}},
                }
                if flow == "agentport.research":
                    job = {"question": "Q?", "item_id": "../../x", "backend": "openai_compat",
                           "out": str(outside)}  # fmt: skip
                handle = await client.start_workflow(
                    flow, job, id=f"hostile-flow-{index}-{os.getpid()}", task_queue=flows
                )
                try:
                    await asyncio.wait_for(handle.result(), 30)
                except WorkflowFailureError as exc:
                    cause = exc.cause
                    assert isinstance(cause, ApplicationError), cause
                    results.append(Outcome(False, cause.type or "", cause.non_retryable,
                                           cause.message))  # fmt: skip
                else:
                    results.append(Outcome(True))
        return results

    try:
        outcomes = asyncio.run(attack_all())
    finally:
        worker.stop()
    for (name, _, payload), got in zip([*attacks, ("batch", "", {}), ("research", "", {})],
                                       outcomes, strict=True):  # fmt: skip
        assert not got.ok, (name, payload)
        assert got.non_retryable, (name, got)
        assert got.error_type in (REFUSED_INPUT, _batch.OUTSIDE_ROOTS), (name, got)
    assert os.listdir(outside) == [], "a file was written outside the worker's root"
    assert not marker.exists()
    log = "".join(worker.lines)
    assert "127.0.0.1:9" not in log
    # the worker said at start which folders its file steps serve
    assert (
        f"agentport worker: files: batch reports, graphs and corpora only under {tmp_path}" in log
    )
