"""An inserted link never hides or alters an extracted one.

graphify reads graph.json as an undirected simple graph, so a second link on a linked pair
(either direction, any relation) collapses into the first, and `graphify update .` keeps only
one of them (reference 1.8: the AST link was the one lost). No storage keeps both, so review
refuses such an insert (effect `reject`) and apply never writes it, even with
`--allow-low-confidence`. Checked on a real graphify graph, before and after a rebuild.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _deeprefine_util import graphify_exe, real_copy
from agentport.cli._deeprefine import main
from agentport.workflows.deeprefine import ReviewContext, load_graph, review


@pytest.fixture
def project(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return real_copy(tmp_path_factory, tmp_path)


def _links(project: Path) -> list[dict[str, Any]]:
    raw = json.loads((project / "graphify-out" / "graph.json").read_text(encoding="utf-8"))
    return list(raw.get("links") or raw["edges"])


def _extracted(project: Path) -> dict[str, Any]:
    """An EXTRACTED link between two distinct nodes that carry no other link."""
    links = _links(project)
    pairs: dict[frozenset[str], int] = {}
    for link in links:
        key = frozenset((link["source"], link["target"]))
        pairs[key] = pairs.get(key, 0) + 1
    return next(
        link
        for link in links
        if link["confidence"] == "EXTRACTED"
        and link["source"] != link["target"]
        and pairs[frozenset((link["source"], link["target"]))] == 1
    )


def _rebuild(project: Path) -> None:
    done = subprocess.run(
        [graphify_exe(), "update", "."], cwd=project, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def _has(links: list[dict[str, Any]], link: dict[str, Any]) -> bool:
    want = (link["source"], link["relation"], link["target"])
    return any((x["source"], x["relation"], x["target"]) == want for x in links)


def _variants(link: dict[str, Any]) -> list[str]:
    s, r, o = link["source"], link["relation"], link["target"]
    other = "uses" if r != "uses" else "calls"
    return [
        f'insert_edge("{s}", "{other}", "{o}")',  # parallel relation, same direction
        f'insert_edge("{o}", "{r}", "{s}")',  # the same relation reversed
        f'insert_edge("{o}", "{other}", "{s}")',  # another relation reversed
    ]


def test_insert_on_an_extracted_pair_is_refused_in_every_form(project: Path) -> None:
    link = _extracted(project)
    graph = load_graph(project / "graphify-out" / "graph.json")
    for text in _variants(link):
        (item,) = review(f"<refinement>{text}</refinement>", graph, ReviewContext()).items
        assert item.effect == "reject", text
        assert item.confidence == "LOW"
        assert any(w.startswith("R6") and "EXTRACTED" in w for w in item.warnings), item.warnings


@pytest.mark.parametrize("variant", range(3))
def test_allow_low_confidence_still_never_writes_it_and_a_rebuild_keeps_the_ast_link(
    project: Path, variant: int, capsys: pytest.CaptureFixture[str]
) -> None:
    link = _extracted(project)
    graph_file = project / "graphify-out" / "graph.json"
    pre = graph_file.read_bytes()
    actions = project / "actions.txt"
    actions.write_text(f"<refinement>{_variants(link)[variant]}</refinement>", encoding="utf-8")
    args = ["apply", "--skip-trace-check", "--allow-low-confidence"]
    code = main([*args, "--refinement-file", str(actions), "--project-root", str(project)])
    assert code == 0
    out = capsys.readouterr().out
    assert "rejected: insert_edge" in out
    assert graph_file.read_bytes() == pre
    _rebuild(project)
    assert _has(_links(project), link)


def test_an_insert_on_an_unlinked_pair_and_the_ast_link_both_survive_a_rebuild(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = _extracted(project)
    graph = load_graph(project / "graphify-out" / "graph.json")
    s = link["source"]
    far = next(
        n for n in graph.nodes if n != s and not graph.links_between(s, n) and graph.adjacent(n)
    )
    actions = project / "actions.txt"
    actions.write_text(f'<refinement>insert_edge("{s}", "uses", "{far}")</refinement>', "utf-8")
    args = ["apply", "--skip-trace-check", "--allow-low-confidence"]
    code = main([*args, "--refinement-file", str(actions), "--project-root", str(project)])
    assert code == 0
    assert "Applied 1 action(s)" in capsys.readouterr().out
    _rebuild(project)
    links = _links(project)
    assert _has(links, link)
    assert _has(links, {"source": s, "relation": "uses", "target": far})
