"""The follow-up round: after the first pass, search for what the findings name but do not
answer (pure: no I/O).

One round of angles taken from the question's own words never reaches a second document
whose name only the first one gives ("X is a town in the Karsk region" -> the page about
the Karsk region: the bridge of a two-hop question), and one side of a comparison can use
up the fetch slots before the other side is read. `follow_up_angles` returns at most
`limit` new angles:

- every name the question gives that no claim and no source read so far mentions (the
  other side of a comparison): its name with the question's asked words;
- every name a claim gives that the question does not and whose document was not read
  (the bridge): a document title when the corpus has one by that name, else the name run;
  with the question's asked words.

The round is bounded (`ResearchConfig.rounds`, `followup_angles`, `followup_fetches`)
and counted like the first: its searches, fetches and votes are agent calls in the plan,
the budget and `agentCalls`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._corpus import STOP_WORDS, query_terms
from ._run import Record, Run
from ._schemas import Angle
from ._small_qa import Ask, ask_of, carries, mentions, overlap, stems

__all__ = ["follow_up_angles", "follow_ups"]

_NAME_RUN = re.compile(r"\b[A-Z][\w\-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w\-]*)*")
_LABEL = "follow-up: "


def _asked(question: str, names: Sequence[str]) -> list[str]:
    name_words = {w.lower() for n in names for w in re.findall(r"\w+", n)}
    return [w for w in query_terms(question) if w not in name_words]


def _answers(ask: Ask, claim: str, name: str) -> bool:
    """True when *claim* states something the question asks about *name*: an asked word
    that is not part of the name ("region" in "the Karsk region" is no answer), or a value
    of the answer's type."""
    asked = set(ask.asked) - stems(name)
    return bool(overlap(asked, stems(claim))) or carries(ask.kind, claim, ask.question)


def follow_up_angles(
    question: str,
    found: Sequence[tuple[str, str]],
    read_titles: Sequence[str],
    titles: Sequence[str] = (),
    done: Sequence[str] = (),
    limit: int = 2,
    common: frozenset[str] = frozenset(),
) -> list[Angle]:
    """The follow-up angles for *question* after the first pass found the (claim, source
    title) pairs *found* in documents titled *read_titles* (see the module docstring).
    *titles* are the corpus's document titles (empty in web mode); *done* the queries
    already searched; *common* words say nothing (in most documents). A name counts as
    answered when a claim that mentions it (or comes from its document) states an asked
    word or a value of the answer's type. At most *limit* angles, the question's
    unanswered names first."""
    ask = ask_of(question, common)
    asked = _asked(question, ask.names)

    def answered(name: str) -> bool:
        return any(
            (mentions(claim, name) or mentions(title, name)) and _answers(ask, claim, name)
            for claim, title in found
        )

    wanted: list[tuple[str, str]] = [
        (name, "named in the question, not answered yet")
        for name in ask.names
        if not answered(name)
    ]
    for claim, _ in found:
        if titles:
            bridges = [t for t in titles if t and mentions(claim, t) and not mentions(question, t)]
        else:
            bridges = [
                m.group(0)
                for m in _NAME_RUN.finditer(claim)
                if m.start() > 0
                and m.group(0).lower() not in STOP_WORDS
                and not mentions(question, m.group(0))
            ]
        wanted += [(b, "named by a finding, not answered yet") for b in bridges if not answered(b)]
    out: list[Angle] = []
    for name, why in wanted:
        query = " ".join([name, *asked])
        if query in done or any(a.query == query for a in out):
            continue
        out.append(Angle(label=_LABEL + name, query=query, rationale=why))
        if len(out) >= limit:
            break
    return out


def follow_ups(
    question: str, run: Run, angles: Sequence[Angle], per_angle: Sequence[Sequence[Record | None]]
) -> list[Angle]:
    """`follow_up_angles` for a run after a round: the claims and sources it holds."""
    sources = [s for sub in per_angle for s in sub if s is not None]
    corpus = run.corpus
    common = frozenset(
        w for w in query_terms(question) if corpus is not None and corpus.doc_share(w) > 0.75
    )
    return follow_up_angles(
        question,
        [(str(c.get("claim", "")), str(s.get("title", ""))) for s in sources for c in s["claims"]],
        [str(s.get("title", "")) for s in sources],
        corpus.titles if corpus is not None else (),
        [a.query for a in angles],
        run.config.followup_angles,
        common if corpus is not None and corpus.documents >= 4 else frozenset(),
    )
