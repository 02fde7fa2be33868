"""The questions file of a batch: one question per line, UTF-8.

Blank lines are skipped; a question that appears again (after trimming) is reported and
skipped; a byte that is not UTF-8 is a one-line error naming the line. Each question gets a
stable id from its text (not its line number), so a report found in the output folder
belongs to the same question even after the file was edited.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BatchInputError", "Question", "QuestionsFile", "question_id", "read_questions"]

#: a questions file larger than this is refused (a batch is questions, not a corpus)
MAX_BYTES = 16 * 1024 * 1024


class BatchInputError(Exception):
    """Bad batch input (questions file, output folder, batch id); `str()` is one line that
    names the file and, where there is one, the line."""


@dataclass(frozen=True)
class Question:
    """One question: its 1-based `line`, the trimmed `text` and its stable `id`."""

    line: int
    text: str
    id: str


@dataclass(frozen=True)
class QuestionsFile:
    """The questions to run, in file order, and the `(line, first line)` of each duplicate
    that was skipped."""

    questions: list[Question]
    duplicates: list[tuple[int, int]]


def question_id(text: str) -> str:
    """`<slug of the first words>-<10 hex of sha256(text)>`: readable, stable, unique per
    text (the hash decides), safe as a file name and as a Temporal workflow id."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:40].rstrip("-") or "q"
    return f"{slug}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]}"


def read_questions(path: Path) -> QuestionsFile:
    """Parse *path*. Raises `BatchInputError` (one line) for a missing or unreadable file,
    a non-UTF-8 byte (`<path>:<line>: ...`) or a file without any question."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BatchInputError(
            f"{path}: cannot read the questions file: {exc.strerror or exc}"
        ) from None
    if len(data) > MAX_BYTES:
        raise BatchInputError(f"{path}: the questions file is over {MAX_BYTES} bytes")
    questions: list[Question] = []
    first_seen: dict[str, int] = {}
    duplicates: list[tuple[int, int]] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BatchInputError(
                f"{path}:{number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); save the questions file as UTF-8"
            ) from None
        text = line.strip().lstrip("\ufeff").strip() if number == 1 else line.strip()
        if not text:
            continue
        if text in first_seen:
            duplicates.append((number, first_seen[text]))
            continue
        first_seen[text] = number
        questions.append(Question(number, text, question_id(text)))
    if not questions:
        raise BatchInputError(f"{path}: the questions file has no question (one per line)")
    return QuestionsFile(questions, duplicates)
