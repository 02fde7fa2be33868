"""Code evidence (review rule R9) from the syntax tree.

(c) Indirect calls count (a dict/table lookup, `getattr`, a callback), and a name in a
comment, a string or a docstring never does. (d) A graph graphify built from a parent folder
(`source_file` relative to that folder) gets exactly the evidence of a graph built in place.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _deeprefine_util import SOURCES, SRC, graphify_exe
from agentport.workflows.deeprefine import Action, ReviewContext, load_graph, render_action, review
from agentport.workflows.deeprefine._code import Sources, code_evidence, locate

MODULE = '''\
import operator
from app.util import helper

HANDLERS = {"a": helper}


def direct():
    return helper()


def via_table(key):
    return HANDLERS[key]()


def via_getattr(mod):
    return getattr(mod, "helper")()


def via_attrgetter(mod):
    return operator.methodcaller("helper")(mod)


def via_callback(pool):
    pool.submit(helper)


def via_alias():
    run = helper
    return run()


def in_comment():
    # helper() is not called here, nor is helper
    return None


def in_string():
    return "helper() and helper"


def in_docstring():
    """Calls helper() - or so the docstring says."""
    return None


def annotated(x: helper) -> None:
    return None


def other():
    return helpers()
'''

INDIRECT = ["direct", "via_table", "via_getattr", "via_attrgetter", "via_callback", "via_alias"]
NEVER = ["in_comment", "in_string", "in_docstring", "annotated", "other"]


def _node(node_id: str, label: str, line: int, source: str = "app/mod.py") -> dict[str, Any]:
    return {"id": node_id, "label": label, "source_file": source, "source_location": f"L{line}"}


def _module(root: Path, text: str = MODULE) -> tuple[Sources, dict[str, dict[str, Any]]]:
    (root / "app").mkdir(parents=True, exist_ok=True)
    (root / "app" / "mod.py").write_text(text, encoding="utf-8")
    lines = text.split("\n")
    nodes = {
        name: _node(
            name,
            f"{name}()",
            lines.index(next(x for x in lines if x.startswith(f"def {name}("))) + 1,
        )
        for name in INDIRECT + NEVER
        if any(x.startswith(f"def {name}(") for x in lines)
    }
    return Sources(root), nodes


HELPER = _node("helper", "helper()", 1, "app/util.py")


@pytest.mark.parametrize("name", INDIRECT)
def test_indirect_calls_are_evidence(tmp_path: Path, name: str) -> None:
    sources, nodes = _module(tmp_path)
    found = code_evidence(sources, nodes[name], "calls", HELPER)
    assert found is not None
    assert found.startswith("R9 direct code evidence in app/mod.py (")


@pytest.mark.parametrize("name", NEVER)
def test_comments_strings_docstrings_and_annotations_are_not_calls(
    tmp_path: Path, name: str
) -> None:
    sources, nodes = _module(tmp_path)
    assert code_evidence(sources, nodes[name], "calls", HELPER) is None


def test_an_annotation_is_a_use_but_not_a_call(tmp_path: Path) -> None:
    sources, nodes = _module(tmp_path)
    assert code_evidence(sources, nodes["annotated"], "uses", HELPER) is not None
    assert code_evidence(sources, nodes["in_comment"], "uses", HELPER) is None


def test_imports_and_definitions_come_from_the_tree(tmp_path: Path) -> None:
    sources, _ = _module(tmp_path)
    module = _node("mod", "mod.py", 1)
    assert code_evidence(sources, module, "imports_from", HELPER) is not None
    assert code_evidence(sources, module, "imports", _node("x", "json", 1)) is None
    assert code_evidence(sources, module, "contains", _node("d", "direct()", 1)) is not None
    text = "class Base:\n    pass\n\n\nclass Child(Base):\n    def go(self):\n        pass\n"
    (tmp_path / "app" / "cls.py").write_text(text, encoding="utf-8")
    child = _node("child", "Child", 5, "app/cls.py")
    assert code_evidence(sources, child, "inherits", _node("b", "Base", 1, "app/cls.py"))
    assert code_evidence(sources, child, "method", _node("g", ".go()", 6, "app/cls.py"))
    assert code_evidence(sources, child, "method", _node("h", ".stop()", 6, "app/cls.py")) is None


_SAFE = st.text(st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=40)


@settings(max_examples=50, deadline=None)
@given(comment=_SAFE, string=_SAFE)
def test_any_comment_or_string_mentioning_the_name_is_never_a_call(
    tmp_path_factory: pytest.TempPathFactory, comment: str, string: str
) -> None:
    body = (
        f"def quiet():\n    # {comment} helper() {comment}\n"
        f"    x = {string + ' helper()'!r}\n    y = {'helper(' + string!r}\n    return x, y\n"
    )
    sources, _ = _module(tmp_path_factory.mktemp("prop"), body)
    quiet = _node("quiet", "quiet()", 1)
    for relation in ("calls", "uses", "references"):
        assert code_evidence(sources, quiet, relation, HELPER) is None


# -- (d) graphs built from a parent folder -----------------------------------------------------


def _build(base: Path, project: Path) -> Path:
    done = subprocess.run(
        [graphify_exe(), "update", str(project.relative_to(base))], cwd=base,
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return project / "graphify-out" / "graph.json"


def _copy_sources(project: Path) -> None:
    for source in SOURCES:
        target = project / source.relative_to(SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)


def _evidence(graph_file: Path) -> dict[tuple[str, str, str], str]:
    """R9 evidence of every extracted link re-proposed as an insert, keyed by labels and the
    file path below the project root."""
    graph = load_graph(graph_file)
    root = graph_file.parent.parent
    out: dict[tuple[str, str, str], str] = {}
    for link in graph.links:
        s, o = link["source"], link["target"]
        if s == o:
            continue
        action = render_action(Action("insert_edge", (s, link["relation"], o)))
        text = f"<refinement>{action}</refinement>"
        (item,) = review(text, graph, ReviewContext(set(), root)).items
        key = (graph.qualified(s).rsplit("::", 1)[-1], link["relation"], graph.label(o))
        found = [e.split(" (", 1)[-1] for e in item.evidence if e.startswith("R9")]
        out[key] = found[0] if found else ""
    return out


def test_graphs_built_from_a_parent_folder_get_the_same_evidence(tmp_path: Path) -> None:
    in_place = tmp_path / "flat" / "proj"
    _copy_sources(in_place)
    expected = _evidence(_build(in_place, in_place))
    assert sum(1 for v in expected.values() if v) > 50  # the comparison has teeth
    for depth in (1, 4):
        base = tmp_path / f"depth{depth}"
        project = base.joinpath(*[f"d{i}" for i in range(depth - 1)], "proj")
        _copy_sources(project)
        graph_file = _build(base, project)
        sample = json.loads(graph_file.read_text(encoding="utf-8"))["nodes"][0]
        assert sample["source_file"].startswith(str(project.relative_to(base)) + "/")
        assert _evidence(graph_file) == expected, depth


def test_locate_never_leaves_the_root(tmp_path: Path) -> None:
    root = tmp_path / "a" / "proj"
    root.mkdir(parents=True)
    (root / "m.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "secret.py").write_text("x = 1\n", encoding="utf-8")
    assert locate(root, "m.py") == (root / "m.py").resolve()
    assert locate(root, "a/proj/m.py") == (root / "m.py").resolve()
    assert locate(root, "proj/m.py") == (root / "m.py").resolve()
    assert locate(root, "other/m.py") is None  # a prefix that is not the root's own tail
    assert locate(root, "../../secret.py") is None
    assert locate(root, str(tmp_path / "secret.py")) is None
    (root / "link.py").symlink_to(tmp_path / "secret.py")
    assert locate(root, "link.py") is None
