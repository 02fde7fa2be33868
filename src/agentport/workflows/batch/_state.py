"""The batch's state file, `<out>/batch.json`: one entry per question with its status
(`pending`, `running`, `done`, `failed`; under a batch budget also `partial`: a budget
ceiling ended it, its report is `<id>.partial.md`; and `not_run`: the budget was reached
before it started), report file, error and, for refine batches, the trace / actions files
and whether they were applied. `extra["budget"]["spent"]` is what the batch's model calls
have spent so far, over all its runs (the batch budget counts from there on a rerun).
Written atomically after every change, so a kill leaves the previous complete state; the
reports themselves are the ground truth for "done"
(a question whose report is in the folder is never run again).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...transport import atomic_write, check_writable, ensure_real_dir, open_lock_file
from ._questions import BatchInputError, Question

__all__ = ["STATE_FILE", "BatchState", "Item", "Status"]

STATE_FILE = "batch.json"
LOCK_FILE = ".batch.lock"
Status = Literal["pending", "running", "done", "failed", "partial", "not_run"]
#: every status, in the order `counts()` lists them
STATUSES: tuple[Status, ...] = ("done", "failed", "running", "pending", "partial", "not_run")


@dataclass
class Item:
    """One question's entry in the state file."""

    id: str
    line: int
    question: str
    status: Status = "pending"
    report: str | None = None
    error: str | None = None
    trace: str | None = None
    actions: str | None = None
    applied: bool | None = None


@dataclass
class BatchState:
    """The state of the batch in *out*; `save()` writes it atomically."""

    out: Path
    kind: str
    items: dict[str, Item] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    current: set[str] = field(default_factory=set)  # ids of this run's questions

    @classmethod
    def open(cls, out: Path, kind: str, questions: list[Question], suffix: str) -> BatchState:
        """Create *out* if needed, load its state (a state of another kind of batch is
        refused), add the new questions and mark done every question whose report exists.
        Raises `BatchInputError` (one line) for an unusable folder or state file."""
        try:
            ensure_real_dir(out)
            check_writable(out)  # before the first model call, not after it
        except OSError as exc:
            raise BatchInputError(
                f"{out}: cannot use as the batch folder: {exc.strerror or exc}"
            ) from None
        state = cls(out, kind)
        path = out / STATE_FILE
        if path.exists():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                if raw.get("kind") != kind:
                    raise BatchInputError(
                        f"{path}: holds a {raw.get('kind')!r} batch, not {kind!r}; "
                        "use another --out folder"
                    )
                state.items.update(_items(raw))
                state.extra = dict(raw.get("extra") or {})
            except (ValueError, TypeError, AttributeError) as exc:
                raise BatchInputError(f"{path}: not a batch state file ({exc})") from None
        for q in questions:
            item = state.items.get(q.id) or Item(q.id, q.line, q.text)
            item.line = q.line
            report = out / f"{q.id}{suffix}"
            if report.exists():
                item.status, item.report, item.error = "done", report.name, None
            elif item.status in ("done", "running"):
                item.status = "pending"  # its report is gone, or it was cut off
            state.items[q.id] = item
            state.current.add(q.id)
        return state

    def counts(self) -> dict[str, int]:
        """Statuses of this run's questions (an older question still in the state file,
        no longer in the questions file, is kept but not counted)."""
        counter = Counter(item.status for item in self.items.values() if item.id in self.current)
        return {s: counter.get(s, 0) for s in STATUSES}

    def save(self) -> None:
        """Write `batch.json` atomically, merged under a lock (`.batch.lock`, `flock`): rows
        another batch on the same folder wrote since this one read the file are kept (this
        run's questions are this run's to write)."""
        with _locked(self.out / LOCK_FILE):
            path = self.out / STATE_FILE
            with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
                raw = json.loads(path.read_text(encoding="utf-8"))
                if raw.get("kind") == self.kind:
                    theirs = _items(raw)
                    self.items.update({k: v for k, v in theirs.items() if k not in self.current})
            data = {
                "version": 1,
                "kind": self.kind,
                "counts": self.counts(),
                "items": [asdict(item) for item in sorted(self.items.values(), key=_order)],
                "extra": self.extra,
            }
            atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _items(raw: dict[str, Any]) -> dict[str, Item]:
    """The rows of a parsed `batch.json` by id; raises ValueError / TypeError on bad rows."""
    items = (Item(**entry) for entry in raw.get("items", []))
    return {item.id: item for item in items}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = open_lock_file(path, mode=0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _order(item: Item) -> tuple[int, str]:
    return item.line, item.id
