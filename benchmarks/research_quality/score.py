"""Scores of one research report against one benchmark question (pure: no I/O).

Read from the report's `summary` and `findings` only (what a reader reads), never from the
appendix (verified claims, refuted, sources):

- correct: every gold answer (any accepted spelling) occurs in the summary or a finding,
  compared normalised (case, punctuation and thousands separators ignored, whole words);
  an answerable question whose report abstains is not correct, an unanswerable one is
  correct when the report abstains;
- recall: the share of the gold documents cited by a finding;
- quote_precision: the share of confirmed claims whose quote occurs verbatim (normalised)
  in the document it cites, checked against the corpus files here, not the report's own
  `grounded` flag; None when the report has no confirmed claim;
- refuted: planted questions only: no planted value occurs in the summary or findings;
- abstained: the report has no finding, or its summary says the documents do not answer;
- lead: the summary's first sentence states the first gold answer (an unanswerable
  question: the report abstains): the answer comes first, not somewhere in a list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["abstained", "lead_sentence", "normalise", "score", "states"]

_WORD = re.compile(r"\w+", re.UNICODE)
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)")
_ABSTAIN = re.compile(
    r"\b(?:do(?:es)? not (?:answer|say|state|mention|contain)|no (?:claims? extracted|"
    r"information|answer)|not (?:stated|found|answered) in|cannot be answered)\b",
    re.IGNORECASE,
)


# A sentence ends at ". " before a capital (not after an initial: "H. Peter"), or at a
# "[source]" label the small-model summary puts after each claim.
SENTENCE_END = r"(?<=[.!?])(?<!\s[A-Z]\.)\s+(?=[A-Z`*_\[(\"'])"
_LEAD_END = re.compile(SENTENCE_END + r"|\s\[[^\]]+\](?:\s|$)")


def lead_sentence(summary: Any) -> str:
    """The first sentence of *summary* (its first claim, in a small-model summary)."""
    return _LEAD_END.split(str(summary or "").strip(), maxsplit=1)[0]


def normalise(text: str) -> str:
    """Case-folded words joined by single spaces, thousands separators dropped
    ("48,200" == "48200"), with a space at both ends for whole-word matching."""
    text = _THOUSANDS.sub("", str(text))
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def _items(value: Any) -> list[Any]:
    """A report field that should be a list, as a list (anything else: empty)."""
    return list(value) if isinstance(value, list) else []


def _said(report: Mapping[str, Any]) -> str:
    parts = [str(report.get("summary") or "")]
    for f in _items(report.get("findings")):
        if isinstance(f, Mapping):
            parts.append(str(f.get("claim") or ""))
    return normalise(" ".join(parts))


def states(report: Mapping[str, Any], spellings: Sequence[str]) -> bool:
    """True when one of *spellings* occurs (normalised, whole words) in the summary or a
    finding."""
    said = _said(report)
    return any(normalise(s).strip() and normalise(s) in said for s in spellings)


def abstained(report: Mapping[str, Any]) -> bool:
    findings = [f for f in _items(report.get("findings")) if isinstance(f, Mapping)]
    return not findings or bool(_ABSTAIN.search(str(report.get("summary") or "")))


def _path_of(url: str) -> str:
    """`corpus://towns/x.md/3` -> `towns/x.md`."""
    rest = str(url).removeprefix("corpus://")
    head, _, tail = rest.rpartition("/")
    return head if tail.isdigit() else rest


def _quote_ok(quote: str, doc: str | None) -> bool:
    if doc is None:
        return False
    parts = [normalise(p).strip() for p in re.split(r"\.\.\.|…", quote)]
    parts = [p for p in parts if p]
    text = normalise(doc)
    return bool(parts) and all(f" {p} " in text for p in parts)


def score(
    report: Mapping[str, Any], question: Mapping[str, Any], documents: Mapping[str, str]
) -> dict[str, Any]:
    """The scores of *report* (a `ResearchReport` as JSON data) for *question* (a
    `world.Question` as data) over the corpus *documents* (path -> text)."""
    if not isinstance(report, Mapping):
        report = {}
    gave_up = abstained(report)
    answers = question.get("answers") or []
    lead = normalise(lead_sentence(report.get("summary")))
    if question.get("answerable", True):
        correct = bool(answers) and not gave_up and all(states(report, a) for a in answers)
        first = bool(answers) and not gave_up
        first = first and any(normalise(s).strip() and normalise(s) in lead for s in answers[0])
    else:
        correct = first = gave_up
    cited = {
        _path_of(u)
        for f in _items(report.get("findings"))
        if isinstance(f, Mapping)
        for u in _items(f.get("sources"))
        if isinstance(u, str)
    }
    gold = list(question.get("gold_docs") or [])
    recall = sum(1 for d in gold if d in cited) / len(gold) if gold else None
    quotes = [
        c
        for c in _items(report.get("claims"))
        if isinstance(c, Mapping) and c.get("outcome") == "confirmed"
    ]
    precision = (
        sum(
            1
            for c in quotes
            if _quote_ok(str(c.get("quote") or ""), documents.get(_path_of(str(c.get("source")))))
        )
        / len(quotes)
        if quotes
        else None
    )
    out: dict[str, Any] = {
        "id": question.get("id"),
        "type": question.get("type"),
        "correct": correct,
        "recall": recall if question.get("answerable", True) else None,
        "quote_precision": precision,
        "abstained": gave_up,
        "lead": first,
    }
    if question.get("planted"):
        out["refuted"] = not states(report, question["planted"])
    return out
