"""`history.jsonl`: the pending-query queue, graphify memory import, marking refined.

Rows (reference 2.4): `id`, `ts` (UTC), `query`, `source`, `refined`, optional `memory_file`
(relative to the project root, F-20), `trace_file`, `refined_ts`. A corrupt line is reported
and skipped, never fatal (F-11/F03); rewrites are atomic (F-20).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import bounded
from ...transport import read_regular
from ._files import Layout, append_text, atomic_write, ensure_state
from ._trace import query_id

__all__ = [
    "History",
    "add_query",
    "jsonl_line",
    "jsonl_lines",
    "mark_refined",
    "memory_question",
    "pending",
    "read_history",
    "sync_memory",
]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# `str.splitlines()` also breaks at these; JSON keeps them raw unless told otherwise
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_BREAKS = re.compile("[\x85\u2028\u2029]")


def jsonl_line(row: Any) -> str:
    """One JSON Lines row (no newline): UTF-8 text, with U+0085, U+2028 and U+2029 escaped so
    that a reader splitting on any line boundary (`str.splitlines()`, the reference CLI's
    readers) still sees one row per line. `json.loads` reads it back unchanged."""
    return _BREAKS.sub(lambda m: _LINE_BREAKS[m.group()], json.dumps(row, ensure_ascii=False))


def jsonl_lines(data: bytes) -> list[str]:
    """The lines of a JSON Lines file: split on `\\n` only (a trailing `\\r` dropped), never
    on the other characters `str.splitlines()` treats as line ends."""
    text = data.decode("utf-8", errors="replace")
    return [line.removesuffix("\r") for line in text.split("\n")]


@dataclass
class History:
    """Rows in file order and one message per skipped line (`history.jsonl:N: ...`)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ids(self) -> set[str]:
        return {str(r.get("id")) for r in self.rows}


def read_history(path: Path) -> History:
    history = History()
    if not path.exists():
        return history
    for number, line in enumerate(jsonl_lines(path.read_bytes()), start=1):
        if not line.strip():
            continue
        try:
            row = bounded.loads(line, max_depth=32)
        except json.JSONDecodeError as exc:
            history.problems.append(f"{path}:{number}: not valid JSON ({exc.msg}); line skipped")
            continue
        if not isinstance(row, dict) or not isinstance(row.get("query"), str):
            history.problems.append(f"{path}:{number}: query: missing; line skipped")
            continue
        row.setdefault("id", query_id(row["query"]))
        history.rows.append(row)
    return history


def pending(history: History) -> list[dict[str, Any]]:
    """Rows with `refined != true`, deduplicated by id (first occurrence), in file order."""
    seen: set[str] = set()
    out = []
    for row in history.rows:
        if row.get("refined") is True or row["id"] in seen:
            continue
        seen.add(row["id"])
        out.append(row)
    return out


def _append(path: Path, rows: list[dict[str, Any]], mode: int | None = None) -> None:
    # never through a symlink or a foreign folder: a cloned repository could point
    # history.jsonl at a shell start-up file (agentport.transport._fs.append_text)
    ensure_state(path.parent)
    append_text(path, "".join(jsonl_line(row) + "\n" for row in rows), mode=mode)


def add_query(layout: Layout, question: str, source: str = "user", **extra: Any) -> dict[str, Any]:
    row = {
        "id": query_id(question),
        "ts": _now(),
        "query": question.strip(),
        "source": source,
        "refined": False,
        **extra,
    }
    _append(layout.history, [row], layout.graph_mode())
    return row


