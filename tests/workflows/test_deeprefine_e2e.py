"""End to end on a real graphify graph of real code: the SKILL.md command lines verbatim on
agentport's `deeprefine`, and `agentport refine` with a ScriptedAdapter (every branch)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _deeprefine_util import graphify_exe, real_copy
from agentport.cli import app
from agentport.cli._deeprefine import main
from agentport.cli._refine import run_refine
from agentport.testing import ScriptedAdapter
from agentport.workflows.deeprefine import (
    MAX_TRIPLE_NUM_BY_STEP,
    load_graph,
    match_question,
    query_id,
)


@pytest.fixture
def real_project(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return real_copy(tmp_path_factory, tmp_path)


Q = "How does with_retry retry a ProviderError?"


def _good(project: Path) -> str:
    """An insert review cannot fault, whatever graphify made of today's sources: two code
    nodes of the first hop (so both are in the trace), not linked yet, named by id."""
    graph = load_graph(project / "graphify-out" / "graph.json")
    hop1 = match_question(graph, Q, MAX_TRIPLE_NUM_BY_STEP[0])[0]
    ids = [i for t in hop1 for i in (t.subject_id, t.object_id)]
    code = [i for i in dict.fromkeys(ids) if graph.nodes[i].get("file_type") != "rationale"]
    a, b = next((a, b) for a in code for b in code if a < b and not graph.links_between(a, b))
    return f'<refinement>insert_edge("{a}", "uses", "{b}")</refinement>'


LOW = '<refinement>insert_edge(".complete()", "calls", "with_retry()")</refinement>'


def _run(line: str) -> int:
    argv = shlex.split(line)
    assert argv[0] == "deeprefine"
    return main(argv[1:])


def _scripted(refinement: str, judges: tuple[str, ...] = ("<judge>No</judge>",)) -> ScriptedAdapter:
    return (
        ScriptedAdapter()
        .add(*judges, label="judge")
        .add(
            "<abduction>RetryingAdapter's use of RetryPolicy is missing</abduction>",
            label="abduction",
        )
        .add(refinement, label="refinement")
    )


def _refine(project: Path, adapter: ScriptedAdapter, apply: bool = False) -> tuple[int, str]:
    lines: list[str] = []
    code = run_refine(
        Q, project / "graphify-out" / "graph.json", None, apply, lines.append, lines.append,
        adapter=adapter,
    )  # fmt: skip
    return code, "\n".join(lines)


def test_skill_md_command_lines_run_verbatim_on_the_refine_path(
    real_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(real_project)
    saved = subprocess.run(
        [graphify_exe(), "save-result", "--question", Q, "--answer", "via RetryPolicy"],
        cwd=real_project, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert _run("deeprefine history sync-memory") == 0
    assert "Added: 1" in capsys.readouterr().out
    assert _run(f'deeprefine loop init --query "{Q}"') == 0
    graph = real_project / "graphify-out" / "graph.json"
    pre = graph.read_bytes()
    code, out = _refine(real_project, _scripted(_good(real_project)))  # the loop, dry run
    assert code == 0, out
    assert "[Step: 1]" in out
    assert "Dry run: graph.json was not modified" in out
    assert graph.read_bytes() == pre
    qid = query_id(Q)
    trace = f"graphify-out/.deeprefine/loop_trace_{qid}.json"
    actions = f"graphify-out/.deeprefine/refinement_actions_{qid}.txt"
    assert _run(f"deeprefine loop validate --trace-file {trace} --refinement-file {actions}") == 0
    assert _run(f"deeprefine review --trace-file {trace} --refinement-file {actions}") == 0
    # HIGH when the copied source shows the use (R9), else MEDIUM (k-hop); never LOW
    assert re.search(r"\[(HIGH|MEDIUM)\] insert_edge", capsys.readouterr().out)
    assert graph.read_bytes() == pre  # review never writes
    assert _run(f"deeprefine loop finish --trace-file {trace} --refinement-file {actions}") == 1
    assert "not applied yet" in capsys.readouterr().err  # F-18
    assert (
        _run(f"deeprefine apply --refresh-wiki --trace-file {trace} --refinement-file {actions}")
        == 0
    )
    out = capsys.readouterr().out
    assert "Applied 1 action(s)" in out
    assert "Wiki refreshed with graphify export wiki" in out
    assert (real_project / "graphify-out" / "wiki" / "index.md").is_file()
    assert graph.read_bytes() != pre
    assert (real_project / "graphify-out" / ".deeprefine" / "graph.json.bak").read_bytes() == pre
    assert _run(f"deeprefine loop finish --trace-file {trace} --refinement-file {actions}") == 0
    assert f"Marked refined: {qid}" in capsys.readouterr().out
    assert _run("deeprefine history list --pending") == 0
    assert "No pending queries." in capsys.readouterr().out


def test_low_confidence_actions_are_refused_until_explicitly_allowed(
    real_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(real_project)
    graph = real_project / "graphify-out" / "graph.json"
    pre = graph.read_bytes()
    code, out = _refine(real_project, _scripted(LOW), apply=True)
    assert code == 1
    assert "refusing to apply" in out
    assert graph.read_bytes() == pre
    qid = query_id(Q)
    trace = f"graphify-out/.deeprefine/loop_trace_{qid}.json"
    actions = f"graphify-out/.deeprefine/refinement_actions_{qid}.txt"
    assert (
        _run(f"deeprefine apply --refresh-wiki --trace-file {trace} --refinement-file {actions}")
        == 1
    )
    err = capsys.readouterr().err
    assert f"{actions}: action 1: " in err
    assert "R3 ambiguous node name '.complete()'" in err
    line = (
        "deeprefine apply --refresh-wiki --allow-low-confidence "
        f"--trace-file {trace} --refinement-file {actions}"
    )
    assert _run(line) == 0  # allowed, but the ambiguous action is still never bound (F-07)
    assert "rejected: insert_edge" in capsys.readouterr().out
    assert graph.read_bytes() == pre


def test_early_exit_finishes_without_refinement(
    real_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _refine(real_project, ScriptedAdapter().add("<judge>Yes</judge>", label="judge"))
    assert code == 0, out
    assert "Early exit" in out
    assert f"Marked refined: {query_id(Q)}" in out
    monkeypatch.chdir(real_project)
    trace = f"graphify-out/.deeprefine/loop_trace_{query_id(Q)}.json"
    assert _run(f"deeprefine loop validate --trace-file {trace}") == 0
    assert _run(f"deeprefine loop finish --trace-file {trace}") == 0  # SKILL.md early exit
    history = (real_project / "graphify-out" / ".deeprefine" / "history.jsonl").read_text("utf-8")
    assert json.loads(history.splitlines()[-1])["refined"] is True


def test_agentport_refine_apply_without_yes_writes_nothing(real_project: Path) -> None:
    graph = real_project / "graphify-out" / "graph.json"
    result = CliRunner().invoke(app, ["refine", Q, "--graph", str(graph), "--apply"])
    assert result.exit_code == 2
    assert "add --yes" in result.output
    assert not (real_project / "graphify-out" / ".deeprefine").exists()


def test_agentport_refine_unknown_graph_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["refine", Q, "--graph", str(tmp_path / "graph.json")])
    assert result.exit_code == 2  # bad input, as docs/deeprefine.md says
    assert result.output.strip() == f"agentport: {tmp_path / 'graph.json'}: file not found"


@pytest.mark.parametrize(
    ("refinement", "expected"),
    [
        ("", "no actions"),  # A15: empty refinement file
        ("<refinement></refinement>", "no actions"),
        (
            '<refinement>INSERT_EDGE("a", "r", "b")</refinement>',
            "action 1: rejected: unknown action",
        ),
        (
            '<refinement>insert_edge("a", "r")</refinement>',
            "action 1: rejected: insert_edge takes 3",
        ),
        ('<refinement>insert_edge("a"b", "r", "c")</refinement>', "action 1: rejected: expected"),
    ],
)
def test_malformed_refinement_file_errors_name_the_file_and_action(
    real_project: Path, capsys: pytest.CaptureFixture[str], refinement: str, expected: str
) -> None:
    path = real_project / "r.txt"
    path.write_text(refinement, encoding="utf-8")
    root = ["--project-root", str(real_project)]
    main(["review", "--refinement-file", str(path), *root])
    assert f"{path}: " in capsys.readouterr().err
    assert main(["apply", "--skip-trace-check", "--refinement-file", str(path), *root]) == 1
    err = capsys.readouterr().err
    assert f"deeprefine: {path}: " in err
    assert expected in err


def test_missing_graph_and_trace_flags_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refinement = tmp_path / "r.txt"
    refinement.write_text('insert_edge("a", "r", "b")', encoding="utf-8")
    root = ["--project-root", str(tmp_path)]
    assert main(["apply", "--refinement-file", str(refinement), *root]) == 1
    assert "requires --trace-file" in capsys.readouterr().err
    assert main(["apply", "--skip-trace-check", "--refinement-file", str(refinement), *root]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"deeprefine: {tmp_path / 'graphify-out' / 'graph.json'}: file not found"  # F06


def test_console_script_is_installed() -> None:
    exe = shutil.which("deeprefine", path=str(Path(sys.executable).parent))
    assert exe is not None
    done = subprocess.run([exe, "loop", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "validate" in done.stdout


def test_reference_refine_command_runs_agentports_loop_on_a_backend(
    real_project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = real_project / "agentport.toml"
    config.write_text('[llm.scripted]\ndefault = "<judge>Yes</judge>"\n', encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    args = ["refine", "--query", Q, "--backend", "scripted", "--project-root", str(real_project)]
    assert main(args) == 0
    assert f"Marked refined: {query_id(Q)}" in capsys.readouterr().out


def test_an_echoed_judge_instruction_is_never_taken_as_yes(
    real_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `echo` answers with the prompt, which holds "<judge>Yes</judge> or <judge>No</judge>":
    # the reference (and agentport before) read its first tag as Yes
    args = ["refine", "--query", Q, "--backend", "echo", "--project-root", str(real_project)]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert "judge: no parsable answer after 3 attempts" in captured.err
    assert "Marked refined" not in captured.out
    assert not list((real_project / "graphify-out" / ".deeprefine").glob("loop_trace_*"))
