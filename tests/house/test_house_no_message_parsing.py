"""No code reads a failure back out of its message text: what a caller needs from a
`ProviderError` is a typed field (`kind`, `status`, `retry_after`, `details`, e.g. the
budget ceiling hit: `BudgetLimit.of`). An AST scan over `src`: no regular expression runs
over a `.message`, and no workflow takes a `.message` apart (split, slice, search in it).

Regression: two workflows regex-parsed the budget ceiling out of "budget reached (calls
3/3)"; a reworded message would have changed their reports silently."""

from __future__ import annotations

import ast

from _helpers import ROOT

SRC = ROOT / "src" / "agentport"

# `re.search(...)` or `_PATTERN.search(...)`: the functions that run a regular expression
_REGEX = {"search", "match", "fullmatch", "findall", "finditer", "sub", "subn"}
# str methods that take a text apart (a workflow may show a message, never dissect it)
_DISSECT = {
    "split", "rsplit", "partition", "rpartition", "find", "rfind", "index", "rindex",
    "startswith", "endswith", "removeprefix", "removesuffix", "splitlines", "count",
}  # fmt: skip


def _is_message(node: ast.AST) -> bool:
    """`x.message`, or `str(x)` of a name that holds a `ProviderError` here (`err`, `error`,
    `failure`; `exc` is a library exception: a pydantic error's first line is shown)."""
    if isinstance(node, ast.Attribute) and node.attr == "message":
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in {"err", "error", "failure", "failed"}
    )


def _mentions_message(node: ast.AST) -> bool:
    return any(_is_message(n) for n in ast.walk(node))


def violations(source: str, *, workflow: bool) -> list[int]:
    """Line numbers in *source* that parse an error message (see the module docstring)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            regex = name in _REGEX and any(_mentions_message(a) for a in node.args)
            dissect = workflow and name in _DISSECT and _mentions_message(node.func.value)
            if regex or dissect:
                lines.append(node.lineno)
        elif workflow and isinstance(node, ast.Compare):
            ins = any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            if ins and any(_mentions_message(c) for c in node.comparators):
                lines.append(node.lineno)
        elif workflow and isinstance(node, ast.Subscript) and _is_message(node.value):
            lines.append(node.lineno)
    return lines


def test_no_module_parses_an_error_message() -> None:
    found = {
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        for line in violations(path.read_text(encoding="utf-8"), workflow="workflows" in path.parts)
    }
    assert not found, sorted(found)


def test_the_scan_sees_each_way_of_parsing_a_message() -> None:
    parsing = [
        'found = re.search(r"\\(([^)]*)\\)", error.message)',
        "why = _LIMIT.match(result.failure().message)",
        'n = re.sub("x", "", str(err))',
        'head = error.message.split(":")[0]',
        'hit = "calls" in failure.message',
        "tail = error.message[7:]",
        'ok = str(error).startswith("budget")',
    ]
    for line in parsing:
        assert violations(line, workflow=True), line
    shown = ["emit(message=str(error))", "print(error.message)", "why = str(limit)"]
    for line in shown:
        assert not violations(line, workflow=True), line
    # outside the workflows a backend may read its CLI's own output text (not a .message)
    assert not violations("m = _STATUS.match(message)", workflow=False)
