"""Code evidence for review rule R9, read from the source's syntax tree (stdlib `ast`).

A regex over source lines saw `helper(` in a comment or a string as a call, and missed every
call that does not spell `helper(`. Here Python sources are parsed; comments never reach the
tree and string constants are not names, so neither counts. What counts, inside the
subject's own definition (its `L<n>` location; the whole module for a file node):

- calls / uses / instantiates / references / indirect_call: a direct call `obj(...)` or
  `x.obj(...)`; `getattr(x, "obj")` (and `operator.attrgetter` / `methodcaller`); `obj`
  passed as a callback (an argument or keyword of a call), stored (assigned, returned, put in
  a container); or a table lookup: the body reads a name that the module (or the subject)
  binds to a dict / list / tuple / set literal holding `obj`. `uses` and `references` also
  accept any other read of the name (an annotation, say); `calls` does not.
- imports: an `import` / `from ... import` anywhere in the module naming `obj`.
- method / has_method / defines / contains: a `def` or `class obj` inside the subject.
- inherits: `obj` among the subject class's bases.

Only Python (`.py`, `.pyi`) is parsed; other languages get no R9 evidence (review then relies
on R10). Source files are found under the project root also when graphify ran in a parent
folder, so `source_file` carries a prefix (reference 1.1): `pkg/a.py` for the root `.../pkg`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = [
    "CALLS",
    "DEFINES",
    "IMPORTS",
    "Sources",
    "can_check",
    "code_evidence",
    "defines_name",
    "locate",
]

CALLS = frozenset({"calls", "call", "uses", "instantiates", "indirect_call", "references"})
_ANY_READ = frozenset({"uses", "references", "instantiates"})
IMPORTS = frozenset({"imports", "import", "imports_from", "from_imports", "re_exports"})
DEFINES = frozenset({"method", "has_method", "defines", "contains"})
_PYTHON = (".py", ".pyi")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_CONTAINERS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


def locate(root: Path, source_file: str) -> Path | None:
    """The file graphify meant by *source_file*, inside *root* only.

    graphify writes `source_file` relative to the folder it ran in, which may be the root or
    one of its ancestors (then the path starts with the root's own trailing folder names).
    Tried: `root / source_file`, then `root / rest` for every split `prefix/rest` of
    *source_file* whose prefix is the tail of *root*'s path. Symlinks are resolved, and a
    result outside *root* is refused."""
    if not source_file:
        return None
    parts = PurePosixPath(source_file.replace("\\", "/")).parts
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    real_root = root.resolve()
    tail = real_root.parts
    for k in range(len(parts)):
        prefix = parts[:k]
        if k and tuple(tail[-k:]) != prefix:
            continue
        path = (real_root.joinpath(*parts[k:])).resolve()
        if path.is_relative_to(real_root) and path.is_file():
            return path
    return None


@dataclass
class _Parsed:
    tree: ast.Module | None
    path: Path


@dataclass
class Sources:
    """Source files of one review, read and parsed once each."""

    root: Path | None
    cache: dict[str, _Parsed | None] = field(default_factory=dict)

    def get(self, source_file: str) -> _Parsed | None:
        if source_file in self.cache:
            return self.cache[source_file]
        found: _Parsed | None = None
        path = locate(self.root, source_file) if self.root else None
        if path is not None:
            tree = None
            if path.suffix in _PYTHON:
                try:
                    text = path.read_bytes().decode("utf-8", errors="replace")
                    tree = ast.parse(text, filename=str(path))
                except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            found = _Parsed(tree, path)
        self.cache[source_file] = found
        return found


def _token(label: str) -> str:
    """The Python name a graphify label stands for: `helper()` -> helper, `.go()` -> go,
    `pkg/util.py` -> util, `a.b.C` -> C."""
    token = label.rsplit("::", 1)[-1].strip()
    token = token.removesuffix("()")
    if token.endswith((".py", ".pyi")):
        return PurePosixPath(token.replace("\\", "/")).stem
    return token.rsplit(".", 1)[-1]


def _line(node: dict[str, Any]) -> int | None:
    loc = str(node.get("source_location") or "")
    return int(loc[1:]) if loc.startswith("L") and loc[1:].isdigit() else None


def _scope(tree: ast.Module, node: dict[str, Any]) -> ast.AST | None:
    """The subject's definition: the def/class at its `L<n>` (its own line or a decorator's);
    the module for a node without a location or for the file node itself."""
    line = _line(node)
    label = str(node.get("label") or "")
    source = str(node.get("source_file") or "")
    if line is None or PurePosixPath(source).name == label:
        return tree
    for child in ast.walk(tree):
        if isinstance(child, _DEFS) and (
            child.lineno == line or any(d.lineno == line for d in child.decorator_list)
        ):
            return child
    return None


def _body(scope: ast.AST) -> list[ast.AST]:
    """What runs (or is declared) inside the scope, not its own name or signature."""
    if isinstance(scope, _DEFS):
        return list(scope.body)
    return [scope]


def _is_ref(node: ast.AST, token: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == token and isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Attribute):
        return node.attr == token and isinstance(node.ctx, ast.Load)
    return False


def _holds(value: ast.AST, token: str) -> bool:
    """A container literal (or `dict(...)`) with a reference to *token* among its values."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        values: list[ast.AST] = [*value.args, *(k.value for k in value.keywords)]
        return any(_holds(v, token) or _is_ref(v, token) for v in values)
    if not isinstance(value, _CONTAINERS):
        return False
    return any(_is_ref(n, token) for n in ast.walk(value))


