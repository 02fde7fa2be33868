"""graphify's graph.json: load, validate, index, resolve names, dump.

Format (reference section 1.2): networkx node-link JSON with `links` (`edges` accepted), the
`directed` / `multigraph` flags, `hyperedges` and any unknown key kept as they are. graphify
writes one compact line, ASCII-escaped; `dump_graph` does the same and keeps every key in the
order it was read, so an unmodified graph round-trips byte for byte. New nodes/links are built
in graphify's key order (`id,label` / `source,target,relation` first, then alphabetical).
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ...core import bounded
from ._constants import BARE_AMBIGUOUS_NAMES
from ._files import InputError, read_bytes

__all__ = [
    "Graph",
    "Resolution",
    "dump_graph",
    "dump_graph_text",
    "graphify_norm",
    "load_graph",
    "load_graph_from",
    "name_key",
    "parse_graph",
]


def name_key(name: str) -> str:
    """The one comparison key for node names (review AND apply, F-08): NFKC, casefold,
    whitespace runs collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def graphify_norm(label: str) -> str:
    """graphify's `norm_label`: diacritics stripped, lower-cased (reference section 1.2)."""
    decomposed = unicodedata.normalize("NFKD", label)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _bare(name: str) -> str:
    key = name_key(name)
    return key[:-2] if key.endswith("()") else key


@dataclass(frozen=True, slots=True)
class Resolution:
    """How a name resolved: `ids` are the matching node ids (sorted by closeness later);
    `how` is `id`, `label`, `qualified` or `none`; `bare` marks a bare name the skill lists."""

    name: str
    ids: tuple[str, ...]
    how: str
    bare: bool = False

    @property
    def unique(self) -> str | None:
        """The node id when exactly one node matches and the name is not a bare name."""
        return self.ids[0] if len(self.ids) == 1 and not self.bare else None


@dataclass(slots=True)
class Graph:
    """A loaded graph.json: the raw document plus indexes over it.

    Attributes:
        raw: the parsed document (key order as read); edits go here.
        links_key: `links` or `edges`, whichever the file used.
        path: where it was read from (for messages).
        pre_image: the exact bytes read (the backup of an apply).
    """

    raw: dict[str, Any]
    links_key: str
    path: Path
    pre_image: bytes = b""
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    _by_name: dict[str, list[str]] = field(default_factory=dict)
    _adjacent: dict[str, list[int]] | None = None

    @property
    def links(self) -> list[dict[str, Any]]:
        links: list[dict[str, Any]] = self.raw[self.links_key]
        return links

    def reindex(self) -> None:
        self.nodes = {n["id"]: n for n in self.raw["nodes"]}
        by_name: defaultdict[str, list[str]] = defaultdict(list)
        for node_id, node in self.nodes.items():
            names = {name_key(node["label"])}
            aliases = node.get("aliases")
            if isinstance(aliases, list):
                names.update(name_key(a) for a in aliases if isinstance(a, str))
            for key in names:
                by_name[key].append(node_id)
        self._by_name = dict(by_name)
        self._adjacent = None

    def adjacent(self, node_id: str) -> list[int]:
        """Indexes into `links` of every link touching `node_id`, either direction."""
        if self._adjacent is None:
            adjacency: defaultdict[str, list[int]] = defaultdict(list)
            for i, link in enumerate(self.links):
                adjacency[link["source"]].append(i)
                if link["target"] != link["source"]:
                    adjacency[link["target"]].append(i)
            self._adjacent = dict(adjacency)
        return self._adjacent.get(node_id, [])

    def label(self, node_id: str) -> str:
        return str(self.nodes[node_id]["label"])

    def qualified(self, node_id: str) -> str:
        """`source_file::label`, or the node id when that is not unique (lookup-only form)."""
        node = self.nodes[node_id]
        source = node.get("source_file") or ""
        name = f"{source}::{node['label']}" if source else str(node["label"])
        return name if self.resolve(name).ids == (node_id,) else node_id

    def resolve(self, name: str) -> Resolution:
        """Resolve a name written by the model or a user (the one resolver, F-08).

        Order: exact node id; `path::label` (path equal to, or a `/`-suffix of, the node's
        `source_file`); label or alias under `name_key`. A name in `BARE_AMBIGUOUS_NAMES`
        (with or without `()`) is flagged `bare` unless it was an id or path-qualified.
        """
        if name in self.nodes:
            return Resolution(name, (name,), "id")
        if "::" in name:
            path, _, label = name.rpartition("::")
            path = path.strip().replace("\\", "/")
            hits = [
                i
                for i in self._by_name.get(name_key(label), [])
                if _path_matches(path, self.nodes[i])
            ]
            return Resolution(name, tuple(hits), "qualified" if hits else "none")
        hits = self._by_name.get(name_key(name), [])
        bare = _bare(name) in BARE_AMBIGUOUS_NAMES
        return Resolution(name, tuple(hits), "label" if hits else "none", bare=bare)

    def suffix_candidates(self, name: str) -> list[str]:
        """Nodes whose label ends with `.name` (methods): candidates for an unmatched `f()`."""
        key = name_key(name)
        if not key or "::" in name:
            return []
        return sorted(i for k, ids in self._by_name.items() if k.endswith("." + key) for i in ids)

    def has_link(self, source: str, relation: str, target: str) -> bool:
        return any(
            self.links[i]["source"] == source
            and self.links[i]["target"] == target
            and self.links[i]["relation"] == relation
            for i in self.adjacent(source)
        )

    def links_between(self, a: str, b: str) -> list[dict[str, Any]]:
        """Links joining a and b in either direction, any relation."""
        out = []
        for i in self.adjacent(a):
            link = self.links[i]
            if {link["source"], link["target"]} == {a, b} or (
                a == b == link["source"] == link["target"]
            ):
                out.append(link)
        return out

    def distances(self, start: Iterable[str], limit: int = 3) -> dict[str, int]:
        """Hop distance (undirected, at most `limit`) from any of `start` to each reached node."""
        seen = {s: 0 for s in start if s in self.nodes}
        frontier = list(seen)
        for depth in range(1, limit + 1):
            nxt = []
            for node_id in frontier:
                for i in self.adjacent(node_id):
                    link = self.links[i]
                    other = link["target"] if link["source"] == node_id else link["source"]
                    if other not in seen:
                        seen[other] = depth
                        nxt.append(other)
            frontier = nxt
        return seen


