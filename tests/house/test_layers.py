"""Every layer rule of the architecture (docs/architecture.md "Layers"), checked in one place
over the import graph of `src/agentport`: each module parsed with `ast`, so an import inside
a function or under TYPE_CHECKING counts like one at the top.

The rules:

1. imports only point down the layer order (`LAYERS`), and a package imports only the
   layers it is allowed to (`ONLY`: a policy wraps any adapter, so it sees core and the
   transport helpers, never a backend);
2. no module imports a backend module (one the catalog names): the factory loads it by
   name, so backends never import each other (their shared `_`-helpers are not backends);
3. a backend never reads `agentport.config`: the factory hands it `BackendSettings`;
4. a package offers what others need through its `__init__`, never its private modules
   (`PRIVATE_REACHES` lists the ones left: it may only shrink);
5. no two modules import each other (a circle a reader must hold in their head);
6. an optional SDK is imported only by the package that needs it (`SDK_HOMES`), so a
   missing extra fails in one place with a message naming it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _helpers import ROOT
from agentport.catalog import all_backends

SRC = ROOT / "src"

# Lowest first. A module may import its own layer and every layer below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("agentport.core",)),
    ("structured", ("agentport.structured",)),
    ("transport", ("agentport.transport",)),
    ("web", ("agentport.web",)),
    ("backends", ("agentport.backends",)),
    ("policies", ("agentport.policies",)),
    (
        "factory/config",
        (
            "agentport",
            "agentport.catalog",
            "agentport.config",
            "agentport.factory",
            "agentport._catalog_data",
            "agentport._chain",
            "agentport._guard",
            "agentport._handoff",
            "agentport._trust",
        ),
    ),
    ("testing", ("agentport.testing",)),
    ("workflows", ("agentport.workflows",)),
    ("temporal", ("agentport.temporal",)),
    ("mcp", ("agentport.mcp",)),
    ("cli", ("agentport.cli", "agentport.__main__")),
]

# Layers narrower than "everything below": what each may import besides itself.
ONLY: dict[str, set[str]] = {
    "core": set(),
    "structured": {"core"},
    "transport": {"core"},
    "web": {"core", "transport"},
    "backends": {"core", "structured", "transport"},
    "policies": {"core", "transport"},  # wraps any adapter: never a backend
    "workflows": {  # the public protocol only: never a backend (DESIGN "Layers")
        "core",
        "structured",
        "transport",
        "web",
        "policies",
        "factory/config",
        "workflows",
    },
    "temporal": {
        "core",
        "structured",
        "transport",
        "web",
        "policies",
        "factory/config",
        "workflows",
    },
}

# `agentport doctor` loads the embedded model itself to time it: the one module that imports
# a backend module by name.
IMPORTS_A_BACKEND = {("agentport.cli._doctor", "agentport.backends.local")}

# (importer, private module of another package): reaches not yet moved behind the owner's
# `__init__`. Remove a line when its import goes; a new reach fails the test, and so does a
# line whose import is gone, so the list can only shrink.
PRIVATE_REACHES: set[tuple[str, str]] = {
    # the factory/config layer's own helpers, used by the interfaces and the test doubles
    ("agentport.cli", "agentport._trust"),
    ("agentport.cli._deeprefine", "agentport._trust"),
    ("agentport.cli._batch", "agentport._chain"),
    ("agentport.temporal._queues", "agentport._chain"),
    ("agentport.testing", "agentport._guard"),
    # the batch client's `connect` (another function than the worker's, which the package
    # exports under that name)
    ("agentport.cli._batch", "agentport.temporal._client"),
}

SDK_HOMES = {
    "temporalio": ("agentport.temporal",),
    "litellm": ("agentport.backends.litellm",),
    "llama_cpp": ("agentport.backends._local_worker",),
    # agentport's MCP server, and the per-call servers a call hands its agent: the caller's
    # functions (transport) and claude's approval prompt (backends)
    "mcp": (
        "agentport.mcp",
        "agentport.transport._tool_host",
        "agentport.backends._approval_server",
    ),
    "uvicorn": (
        "agentport.mcp",
        "agentport.transport._tool_host",
        "agentport.backends._approval_server",
    ),
    "typer": ("agentport.cli",),
    "rich": ("agentport.cli",),
    "pydantic_settings": ("agentport.config",),
}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def modules(root: Path = SRC) -> dict[str, Path]:
    out = {}
    for path in sorted((root / "agentport").rglob("*.py")):
        parts = path.with_suffix("").relative_to(root).parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(
    name: str, source: str, known: set[str], *, is_package: bool = False
) -> Iterator[Edge | tuple[str, int]]:
    """Every import in *source* (module *name*): an `Edge` to an agentport module (`from pkg
    import sub` is an edge to `pkg.sub` when `sub` is a module, else to `pkg`), or
    `(top-level name, line)` for any other package."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "agentport":
                    yield Edge(name, _known(alias.name, known), node.lineno)
                else:
                    yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "agentport":
                yield target.split(".")[0], node.lineno
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield Edge(name, sub if sub in known else _known(target, known), node.lineno)


def _known(dotted: str, known: set[str]) -> str:
    while dotted not in known and "." in dotted:
        dotted = dotted.rpartition(".")[0]
    return dotted


def layer_of(module: str) -> str:
    best, size = "", -1
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > size:
                best, size = layer, len(prefix)
    return best


