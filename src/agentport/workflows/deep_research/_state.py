"""The state one research run's phases share (`Research`): the question, the run, the
angles, the sources per angle, the claims found, the verdicts, and what is still pending;
and `Ranking`, what the barrier between extraction and verification decides.

The search, fetch and verify phases run concurrently on one event loop; each phase reads
and writes this one object (no locks but the deduplication's: the loop switches tasks only
at an `await`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.abc

from ._config import ResearchConfig
from ._core import ClaimPos, Deduper
from ._corpus_source import CorpusSource
from ._honesty import work_key
from ._run import Record, Run
from ._schemas import Angle
from ._web_own import OwnWeb

__all__ = ["Mode", "Ranking", "Research"]

Mode = Literal["web", "corpus"]


@dataclass(eq=False)
class Research:
    """One run's shared state. `per_angle[ai][slot]` is the source fetched for angle *ai*'s
    slot (None until its extraction ends); `known` the grounded claims so far (position,
    claim); `pending_searches` the angles whose search has not ended (-1 while a follow-up
    round may still add angles), `pending_fetches` the (angle, slot) not extracted yet;
    `launched` the claims whose verification started, `verdicts` the ones tallied."""

    question: str
    run: Run
    mode: Mode
    started: float  # time.monotonic() at the start: the report's durationS
    own: OwnWeb | None  # agentport's own web tools (`_web_own`), else None
    deduper: Deduper  # the seen-set and fetch slots, shared by every angle
    angles: list[Angle] = field(default_factory=list)
    dedup_lock: anyio.Lock = field(default_factory=anyio.Lock)
    works: dict[str, str] = field(default_factory=dict)
    mirrors: dict[str, list[str]] = field(default_factory=dict)
    per_angle: list[list[Record | None]] = field(default_factory=list)
    searches_done: list[int] = field(default_factory=list)
    pending_searches: set[int] = field(default_factory=set)
    pending_fetches: set[tuple[int, int]] = field(default_factory=set)
    known: list[tuple[ClaimPos, Record]] = field(default_factory=list)
    ungrounded: list[Record] = field(default_factory=list)
    verdicts: dict[ClaimPos, Record] = field(default_factory=dict)
    launched: set[ClaimPos] = field(default_factory=set)
    # small-model corpus mode: angle ai's fetch slots wait for angle ai-1's (`ordered`)
    in_order: list[anyio.Event] = field(default_factory=list)
    verifiers: anyio.abc.TaskGroup | None = None

    @property
    def config(self) -> ResearchConfig:
        return self.run.config

    @property
    def corpus(self) -> CorpusSource | None:
        """The corpus searched (corpus and small-model modes), else None (web modes)."""
        return self.run.source

    @property
    def web(self) -> OwnWeb | None:
        """agentport's own web tools when they search (web mode, no corpus), else None."""
        return self.own if self.run.source is None else None

    @property
    def ordered(self) -> bool:
        """Small-model corpus mode searches without a model call, so angle order costs no
        time: the first angles (the documents the question names) get their fetch slots
        first."""
        return self.run.source is not None and self.config.small_model

    def add_angles(self, angles: list[Angle]) -> range:
        """Add *angles* to search (the scope's, then a follow-up round's); their indices."""
        first = len(self.angles)
        self.angles += angles
        self.per_angle += [[] for _ in angles]
        if self.ordered and (first == 0 or self.in_order):
            self.in_order += [anyio.Event() for _ in angles]
        self.pending_searches.update(range(first, len(self.angles)))
        return range(first, len(self.angles))

    def key_of(self, result: Record) -> str | None:
        """The key of the work *result* is a copy of (`_honesty.work_key`)."""
        if self.corpus is not None:
            passage = self.corpus.passage(result["url"])
            return work_key(result["url"], "", passage.text if passage else "")
        return work_key(result["url"], result.get("title") or "")


@dataclass(frozen=True)
class Ranking:
    """The barrier's decision: every source and claim found, the claims to verify
    (`ranked`, at most MAX_VERIFY_CLAIMS) and the eligible ones over the cap (`cut`)."""

    sources: list[Record]
    claims: list[Record]
    ranked: list[Record]
    cut: list[Record]
