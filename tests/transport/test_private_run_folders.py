"""Every CLI backend runs in a private folder: below a 0700 folder of this user's, never below
the shared temp directory, so what another local user plants there (an `opencode.json` with
an MCP `command`, `.opencode/plugin/x.js`, an `AGENTS.md`) is not on the CLI's config walk.

Regression: run folders lived directly under `$TMPDIR`; opencode run from
`/tmp/agentport-opencode-XXXX/work` read `/tmp/opencode.json`.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import anyio
import pytest

from _fake_clis_util import ALL_TOOLS_ONLY
from _runner_util import fake_executable
from agentport.catalog import all_backends
from agentport.core import BackendKind, CompletionConfig, Message, ToolPolicy
from agentport.factory import create_llm_adapter
from agentport.transport import private_base, private_tempdir

CLI_BACKENDS = [c.name for c in all_backends() if c.kind is BackendKind.cli and c.executable]
PLANTED = ("opencode.json", "AGENTS.md", ".opencode/plugin/x.js", "CLAUDE.md", "GEMINI.md")


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for a shared /tmp, with another user's config planted in it."""
    shared = tmp_path / "shared-tmp"
    for name in PLANTED:
        (shared / name).parent.mkdir(parents=True, exist_ok=True)
        (shared / name).write_text('{"mcp": {"x": {"command": ["/bin/sh", "-c", "id"]}}}')
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def _assert_private(cwd: Path, shared: Path) -> None:
    assert shared not in cwd.parents, cwd
    base = private_base()
    assert base in cwd.parents, (cwd, base)
    assert stat.S_IMODE(base.stat().st_mode) == 0o700
    for parent in [base, *base.parents]:  # nothing above the run is writable by another user
        info = parent.stat()
        assert info.st_uid in (0, os.getuid()), parent
        assert not info.st_mode & 0o002 or (info.st_mode & stat.S_ISVTX and parent == Path("/"))
        for name in PLANTED:
            assert not (parent / name).exists() or parent in (Path.home(), Path("/")), parent


@pytest.mark.parametrize("backend", CLI_BACKENDS)
def test_each_cli_runs_in_a_private_folder(
    backend: str, shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    record = tmp_path / "record.json"
    options = {
        "executable": str(fake_executable(tmp_path)),
        "env": {"FAKE_CLI_RECORD": str(record)},
    }
    llm = create_llm_adapter(backend, retry=False, **{backend: options})
    own_tools = CompletionConfig(tools=ToolPolicy.cli_defaults())
    config = own_tools if backend in ALL_TOOLS_ONLY else None
    anyio.run(llm.complete, [Message.user("hi")], config)
    assert record.exists(), f"{backend}: the fake CLI never ran"
    _assert_private(Path(json.loads(record.read_text())["cwd"]), shared_tmp)


def test_a_base_someone_else_can_write_is_made_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentport.transport import _rundir

    runtime = tmp_path / "runtime"
    (runtime / "agentport").mkdir(parents=True)
    (runtime / "agentport").chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(_rundir, "_BASE", None)
    with private_tempdir("t-") as run:
        assert run.parent == runtime / "agentport"
        assert stat.S_IMODE(run.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert not run.exists()


def test_a_symlinked_base_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport.transport import _rundir

    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (runtime / "agentport").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(_rundir, "_BASE", None)
    assert private_base() == tmp_path / "cache" / "agentport" / "run"


@pytest.mark.parametrize(
    "leave",
    ["nothing", "a file", "an empty folder", "a symlink to a folder", "a folder with files"],
)
def test_a_run_folder_is_removed_whatever_the_run_left(leave: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's")
    with private_tempdir("t-") as run:
        if leave == "a file":
            (run / "model-catalog.json").write_text("{}")
        elif leave == "an empty folder":
            (run / "work").mkdir()
        elif leave == "a symlink to a folder":
            (run / "link").symlink_to(outside)
        elif leave == "a folder with files":
            (run / "work" / "deep").mkdir(parents=True)
            (run / "work" / "deep" / "f.txt").write_text("x")
    assert not run.exists()
    assert (outside / "keep.txt").read_text() == "not the run's"  # a link is not followed
