"""graph.json I/O: graphify fidelity and one-line errors naming file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _deeprefine_util import real_copy, write_tiny
from agentport.workflows.deeprefine import InputError, dump_graph, load_graph, parse_graph


@pytest.fixture
def real_project(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return real_copy(tmp_path_factory, tmp_path)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny(tmp_path)


def test_unmodified_real_graphify_graph_round_trips_byte_identical(real_project: Path) -> None:
    path = real_project / "graphify-out" / "graph.json"
    graph = load_graph(path)
    assert len(graph.nodes) > 50
    assert dump_graph(graph.raw) == path.read_bytes()


def test_edges_key_unknown_keys_and_non_ascii_survive(tmp_path: Path) -> None:
    raw = {
        "directed": True, "multigraph": True, "graph": {}, "zzz": [1, {"b": 2, "a": 1}],
        "nodes": [{"id": "데이터_로드", "label": "로드()", "x": None}, {"id": "b", "label": "B"}],
        "edges": [{"source": "데이터_로드", "target": "b", "relation": "calls", "key": "k1"}],
        "hyperedges": [{"id": "h", "nodes": ["b"]}],
    }  # fmt: skip
    data = json.dumps(raw, separators=(",", ":"), ensure_ascii=True).encode()
    graph = parse_graph(data, tmp_path / "graph.json")
    assert graph.links_key == "edges"
    assert dump_graph(graph.raw) == data
    assert graph.resolve("로드()").ids == ("데이터_로드",)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "top level must be a JSON object"),
        (b'{"nodes": []}', "links: missing"),
        (b'{"nodes": {}, "links": []}', "nodes: must be a list"),
        (b'{"nodes": [{"label": "x"}], "links": []}', "nodes[0].id: must be a non-empty string"),
        (b'{"nodes": [{"id": "a"}], "links": []}', "nodes[0].label: must be a string"),
        (b'{"nodes": [{"id": "a", "label": "a"}, {"id": "a", "label": "b"}], "links": []}',
         "nodes[1].id: duplicate"),
        (b'{"nodes": [{"id": "a", "label": "a"}], "links": [{"source": "a", "target": "z",'
         b' "relation": "calls"}]}', "links[0].target: unknown node id"),
        (b'{"nodes": [{"id": "a", "label": "a"}], "links": [{"source": "a", "target": "a"}]}',
         "links[0].relation: must be a non-empty string"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)  # fmt: skip
def test_malformed_graph_gives_one_line_error_naming_file_and_field(
    tmp_path: Path, content: bytes, field: str
) -> None:
    path = tmp_path / "graph.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_graph(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert field in message


def test_missing_graph_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"graph\.json: file not found"):
        load_graph(tmp_path / "graphify-out" / "graph.json")


def test_resolver_is_exact_on_ids_qualified_names_and_nfkc(tiny: Path) -> None:
    graph = load_graph(tiny)
    assert graph.resolve("app_util_helper").ids == ("app_util_helper",)  # id (F-08)
    assert graph.resolve("ｈｅｌｐｅｒ()").ids == ("app_util_helper",)  # full-width (F-08)
    assert graph.resolve("main()").ids == ("app_cli_main", "app_util_main")
    assert graph.resolve("app/util.py::main()").ids == ("app_util_main",)
    assert graph.resolve("util.py::main()").ids == ("app_util_main",)
    assert graph.resolve("run()").bare
    assert graph.resolve("run()").unique is None
    assert graph.resolve("app/cli.py::run()").unique == "app_cli_run"
    assert graph.resolve("nothing").ids == ()
    assert graph.suffix_candidates("go()") == ["app_util_runner_go"]


def test_every_suggested_qualified_name_resolves_back_to_its_node(real_project: Path) -> None:
    graph = load_graph(real_project / "graphify-out" / "graph.json")
    for node_id in graph.nodes:
        assert graph.resolve(graph.qualified(node_id)).ids == (node_id,)
