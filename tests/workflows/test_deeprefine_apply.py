"""Apply: resolve once, atomic writes, exact pre-image backups, no-op untouched, concurrency,
and kill -9 at random moments never leaving a third state (F-01, F-02, F-04, F-05, F-07)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from _deeprefine_util import write_tiny
from agentport.workflows.deeprefine import Layout, apply_refinement, load_graph


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny(tmp_path)


GOOD = '<refinement>insert_edge("app/cli.py::main()", "uses", "cli.py")</refinement>'
CTX = {"interaction_history": [{"retrieved_subgraph": [
    {"subject": "x", "relation": "r", "object": "y", "subject_id": "app_cli_main",
     "object_id": "app_cli"}]}]}  # fmt: skip


def _layout(tiny: Path) -> Layout:
    return Layout(tiny.parent.parent)


def test_apply_writes_graphify_format_and_backs_up_the_exact_pre_image(tiny: Path) -> None:
    before = tiny.read_bytes()
    report = apply_refinement(_layout(tiny), GOOD, trace=CTX)
    assert report.written
    assert report.applied == 1
    after = tiny.read_bytes()
    assert b"\n" not in after
    assert after.isascii()
    raw = json.loads(after)
    assert raw["custom_key"] == {"kept": "\u00e9"}  # unknown keys preserved
    assert list(raw["links"][-1])[:3] == ["source", "target", "relation"]
    assert raw["links"][-1]["source"] == "app_cli_main"
    assert len(raw["nodes"]) == 7  # no node created
    assert _layout(tiny).backup.read_bytes() == before
    second = '<refinement>delete_edge("app/cli.py::run()", "calls", "helper()")</refinement>'
    # run() does call helper(): review rates that delete LOW (R7), so it needs allow_low
    trace = {"interaction_history": [
        {"retrieved_subgraph": [{"subject": "run()", "relation": "r", "object": "q",
                                 "subject_id": "app_cli_run"}]}]}  # fmt: skip
    assert apply_refinement(_layout(tiny), second, trace=trace, allow_low=True).written
    assert _layout(tiny).backup.read_bytes() == after  # pre-image of THIS apply (F-02)


def test_noop_apply_leaves_graph_untouched_and_writes_no_backup(tiny: Path) -> None:
    before, mtime = tiny.read_bytes(), tiny.stat().st_mtime_ns
    noop = '<refinement>insert_edge("cli.py", "imports_from", "helper()")</refinement>'
    report = apply_refinement(_layout(tiny), noop, trace=CTX)
    assert not report.written
    assert [o for _, o, _ in report.outcomes] == ["skipped"]
    assert (tiny.read_bytes(), tiny.stat().st_mtime_ns) == (before, mtime)
    assert not _layout(tiny).backup.exists()


def test_low_actions_refuse_the_whole_apply(tiny: Path) -> None:
    before = tiny.read_bytes()
    text = GOOD.replace("</refinement>", '|insert_edge("run()", "uses", "cli.py")</refinement>')
    report = apply_refinement(_layout(tiny), text, trace=CTX)
    assert report.refused
    assert tiny.read_bytes() == before


def test_ambiguous_names_are_never_bound_even_with_allow_low(tiny: Path) -> None:
    text = '<refinement>insert_edge("main()", "uses", "cli.py")</refinement>'
    report = apply_refinement(_layout(tiny), text, trace=CTX, allow_low=True)
    assert [o for _, o, _ in report.outcomes] == ["rejected"]
    assert not report.written


def test_allow_low_applies_the_binding_the_review_showed(tiny: Path) -> None:
    text = '<refinement>insert_edge("run()", "uses", "cli.py")</refinement>'
    report = apply_refinement(_layout(tiny), text, trace=CTX, allow_low=True)
    assert report.applied == 1
    link = json.loads(tiny.read_bytes())["links"][-1]
    assert (link["source"], link["target"]) == ("app_cli_run", "app_cli")


def test_replace_node_relabels_with_alias_and_graphify_norm(tiny: Path) -> None:
    trace = {"interaction_history": [{"retrieved_subgraph": [
        {"subject": "helper()", "relation": "r", "object": "q"}]}]}  # fmt: skip
    report = apply_refinement(
        _layout(tiny),
        '<refinement>replace_node("helper()", "Hélper_v2()")</refinement>',
        trace=trace,
    )
    assert report.applied == 1
    node = load_graph(tiny).nodes["app_util_helper"]
    assert (node["label"], node["aliases"], node["norm_label"]) == (
        "Hélper_v2()",
        ["helper()"],
        "helper_v2()",
    )
    assert list(node)[:2] == ["id", "label"]


def test_two_concurrent_refinements_both_land(tiny: Path) -> None:
    texts = [
        GOOD,
        '<refinement>insert_edge("app/cli.py::run()", "uses", "cli.py")</refinement>',
    ]
    errors: list[BaseException] = []

    def run(text: str) -> None:
        try:
            apply_refinement(_layout(tiny), text, trace=CTX)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    relations = {(x["source"], x["relation"]) for x in json.loads(tiny.read_bytes())["links"]}
    assert {("app_cli_main", "uses"), ("app_cli_run", "uses")} <= relations


def test_second_refinement_is_reviewed_against_the_first_ones_result(tiny: Path) -> None:
    assert apply_refinement(_layout(tiny), GOOD, trace=CTX).written
    again = GOOD.replace('"uses"', '"imports"')  # same pair: now a parallel link (R6)
    assert apply_refinement(_layout(tiny), again, trace=CTX).refused


_CHILD = """
import sys
from pathlib import Path
from agentport.workflows.deeprefine import Layout, apply_refinement
apply_refinement(Layout(Path(sys.argv[1])), sys.argv[2], trace={"interaction_history": [
    {"retrieved_subgraph": [{"subject": "a", "relation": "r", "object": "b",
                             "subject_id": "n0", "object_id": "n1"}]}]})