def _path_matches(path: str, node: dict[str, Any]) -> bool:
    source = str(node.get("source_file") or "").replace("\\", "/")
    if not path or not source:
        return False
    return source == path or source.endswith("/" + path) or path.endswith("/" + source)


def _check_str(value: Any, where: Path, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(where, field, "must be a non-empty string")
    return value


_NODE_KEYS = ("id", "label", "aliases", "source_file", "source_location", "community", "file_type")
_LINK_KEYS = ("source", "target", "relation", "confidence")


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep only what review reads (lean, read-only loads of large graphs)."""
    if "relation" in obj and "source" in obj and "target" in obj:
        keys: tuple[str, ...] = _LINK_KEYS
    elif "id" in obj and "label" in obj:
        keys = _NODE_KEYS
    else:
        return obj
    return {
        k: sys.intern(v) if isinstance(v, str) else v
        for k in keys
        if (v := obj.get(k, obj)) is not obj
    }


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "", "not UTF-8 text") from None


def _loads(text: str, path: Path, lean: bool) -> Any:
    try:
        # a nesting bomb ends as "not valid JSON (line N: nested deeper than ...)"
        return bounded.loads(text, object_hook=_slim if lean else None)
    except json.JSONDecodeError as exc:
        raise InputError(path, "", f"not valid JSON (line {exc.lineno}: {exc.msg})") from None


def parse_graph(data: bytes, path: Path) -> Graph:
    """Parse and validate graph.json bytes; `InputError` names the file and field."""
    graph = _build(_loads(_decode(data, path), path, lean=False), path)
    graph.pre_image = data
    return graph


def _build(raw: Any, path: Path) -> Graph:
    if not isinstance(raw, dict):
        raise InputError(path, "", "top level must be a JSON object (node-link graph)")
    if "links" in raw:
        links_key = "links"
    elif "edges" in raw:
        links_key = "edges"
    else:
        raise InputError(path, "links", "missing (node-link graphs have `links` or `edges`)")
    nodes = raw.get("nodes")
    if not isinstance(nodes, list):
        raise InputError(path, "nodes", "must be a list")
    if not isinstance(raw[links_key], list):
        raise InputError(path, links_key, "must be a list")
    ids: set[str] = set()
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise InputError(path, f"nodes[{i}]", "must be an object")
        node_id = _check_str(node.get("id"), path, f"nodes[{i}].id")
        if node_id in ids:
            raise InputError(path, f"nodes[{i}].id", f"duplicate node id {node_id!r}")
        ids.add(node_id)
        if not isinstance(node.get("label"), str):
            raise InputError(path, f"nodes[{i}].label", "must be a string")
    for i, link in enumerate(raw[links_key]):
        where = f"{links_key}[{i}]"
        if not isinstance(link, dict):
            raise InputError(path, where, "must be an object")
        for end in ("source", "target"):
            value = _check_str(link.get(end), path, f"{where}.{end}")
            if value not in ids:
                raise InputError(path, f"{where}.{end}", f"unknown node id {value!r}")
        _check_str(link.get("relation"), path, f"{where}.relation")
    graph = Graph(raw=raw, links_key=links_key, path=path)
    graph.reindex()
    return graph


def load_graph_from(handle: BinaryIO, path: Path) -> Graph:
    """Parse an open graph.json; the bytes are dropped once decoded (the handle still holds
    the pre-image, see `open_input`)."""
    return _build(_loads(_decode(handle.read(), path), path, lean=False), path)


def load_graph(path: Path, *, lean: bool = False) -> Graph:
    """Read and validate graph.json (512 MiB cap, as graphify); `InputError` on bad input.

    `lean=True`: read-only, only the fields review needs, and the file text is released as
    soon as it is parsed (for large graphs; never dump a lean graph)."""
    if lean:
        return _build(_loads(_decode(read_bytes(path), path), path, lean=True), path)
    return parse_graph(read_bytes(path), path)


def dump_graph_text(raw: dict[str, Any]) -> str:
    """graphify's write format: compact separators, ASCII escapes, no trailing newline."""
    return json.dumps(raw, separators=(",", ":"), ensure_ascii=True)


def dump_graph(raw: dict[str, Any]) -> bytes:
    """`dump_graph_text` as bytes (ASCII)."""
    return dump_graph_text(raw).encode("ascii")