_YAML_ESCAPES = {
    "\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t", "0": "\0", "/": "/", " ": " ",
    "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}  # fmt: skip


def _yaml_double(value: str) -> str:
    """Unescape a YAML double-quoted scalar body (graphify's writer escapes, ref 1.4)."""
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch != "\\" or i + 1 >= len(value):
            out.append(ch)
            i += 1
            continue
        nxt = value[i + 1]
        width = {"x": 2, "u": 4, "U": 8}.get(nxt)
        if width and re.fullmatch(rf"[0-9a-fA-F]{{{width}}}", value[i + 2 : i + 2 + width]):
            out.append(chr(int(value[i + 2 : i + 2 + width], 16)))
            i += 2 + width
            continue
        out.append(_YAML_ESCAPES.get(nxt, "\\" + nxt))
        i += 2
    return "".join(out)


def memory_question(text: str) -> str | None:
    """The question of a graphify `query_*.md`: front-matter `question:`, else `# Q:`."""
    text = text.replace("\r\n", "\n")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        # "\n" only: graphify leaves U+0085 raw inside the quoted value
        for line in text[4 : end if end > 0 else None].split("\n"):
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "question":
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] == '"':
                    value = _yaml_double(value[1:-1])
                elif len(value) >= 2 and value[0] == value[-1] == "'":
                    value = value[1:-1].replace("''", "'")
                if value.strip():
                    return value.strip()
    match = re.search(r"^# Q:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


#: a graphify memory file is one question and its answer; a larger one is skipped
MEMORY_FILE_LIMIT = 4 * 1024 * 1024


def sync_memory(layout: Layout) -> tuple[int, int, list[str]]:
    """Import `graphify-out/memory/query_*.md` (sorted by name) as `graphify_memory` rows for
    unknown ids. Returns (added, known ids, problems). A file that resolves outside the
    project (a symlink out of it, or a linked memory folder), is not a regular file, is over
    4 MiB or is not UTF-8 is skipped with a problem line naming it."""
    history = read_history(layout.history)
    known = history.ids
    problems = list(history.problems)
    rows = []
    root = layout.root.resolve()
    for path in sorted(layout.memory.glob("query_*.md")) if layout.memory.is_dir() else []:
        real = path.resolve()
        if not real.is_relative_to(root):  # a cloned repository's link to ~/.ssh/..., say
            problems.append(f"{path}: resolves outside the project (to {real}); not imported")
            continue
        try:
            data, _ = read_regular(path, MEMORY_FILE_LIMIT)
            question = memory_question(data.decode("utf-8"))
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or 'unreadable'}; skipped")
            continue
        except UnicodeDecodeError:
            problems.append(f"{path}: not UTF-8 text; skipped")
            continue
        if not question:
            problems.append(f"{path}: question: missing; skipped")
            continue
        qid = query_id(question)
        if qid in known:
            continue
        known.add(qid)
        rows.append(
            {
                "id": qid,
                "ts": _now(),
                "query": question,
                "source": "graphify_memory",
                "refined": False,
                "memory_file": str(path.relative_to(layout.root)),
            }
        )
    if rows:
        _append(layout.history, rows, layout.graph_mode())
    return len(rows), len(known), problems


def mark_refined(layout: Layout, qid: str, question: str, trace_file: str | None) -> None:
    """Add a row if the id is new, then set `refined` on every row with that id (atomic
    rewrite; corrupt lines are kept verbatim so nothing is lost)."""
    path = layout.history
    lines = jsonl_lines(path.read_bytes()) if path.exists() else []
    out, found = [], False
    for line in lines:
        if not line.strip():
            continue
        try:
            row = bounded.loads(line, max_depth=32)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if isinstance(row, dict) and row.get("id") == qid:
            found = True
            row["refined"] = True
            row["refined_ts"] = _now()
            line = jsonl_line(row)
        out.append(line)
    if not found:
        row = {
            "id": qid, "ts": _now(), "query": question, "source": "deeprefine_loop",
            "refined": True, "trace_file": trace_file, "refined_ts": _now(),
        }  # fmt: skip
        out.append(jsonl_line(row))
    ensure_state(path.parent)
    atomic_write(path, ("\n".join(out) + "\n").encode("utf-8"), mode=layout.graph_mode())
