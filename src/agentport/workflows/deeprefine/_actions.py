r"""The action grammar: `insert_edge(s, r, o)`, `delete_edge(s, r, o)`, `replace_node(old, new)`.

```
refinement := item (SEP item)*         SEP = "|" or a newline, outside quotes
item       := NAME "(" [arg ("," arg)*] ")"
arg        := '"' chars '"' | "'" chars "'" | bare
chars      := any char but the quote and "\\", or an escape: \\ \" \' \n \r \t \| \uXXXX
bare       := text up to "," or ")" at parenthesis depth 0 (tolerated for small models)
```

Quotes, `|`, commas, parentheses, newlines and any Unicode are fine inside a quoted name, and
`render_action` produces text that `parse_refinement` reads back to the same action (the
reference split on `|` and newlines even inside quotes, F-16). Items that do not parse, use
an unknown name (case-sensitive, like the reference's apply), have the wrong arity, repeat an
earlier action, or come after `MAX_ACTIONS` are kept as `Rejected` with a reason, so review can
report them (F-12, F-14, F-15).

Parsing is linear in the text: one scanner walks it once, its position never moves back, and
blocks are found by forward searches (a text of repeated `insert_edge(` or `<refinement>`
used to take quadratic time). An action call that does not parse consumes what the scanner
read, so the next call is looked for after it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ._constants import MAX_ACTIONS

__all__ = [
    "ARITY",
    "Action",
    "Parsed",
    "Rejected",
    "extract_block",
    "parse_refinement",
    "render_action",
    "render_refinement",
]

ActionName = Literal["insert_edge", "delete_edge", "replace_node"]
ARITY: dict[str, int] = {"insert_edge": 3, "delete_edge": 3, "replace_node": 2}

_OPEN = re.compile(r"<refinement>", re.IGNORECASE)
_CLOSE = re.compile(r"</refinement>", re.IGNORECASE)
_EMPTY_BLOCK = re.compile(r"<refinement\s*/>", re.IGNORECASE)
# any `name(` (linear: one start per word); `_action_like` keeps those that name an edge or a
# node, so an unknown action written without a block (`add_edge(...)`) is kept as Rejected
_CALL_START = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "|": "|"}


@dataclass(frozen=True, slots=True)
class Action:
    """One well-formed action; `args` are the names exactly as written (unescaped)."""

    name: ActionName
    args: tuple[str, ...]

    def __str__(self) -> str:
        return render_action(self)


@dataclass(frozen=True, slots=True)
class Rejected:
    """An item that cannot be applied: its source text and why."""

    text: str
    reason: str

    def __str__(self) -> str:
        return self.text


Item = Action | Rejected


@dataclass(frozen=True, slots=True)
class Parsed:
    """The items of a refinement in order; `found` is False when the text held neither a
    `<refinement>` block nor any action call (the model did not answer the format)."""

    items: tuple[Item, ...]
    found: bool = True

    @property
    def actions(self) -> list[Action]:
        return [i for i in self.items if isinstance(i, Action)]


def _quote(value: str) -> str:
    """*value* as a double-quoted argument. A `<` that starts `</refinement` is written
    `\\u003c`: the block ends at the first closing tag, quotes or not (the parser finds
    blocks by a forward search, and so would a model's reader)."""
    out = []
    for i, ch in enumerate(value):
        if ch == "<" and value[i : i + 12].lower() == "</refinement":
            out.append("\\u003c")
        elif ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch in "\u2028\u2029\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_action(action: Action) -> str:
    """`name("a", "b", ...)`, escaped so that `parse_refinement` reads it back unchanged."""
    return f"{action.name}({', '.join(_quote(a) for a in action.args)})"


def render_refinement(actions: list[Action]) -> str:
    return "<refinement>" + "|".join(render_action(a) for a in actions) + "</refinement>"


class _Bad(Exception):
    pass


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_space(self, newlines: bool = True) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in (
            " \t\r\n" if newlines else " \t\r"
        ):
            self.pos += 1

    def quoted(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            self.pos += 1
            if ch == quote:
                return "".join(out)
            if ch != "\\":
                out.append(ch)
                continue
            if self.pos >= len(self.text):
                break
            nxt = self.text[self.pos]
            self.pos += 1
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", self.text[self.pos : self.pos + 4]):
                out.append(chr(int(self.text[self.pos : self.pos + 4], 16)))
                self.pos += 4
            else:
                out.append(_ESCAPES.get(nxt, "\\" + nxt))
        raise _Bad("unclosed quote")

    def bare(self) -> str:
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in "\"'|\n":
                raise _Bad(f"unexpected {ch!r} in an unquoted argument")
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            self.pos += 1
        return self.text[start : self.pos].strip()

    def call(self) -> tuple[str, list[str]]:
        match = _NAME.match(self.text, self.pos)
        if not match:
            raise _Bad("expected an action name such as insert_edge(...)")
        self.pos = match.end()
        self.skip_space(newlines=False)
        if self.peek() != "(":
            raise _Bad(f"expected '(' after {match.group()}")
        self.pos += 1
        args: list[str] = []
        self.skip_space()
        if self.peek() == ")":
            self.pos += 1
            return match.group(), args
        while True:
            self.skip_space()
            args.append(self.quoted() if self.peek() in "\"'" and self.peek() else self.bare())
            self.skip_space()
            ch = self.peek()
            self.pos += 1
            if ch == ")":
                return match.group(), args
            if ch != ",":
                raise _Bad("expected ',' or ')' after an argument" if ch else "missing ')'")

    def skip_item(self) -> None:
        """After an error: move to the next separator outside quotes."""
        quote = ""
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if quote:
                if ch == "\\":
                    self.pos += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch in "|\n":
                return
            self.pos += 1


def _check(name: str, args: list[str]) -> Action | str:
    if name not in ARITY:
        return f"unknown action {name!r}; expected insert_edge, delete_edge or replace_node"
    if len(args) != ARITY[name]:
        return f"{name} takes {ARITY[name]} arguments, got {len(args)}"
    for i, arg in enumerate(args):
        if not arg.strip():
            return f"argument {i + 1} of {name} is empty"
        bad = next((c for c in arg if c not in "\n\t" and unicodedata.category(c) == "Cc"), None)
        if bad is not None:
            return f"argument {i + 1} of {name} contains the control character {bad!r}"
    return Action(name, tuple(args))  # type: ignore[arg-type]


def _items(text: str) -> list[Item]:
    scan = _Scanner(text)
    items: list[Item] = []
    while True:
        while scan.peek() and scan.peek() in " \t\r\n|":
            scan.pos += 1
        if not scan.peek():
            return items
        start = scan.pos
        try:
            name, args = scan.call()
            scan.skip_space(newlines=False)
            if scan.peek() not in ("", "|", "\n"):
                raise _Bad("unexpected text after the action")
            checked = _check(name, args)
        except _Bad as exc:
            scan.skip_item()
            checked = str(exc)
        raw = text[start : scan.pos].strip()
        items.append(checked if isinstance(checked, Action) else Rejected(raw, checked))


def _blocks(text: str) -> list[str]:
    """Inner texts of the `<refinement>...</refinement>` blocks, left to right, each ending at
    the first closing tag after its opener (what a lazy regex found, in linear time)."""
    out: list[str] = []
    pos = 0
    while (opener := _OPEN.search(text, pos)) is not None:
        closer = _CLOSE.search(text, opener.end())
        if closer is None:
            break
        out.append(text[opener.end() : closer.start()])
        pos = closer.end()
    return out


def extract_block(text: str) -> tuple[str | None, int]:
    """The first `<refinement>` block's inner text (None when absent) and how many further
    blocks the text holds."""
    blocks = _blocks(text)
    if blocks:
        return blocks[0], len(blocks) - 1
    if _EMPTY_BLOCK.search(text):
        return "", 0
    return None, 0


def _action_like(name: str) -> bool:
    """A name that reads as a graph action: a known one in any case, or any name about an
    edge or a node (`add_edge`, `removeNode`)."""
    lowered = name.lower()
    return lowered in ARITY or "edge" in lowered or "node" in lowered


def _fallback(text: str) -> list[Item]:
    """Action calls written without a block: parse each from its name with the real scanner."""
    items: list[Item] = []
    scan = _Scanner(text)
    while (match := _CALL_START.search(text, scan.pos)) is not None:
        if not _action_like(match.group(1)):
            scan.pos = match.end()
            continue
        scan.pos = match.start()  # never behind: the search started at scan.pos
        try:
            name, args = scan.call()
            checked = _check(name, args)
        except _Bad as exc:
            checked = str(exc)
        scan.pos = max(scan.pos, match.end())
        if isinstance(checked, Action):
            items.append(checked)
        else:
            end = min(scan.pos, match.start() + 400)
            items.append(Rejected(text[match.start() : end].strip()[:200], checked))
    return items


def parse_refinement(text: str, max_actions: int = MAX_ACTIONS) -> Parsed:
    """Parse a model answer or refinement file into items (see the module grammar).

    The first `<refinement>` block is used; a later block's items come back `Rejected`
    ("outside the first block"). Without a block, bare action calls are taken. Beyond
    `max_actions` well-formed actions, and repeats, are `Rejected` too.
    """
    block, extra = extract_block(text)
    if block is None:
        items = _fallback(text)
        found = bool(items)
    else:
        items = _items(block)
        found = True
        if extra:
            for later in _blocks(text)[1:]:
                items += [
                    Rejected(str(i), "outside the first <refinement> block; ignored")
                    for i in _items(later)
                ]
    out: list[Item] = []
    seen: dict[Action, int] = {}
    count = 0
    for item in items:
        if isinstance(item, Action):
            if item in seen:
                item = Rejected(render_action(item), f"duplicate of action {seen[item] + 1}")
            elif count >= max_actions:
                item = Rejected(render_action(item), f"over the {max_actions}-action cap")
            else:
                seen[item] = len(out)
                count += 1
        out.append(item)
    return Parsed(tuple(out), found)
