"""Files a cloned project hands DeepRefine. `history sync-memory` imports graphify memory
files of the project only: a `query_*.md` (or the memory folder) symlinked out of the
project, a named pipe, a device is skipped with one line naming it, and its text never
reaches history.jsonl. A graph.json or refinement file that is no regular file is one line,
at once (never read without end, never waited on)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentport.cli._deeprefine import main
from agentport.workflows.deeprefine import Layout, read_history

SECRET = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOutsideTheProject user@host"


def _outside_file(project: Path, outside: Path) -> Path:
    (outside / "query_x.md").write_text(f"# Q: {SECRET}\n", encoding="utf-8")
    (project / "graphify-out" / "memory" / "query_1.md").symlink_to(outside / "query_x.md")
    return project / "graphify-out" / "memory" / "query_1.md"


def _outside_folder(project: Path, outside: Path) -> Path:
    (project / "graphify-out" / "memory").rmdir()
    (outside / "query_1.md").write_text(f"# Q: {SECRET}\n", encoding="utf-8")
    (project / "graphify-out" / "memory").symlink_to(outside)
    return project / "graphify-out" / "memory" / "query_1.md"


def _fifo(project: Path, outside: Path) -> Path:
    path = project / "graphify-out" / "memory" / "query_1.md"
    os.mkfifo(path)
    return path


def _device(project: Path, outside: Path) -> Path:
    path = project / "graphify-out" / "memory" / "query_1.md"
    path.symlink_to("/dev/zero")
    return path


# layout -> (make it, words the problem line says)
CASES: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "file linked out": (_outside_file, "resolves outside the project"),
    "folder linked out": (_outside_folder, "resolves outside the project"),
    "named pipe": (_fifo, "is a named pipe, not a regular file"),
    "link to /dev/zero": (_device, "resolves outside the project"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sync_memory_skips_what_is_not_the_projects_own_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    memory = project / "graphify-out" / "memory"
    memory.mkdir(parents=True)
    outside.mkdir()
    make, said = CASES[case]
    bad = make(project, outside)
    (project / "graphify-out" / "memory" / "query_0.md").unlink(missing_ok=True)
    if not (project / "graphify-out" / "memory").is_symlink():
        (memory / "query_0.md").write_text("# Q: Why does run call helper?\n", "utf-8")
    code = main(["history", "sync-memory", "--project-root", str(project)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = [line for line in captured.err.splitlines() if str(bad) in line]
    assert len(lines) == 1, captured.err
    assert said in lines[0]
    history = Layout(project).history
    text = history.read_text(encoding="utf-8") if history.exists() else ""
    assert SECRET not in text
    queries = [row["query"] for row in read_history(history).rows]
    expected = [] if case == "folder linked out" else ["Why does run call helper?"]
    assert queries == expected


def test_a_link_inside_the_project_is_still_imported(tmp_path: Path) -> None:
    project = tmp_path / "project"
    memory = project / "graphify-out" / "memory"
    memory.mkdir(parents=True)
    (project / "notes.md").write_text("# Q: Where is the retry policy?\n", "utf-8")
    (memory / "query_0.md").symlink_to(project / "notes.md")
    assert main(["history", "sync-memory", "--project-root", str(project)]) == 0
    rows = read_history(Layout(project).history).rows
    assert [row["query"] for row in rows] == ["Where is the retry policy?"]


# a cloned repository's graph.json or refinement file that is no regular file
SPECIAL: dict[str, tuple[Callable[[Path], None], str]] = {
    "named pipe": (os.mkfifo, "is a named pipe, not a regular file"),
    "link to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "is a character device"),
    "folder": (lambda p: p.mkdir(), "is a folder, not a regular file"),
}


@pytest.mark.parametrize("which", ["graph", "refinement"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_apply_refuses_special_input_files_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str, kind: str
) -> None:
    from _deeprefine_util import write_tiny

    graph = write_tiny(tmp_path)
    refinement = tmp_path / "r.txt"
    refinement.write_text('<refinement>insert_edge("main()", "calls", "helper()")</refinement>')
    bad = graph if which == "graph" else refinement
    bad.unlink()
    make, said = SPECIAL[kind]
    make(bad)
    argv = ["apply", "--skip-trace-check", "--refinement-file", str(refinement)]
    assert main([*argv, "--project-root", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"deeprefine: {bad}: "), err
    assert said in err
    assert "\n" not in err