def private_owner(module: str) -> str | None:
    """The package whose private module *module* is (`agentport.transport` for
    `agentport.transport._fs`); the factory/config layer owns the top-level `agentport._x`."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return "agentport" if i == 1 else ".".join(parts[:i])
    return None


def _inside(module: str, package: str) -> bool:
    if package == "agentport":  # the top-level helpers serve the factory/config layer
        return layer_of(module) == "factory/config"
    return module == package or module.startswith(package + ".")


def violations(
    graph: dict[str, list[Edge | tuple[str, int]]],
    backends: set[str],
    reaches_left: set[tuple[str, str]] = PRIVATE_REACHES,
) -> list[str]:
    rank = {layer: i for i, (layer, _) in enumerate(LAYERS)}
    found: list[str] = []
    reaches: set[tuple[str, str]] = set()
    edges = {(e.source, e.target) for out in graph.values() for e in out if isinstance(e, Edge)}
    for source, out in graph.items():
        mine = layer_of(source)
        for edge in out:
            if not isinstance(edge, Edge):
                sdk, line = edge
                homes = SDK_HOMES.get(sdk)
                if homes and not any(_inside(source, h) for h in homes):
                    found.append(f"{source}:{line} imports {sdk} (only {', '.join(homes)} may)")
                continue
            target, where = edge.target, f"{source}:{edge.line}"
            theirs = layer_of(target)
            if target == source:
                continue
            if rank[theirs] > rank[mine]:
                found.append(f"{where} imports {target}: {mine} is below {theirs}")
            elif mine in ONLY and theirs != mine and theirs not in ONLY[mine]:
                found.append(f"{where} imports {target}: {mine} may not import {theirs}")
            if (
                target in backends
                and target != source
                and (source, target) not in IMPORTS_A_BACKEND
            ):
                found.append(f"{where} imports the backend module {target}")
            if source in backends and target == "agentport.config":
                found.append(f"{where}: a backend reads agentport.config (use BackendSettings)")
            owner = private_owner(target)
            if owner is not None and not _inside(source, owner):
                reaches.add((source, target))
    for source, target in sorted(reaches - reaches_left):
        found.append(f"{source} reaches into {target} (import it from its package)")
    for source, target in sorted(reaches_left - reaches):
        found.append(f"PRIVATE_REACHES lists {source} -> {target}, which is gone: remove it")
    found += sorted(f"{a} <-> {b} import each other" for a, b in edges if a < b and (b, a) in edges)
    return found


def source_graph() -> dict[str, list[Edge | tuple[str, int]]]:
    known = modules()
    return {
        name: list(imports(name, path.read_text(encoding="utf-8"), set(known),
                           is_package=path.name == "__init__.py"))
        for name, path in known.items()
    }  # fmt: skip


def test_the_import_graph_keeps_every_layer_rule() -> None:
    backends = {c.module for c in all_backends()}
    graph = source_graph()
    assert {layer_of(m) for m in graph} <= {layer for layer, _ in LAYERS}
    assert "" not in {layer_of(m) for m in graph}, [m for m in graph if not layer_of(m)]
    assert backends <= set(graph)
    # helpers live in the layer they serve: the top level holds the factory/config layer only
    factory = dict(LAYERS)["factory/config"]
    loose = [
        m
        for m in graph
        if layer_of(m) == "factory/config"
        and _known(m, set(factory)) == "agentport"
        and m != "agentport"
    ]
    assert loose == [], f"top-level modules outside the factory/config layer: {loose}"
    assert violations(graph, backends) == []


def _graph(**sources: str) -> dict[str, list[Edge | tuple[str, int]]]:
    known = set(sources) | {"agentport"}
    return {name: list(imports(name, text, known)) for name, text in sources.items()}


def test_each_rule_fails_on_its_own_breach() -> None:
    """The check sees an import hidden in a function or under TYPE_CHECKING, and each rule
    names the import that breaks it."""
    cases = {
        "below": {
            "agentport.core._x": "def f():\n    from ..policies import _y\n",
            "agentport.policies._y": "",
        },
        "may not import": {
            "agentport.policies._y": "if TYPE_CHECKING:\n    from ..web import _z\n",
            "agentport.web._z": "",
        },
        "the backend module": {
            "agentport.backends.one": "from . import two\n",
            "agentport.backends.two": "",
        },
        "reads agentport.config": {
            "agentport.backends.one": "from ..config import LLMSettings\n",
            "agentport.config": "",
        },
        "reaches into": {
            "agentport.workflows.w": "from ..transport._fs import atomic_write\n",
            "agentport.transport._fs": "",
        },
        "import each other": {
            "agentport.core._a": "from ._b import x\n",
            "agentport.core._b": "def f():\n    from . import _a\n",
        },
        "only agentport.temporal": {"agentport.core._c": "import temporalio.client\n"},
    }
    for words, sources in cases.items():
        found = violations(
            _graph(**sources), {"agentport.backends.one", "agentport.backends.two"}, set()
        )
        assert any(words in v for v in found), (words, found)
    clean = _graph(**{"agentport.backends.one": "from ._spec import X\nfrom ..core import Y\n",
                      "agentport.backends._spec": "", "agentport.core": ""})  # fmt: skip
    assert violations(clean, {"agentport.backends.one"}, set()) == []