"""


def _big_graph(root: Path, n: int = 20000) -> Path:
    nodes = [{"id": f"n{i}", "label": f"node{i}()", "community": 0, "file_type": "code",
              "source_file": f"m{i % 50}.py"} for i in range(n)]  # fmt: skip
    links = [{"source": f"n{i}", "target": f"n{i + 1}", "relation": "calls",
              "confidence": "EXTRACTED"} for i in range(n - 1)]  # fmt: skip
    raw = {"directed": False, "multigraph": False, "graph": {}, "nodes": nodes, "links": links}
    path = root / "graphify-out" / "graph.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(json.dumps(raw, separators=(",", ":")).encode())
    return path


def test_kill_9_during_apply_leaves_pre_image_or_intended_result(tmp_path: Path) -> None:
    path = _big_graph(tmp_path)
    pre = path.read_bytes()
    text = '<refinement>insert_edge("node0()", "uses", "node5()")</refinement>'
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), text], env=env, check=True)
    full = time.monotonic() - started  # kill times spread over the work, not the start-up
    assert done.returncode == 0
    intended = path.read_bytes()
    assert intended != pre
    rng = random.Random(6)
    states = {"pre": 0, "intended": 0}
    for _ in range(12):
        path.write_bytes(pre)
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), text], env=env)
        time.sleep(rng.uniform(0.4 * full, 1.05 * full))
        child.send_signal(signal.SIGKILL)
        child.wait()
        now = path.read_bytes()
        assert now in (pre, intended), "graph.json is neither the pre-image nor the result"
        states["pre" if now == pre else "intended"] += 1
        json.loads(now)
    assert sum(states.values()) == 12


def test_write_failing_midway_leaves_the_pre_image_and_no_temp_file(tmp_path: Path) -> None:
    """The reference's F-01 repro: a file-size limit makes the graph write fail part-way
    (EFBIG; Python ignores SIGXFSZ). graph.json must stay the pre-image, byte for byte."""
    import resource

    path = _big_graph(tmp_path, n=2000)
    pre = path.read_bytes()
    text = '<refinement>insert_edge("node0()", "uses", "node5()")</refinement>'

    def limit() -> None:  # the backup (same size as pre) fits; the larger new graph does not
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(pre) + 40, len(pre) + 40))

    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path), text],
        preexec_fn=limit, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert child.returncode == 1
    assert "File too large" in child.stderr
    assert path.read_bytes() == pre
    assert not list(path.parent.glob(".graph.json.*.tmp"))  # the partial temp file is removed
    assert (tmp_path / "graphify-out" / ".deeprefine" / "graph.json.bak").read_bytes() == pre
