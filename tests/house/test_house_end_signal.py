"""How a run ends travels as a typed `EndSignal` (`AgentEvent.end`), never as string keys
of `AgentEvent.metadata`: an AST scan over `src` finds no read or write of a retired key
(`terminal`, `final_text`, `structured`, `retry_notice`, ...) in any `metadata`, and no read
of a failure's `status` there (it is `EndSignal.status`; `metadata["status"]` is only a web
fetch's HTTP status, for callers). `AgentEvent` itself refuses the keys at construction;
this scan also covers what construction does not see (reads, `model_copy` updates, in-place
changes).

Regression: about 24 string keys decided how runs end; a misspelled one silently changed a
result."""

from __future__ import annotations

import ast

from _helpers import ROOT
from agentport.core._protocols import RETIRED_METADATA_KEYS

SRC = ROOT / "src" / "agentport"
_NOT_READ = RETIRED_METADATA_KEYS | {"status"}


def _is_metadata(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "metadata") or (
        isinstance(node, ast.Name) and node.id in {"metadata", "meta"}
    )


def _key(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dict_keys(node: ast.AST) -> set[str]:
    if not isinstance(node, ast.Dict):
        return set()
    return {k for k in map(_key, node.keys) if k is not None}


def violations(source: str) -> list[str]:
    """`line: what` for each use of an end-state key in metadata in *source*."""
    found: list[str] = []

    def hit(node: ast.AST, what: str) -> None:
        found.append(f"{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            key = _key(node.slice)
            if _is_metadata(node.value) and key is not None:
                writing = isinstance(node.ctx, ast.Store | ast.Del)
                if key in (RETIRED_METADATA_KEYS if writing else _NOT_READ):
                    hit(node, f"metadata[{key!r}]")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target, name = node.func.value, node.func.attr
            first = node.args[0] if node.args and _is_metadata(target) else None
            if name in {"get", "pop", "setdefault"} and (key := _key(first)) in _NOT_READ:
                hit(node, f"metadata.{name}({key!r})")
            if name == "update" and first and (keys := _dict_keys(first) & RETIRED_METADATA_KEYS):
                hit(node, f"metadata.update({sorted(keys)})")
            if name == "model_copy":
                for kw in node.keywords:
                    if kw.arg == "update" and "metadata" in _dict_keys(kw.value):
                        hit(node, "model_copy(update={'metadata': ...}) skips the check")
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "metadata" and (keys := _dict_keys(kw.value) & RETIRED_METADATA_KEYS):
                    hit(node, f"metadata={{{', '.join(sorted(keys))}}}")
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            key = _key(node.left)
            if key in _NOT_READ and any(_is_metadata(c) for c in node.comparators):
                hit(node, f"{key!r} in metadata")
    return found


def test_no_module_uses_end_state_keys_in_metadata() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in violations(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_scan_sees_each_way_a_key_was_used() -> None:
    old = [
        'if event.metadata.get("terminal"): pass',
        'text = answer.metadata["final_text"]',
        'notes = [e for e in events if "warning" in e.metadata]',
        'raw = failed.metadata.get("status")',
        'event.metadata["fatal"] = True',
        'meta["final_text"] = text',
        'event.metadata.update({"retry_notice": True})',
        'AgentEvent(type=t, metadata={"terminal": True, "usage": u})',
        'event.model_copy(update={"is_error": True, "metadata": marked})',
    ]
    for line in old:
        assert violations(line), line
    fine = [
        'sid = event.metadata.get("session_id")',
        'AgentEvent(type=t, metadata={"tool": "x", "status": 200})',
        "if event.end.terminal: pass",
        'details = {"finish_reason": "refusal"}',
    ]
    for line in fine:
        assert not violations(line), line