def _tables(tree: ast.Module, scope: ast.AST, token: str) -> set[str]:
    """Names the module, or the scope itself, binds to a container holding *token*."""
    names: set[str] = set()
    statements = [*tree.body, *(_body(scope) if scope is not tree else [])]
    for stmt in statements:
        targets: list[ast.expr] = []
        value: ast.AST | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = list(stmt.targets), stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is not None and _holds(value, token):
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _getattr_name(call: ast.Call) -> str | None:
    """The attribute name a `getattr(x, "n")`, `attrgetter("n")` or `methodcaller("n")`
    call reads, when it is a string constant."""
    func = call.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )
    index = {"getattr": 1, "attrgetter": 0, "methodcaller": 0}.get(name)
    if index is None or len(call.args) <= index:
        return None
    arg = call.args[index]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _call_kind(tree: ast.Module, scope: ast.AST, token: str, any_read: bool) -> str | None:
    tables = _tables(tree, scope, token)
    stored: set[int] = set()  # ids of reference nodes used as a value (callback, stored)
    found: str | None = None
    for part in _body(scope):
        for node in ast.walk(part):
            if isinstance(node, ast.Call):
                if _is_ref(node.func, token):
                    return "direct call"
                if _getattr_name(node) == token:
                    found = found or "call through getattr"
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    stored.add(id(arg))
            elif isinstance(node, ast.Assign | ast.Return | ast.AnnAssign) and node.value:
                stored.add(id(node.value))
            elif isinstance(node, _CONTAINERS):
                stored.update(id(e) for e in ast.iter_child_nodes(node))
            elif (
                isinstance(node, ast.Name) and node.id in tables and isinstance(node.ctx, ast.Load)
            ):
                found = found or "call through a table lookup"
    for part in _body(scope):
        for node in ast.walk(part):
            if _is_ref(node, token) and id(node) in stored:
                return found or "callback or stored reference"
    if any_read and not found and any(_is_ref(n, token) for n in ast.walk(scope)):
        found = "reference"  # annotations, decorators and bases included
    return found


def _imports(tree: ast.Module, token: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if token in (alias.name.rsplit(".", 1)[-1], alias.asname):
                    return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] == token:
                return True
    return False


def _defines(scope: ast.AST, token: str) -> bool:
    return any(
        isinstance(n, _DEFS) and n.name == token for part in _body(scope) for n in ast.walk(part)
    )


def _inherits(scope: ast.AST, token: str) -> bool:
    if not isinstance(scope, ast.ClassDef):
        return False
    return any(
        (isinstance(b, ast.Name) and b.id == token)
        or (isinstance(b, ast.Attribute) and b.attr == token)
        for b in scope.bases
    )


def code_evidence(
    sources: Sources, subject: dict[str, Any], relation: str, obj: dict[str, Any]
) -> str | None:
    """`R9 direct code evidence in <file> (<how>)` when the subject's source shows the
    relation to *obj* (module docstring), else None."""
    source_file = str(subject.get("source_file") or "")
    parsed = sources.get(source_file)
    if parsed is None or parsed.tree is None:
        return None
    token = _token(str(obj.get("label") or ""))
    if not token.isidentifier():
        return None
    tree = parsed.tree
    rel = relation.lower()
    how: str | None = None
    if rel in IMPORTS:
        how = "import" if _imports(tree, token) else None
    else:
        scope = _scope(tree, subject)
        if scope is None:
            return None
        if rel in CALLS:
            how = _call_kind(tree, scope, token, rel in _ANY_READ)
        elif rel in DEFINES:
            how = "definition" if _defines(scope, token) else None
        elif rel == "inherits":
            how = "base class" if _inherits(scope, token) else None
    return f"R9 direct code evidence in {source_file} ({how})" if how else None


def can_check(
    sources: Sources, subject: dict[str, Any], relation: str, obj: dict[str, Any]
) -> bool:
    """Whether `code_evidence` can tell for this edge: a relation it knows, the subject's
    Python file parsed, its scope found, an object label that is a name. Then None from
    `code_evidence` is evidence that the edge is absent from the code."""
    rel = relation.lower()
    if rel not in CALLS | IMPORTS | DEFINES | {"inherits"}:
        return False
    parsed = sources.get(str(subject.get("source_file") or ""))
    if parsed is None or parsed.tree is None:
        return False
    if not _token(str(obj.get("label") or "")).isidentifier():
        return False
    return rel in IMPORTS or _scope(parsed.tree, subject) is not None


def defines_name(sources: Sources, source_file: str, name: str) -> bool:
    """Whether the Python file defines a function or class called *name* (R9 for
    replace_node: the new name exists in the node's file)."""
    parsed = sources.get(source_file)
    token = _token(name)
    if parsed is None or parsed.tree is None or not token.isidentifier():
        return False
    return _defines(parsed.tree, token)
