"""The path authority (`agentport.transport._beneath`): a path someone else named is joined
to a root and walked without following a link, so no id or path, however hostile, writes
outside the root.

Regression: a Temporal client's `item_id = "../../../.codex/AGENTS"` (or an absolute path)
was joined to the batch folder unchecked and replaced the worker user's codex instructions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentport.transport._beneath import PathRefused, Roots, safe_name

_PIECES = ["..", ".", "", "a", "sub", "link", "uplink", "deep", "x.md", "\x00", "/", "//", "~"]


def _tree() -> tuple[Path, Path, Path]:
    """A root with links planted out of it (to a folder, to a file, relative and absolute)
    and the folder and file they point at."""
    base = Path(tempfile.mkdtemp(prefix="agentport-beneath-"))
    root, outside = base / "root", base / "outside"
    (root / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "victim.md").write_text("mine", encoding="utf-8")
    (root / "link").symlink_to(outside)  # absolute link to a folder
    (root / "sub" / "uplink").symlink_to("../../outside")  # relative link climbing out
    (root / "sub" / "x.md").symlink_to(outside / "victim.md")  # a file link
    (root / "sub" / "deep" / "loop").symlink_to("loop")
    return root, outside, base


def _snapshot(folder: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for top, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(top) / name
            out[str(path)] = path.read_bytes()
    return out


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), min_size=0, max_size=6),
    st.booleans(),
    st.text(max_size=20) | st.sampled_from(["../x.md", "..", "/etc/x", "a\x00b", ".", "x.md"]),
)
@example(["sub", "uplink"], False, "AGENTS.md")
@example(["link"], False, "victim.md")
@example(["sub"], False, "x.md")  # a file link in the target's place is replaced, not followed
@example([], True, "../../.codex/AGENTS.md")
@example(["sub", "deep", "loop"], False, "f")
def test_no_id_or_path_writes_outside_the_root(
    parts: list[str], absolute_elsewhere: bool, name: str
) -> None:
    root, outside, base = _tree()
    try:
        before = _snapshot(outside)
        roots = Roots.of([root])
        text = ("/elsewhere/" if absolute_elsewhere else str(root) + "/") + "/".join(parts)
        try:
            target = roots.locate(text.rstrip("/") or text).child(name)
            target.write_text("written")
        except (PathRefused, OSError):
            pass
        else:
            written = Path(os.path.realpath(target.path))
            assert root.resolve() in written.parents, f"{target.path} -> {written}"
            assert written.read_text(encoding="utf-8") == "written"
        assert _snapshot(outside) == before, "a file outside the root was written"
        for top, _dirs, files in os.walk(base):
            for f in files:
                path = Path(top) / f
                assert root in path.parents or outside in path.parents, f"stray file {path}"
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("relative/x", "absolute"),
        ("{root}/../outside/x", "normalised"),
        ("{root}/./x", "normalised"),
        ("{root}//x", "normalised"),
        ("{root}/x\x00", "NUL"),
        ("/etc/passwd", "outside"),
        ("{root}-sibling/x", "outside"),
    ],
)
def test_a_path_that_is_not_a_plain_name_under_a_root_is_refused_in_one_line(
    tmp_path: Path, text: str, why: str
) -> None:
    (tmp_path / "root").mkdir()
    roots = Roots.of([tmp_path / "root"])
    with pytest.raises(PathRefused, match=why) as caught:
        roots.locate(text.format(root=tmp_path / "root"), "report")
    assert "\n" not in str(caught.value)


def test_links_are_refused_on_every_operation(tmp_path: Path) -> None:
    root, outside, base = _tree()
    roots = Roots.of([root])
    for text in (f"{root}/link/victim.md", f"{root}/sub/uplink/victim.md", f"{root}/sub/x.md"):
        rooted = roots.locate(text)
        with pytest.raises(PathRefused, match="symbolic link"):
            rooted.check()
        with pytest.raises(PathRefused, match=r"symbolic link|not a folder"):
            rooted.read_text()
    assert (outside / "victim.md").read_text(encoding="utf-8") == "mine"
    fifo = root / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PathRefused, match="not a regular file"):
        roots.locate(str(fifo)).read_text()  # never blocks on a fifo
    shutil.rmtree(base)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\x00", "x" * 300])
def test_safe_name_refuses_anything_but_one_file_name(name: str) -> None:
    with pytest.raises(PathRefused):
        safe_name(name)


def test_a_write_keeps_the_mode_and_reads_back(tmp_path: Path) -> None:
    roots = Roots.of([tmp_path])
    target = roots.locate(f"{tmp_path}/new/dir/r.md")
    target.write_text("one")
    os.chmod(target.path, 0o640)
    target.write_text("two")
    assert target.read_text() == "two"
    assert oct(target.path.stat().st_mode & 0o777) == oct(0o640)
    assert [p.name for p in target.path.parent.iterdir()] == ["r.md"]  # no temp file left
