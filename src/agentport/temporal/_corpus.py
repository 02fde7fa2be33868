"""A research corpus by reference: corpus mode's searches and quote checks as one activity.

`agentport research --batch FILE --corpus DIR --temporal ...` sends each question the
corpus folder's path (under the worker's `--root`s), never its documents: the worker
serving the workflow queue indexes the folder once (`load_corpus`, kept in `Parsed`, keyed
by the folder and its passage size, indexed again when a document's size or mtime changes
or a document is added or removed) and answers each `CorpusRead` with the few passages a
search returns or whether a quote is in its document. History per question is then the
passages its searches returned (a few KB each), not the corpus.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from returns.result import Failure
from temporalio import activity
from temporalio.common import RawValue

from ..workflows.deep_research import CORPUS_SUFFIXES, Corpus, load_corpus, passage_row
from ._batch import _in_thread, _inside
from ._graph import Parsed
from ._inputs import Closed, PathText, parse

__all__ = ["CORPUS_OPS", "CorpusRead", "CorpusReadResult", "read_corpus"]

READ_CORPUS_ACTIVITY = "agentport.research.read_corpus"
#: what `CorpusRead.op` may name
CORPUS_OPS = ("open", "search", "grounded")


class CorpusRead(Closed):
    """One read of the corpus folder `corpus`, split into passages of at most
    `max_passage_chars`: `open` (index it; the skipped files), `search` (`Corpus.search`
    of `query`: at most `k` passages, none of `exclude`), `grounded` (`Corpus.grounded`:
    whether `quote` occurs in `url`'s document)."""

    corpus: PathText
    op: Literal["open", "search", "grounded"]
    max_passage_chars: Annotated[int, Field(ge=200, le=1_000_000)] = 2000
    query: Annotated[str, Field(max_length=100_000)] = ""
    k: Annotated[int, Field(ge=0, le=1000)] = 0
    exclude: list[Annotated[str, Field(max_length=8192)]] = Field(
        default_factory=list, max_length=100_000
    )
    quote: Annotated[str, Field(max_length=100_000)] = ""
    url: Annotated[str, Field(max_length=8192)] = ""


@dataclass(frozen=True)
class CorpusReadResult:
    """`passages` (`passage_row` dicts) of a search, `found` of a quote check, `skipped`
    of `open`; `error`: the one line of a folder that does not index (the question fails
    with it, never retried)."""

    passages: list[dict[str, Any]] = field(default_factory=list)
    found: bool = False
    skipped: list[str] = field(default_factory=list)
    error: str = ""


def _tree_stamp(real: str) -> tuple[int, int, int]:
    """How many documents the folder holds, their total size and newest mtime (ns): an
    added, removed or edited document changes it (the files `load_corpus` reads)."""
    count = size = newest = 0
    for top, dirs, files in os.walk(real):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith(".") or Path(name).suffix.lower() not in CORPUS_SUFFIXES:
                continue
            try:
                st = os.stat(os.path.join(top, name))
            except OSError:
                continue
            count, size, newest = count + 1, size + st.st_size, max(newest, st.st_mtime_ns)
    return (count, size, newest)


def _index(real: str, chars: int) -> Corpus:
    loaded = load_corpus(real, max_passage_chars=chars)
    if isinstance(loaded, Failure):
        raise ValueError(loaded.failure().message)
    return loaded.unwrap()


_CORPORA: Parsed[Corpus] = Parsed()


def _read(data: CorpusRead, path: Path) -> CorpusReadResult:
    real = str(path)
    chars = data.max_passage_chars
    try:
        corpus = _CORPORA.get((real, chars), lambda: _tree_stamp(real), lambda: _index(real, chars))
    except ValueError as exc:
        return CorpusReadResult(error=str(exc).split("\n")[0])
    if data.op == "open":
        return CorpusReadResult(skipped=corpus.skipped)
    if data.op == "grounded":
        return CorpusReadResult(found=corpus.grounded(data.quote, data.url))
    found = corpus.search(data.query, data.k, exclude=data.exclude)
    return CorpusReadResult([passage_row(p) for p in found])


@activity.defn(name=READ_CORPUS_ACTIVITY)
async def read_corpus(raw: RawValue) -> CorpusReadResult:
    """One `CorpusRead` of a corpus folder under this worker's roots (input that is not a
    `CorpusRead`, or a folder outside the roots or through a link, is a non-retryable
    `ApplicationError`); a folder that does not index is `error`, not a raise."""
    data = parse(CorpusRead, raw, "read_corpus")
    path = _inside(data.corpus, "corpus", "dir")
    return await _in_thread(lambda: _read(data, path))
