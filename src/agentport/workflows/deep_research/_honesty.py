"""Checks that keep a report from overstating (every backend, both modes). Pure functions.

A synthesis that is placeholder text, cites nothing that
was fetched, or whose findings cannot be traced to the confirmed claims is degenerate; one
work reachable under several URLs (same DOI, same normalised title, or in corpus mode the
same passage text) is fetched once and listed with its mirrors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._core import norm_url
from ._schemas import Report

__all__ = ["synthesis_problem", "traceable", "work_key"]

_WORD = re.compile(r"\w+", re.UNICODE)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s?#&]+)", re.IGNORECASE)
_PLACEHOLDER = re.compile(
    r"^(?:string|text|summary|none|null|n/?a|todo|tbd|\.+|…|-+|example|lorem ipsum.*|"
    r"<[^>]*>|\[[^\]]*\]|\{[^}]*\}|your (?:summary|answer) here\.?)$",
    re.IGNORECASE,
)


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 3}


def traceable(text: str, claims: Iterable[str]) -> bool:
    """True when *text* shares at least two content words (4+ letters) with one of
    *claims*, or all of its content words when it has fewer than two."""
    words = _content(text)
    need = min(2, len(words))
    if need == 0:
        return False
    return any(len(words & _content(c)) >= need for c in claims)


def synthesis_problem(
    report: Report,
    question: str,
    confirmed: Sequence[Mapping[str, Any]],
    fetched: Iterable[str],
) -> str | None:
    """Why a synthesis answer is degenerate, or None when it is usable.

    Degenerate: the summary is empty, placeholder text, shorter than three words or the
    question itself; there are no findings; no finding cites a fetched source; or fewer
    than half of the findings can be traced (`traceable`) to a confirmed claim or quote.
    """
    summary = report.summary.strip()
    if (
        len(_WORD.findall(summary)) < 3
        or _PLACEHOLDER.match(summary)
        or summary.casefold().rstrip("?.! ") == question.casefold().rstrip("?.! ")
    ):
        return "the summary is empty or placeholder text"
    if not report.findings:
        return "no findings"
    keys = {norm_url(u) for u in fetched}
    if not any(norm_url(u) in keys for f in report.findings for u in f.sources):
        return "no finding cites a fetched source"
    texts = [str(c.get("claim", "")) + " " + str(c.get("quote", "")) for c in confirmed]
    traced = sum(1 for f in report.findings if traceable(f.claim + " " + f.evidence, texts))
    if 2 * traced < len(report.findings):
        untraced = len(report.findings) - traced
        return (
            f"{untraced} of {len(report.findings)} findings are not traceable to a confirmed claim"
        )
    return None


def work_key(url: str, title: str, text: str | None = None) -> str | None:
    """The identity of the work behind a result: `text:<words>` for a corpus passage
    (*text* given), else `doi:<doi>` when the URL holds a DOI, else `title:<words>` when the
    normalised title has at least three words; None when nothing identifies it."""
    if text is not None:
        words = " ".join(_WORD.findall(text.casefold()))
        return "text:" + words if words else None
    if (m := _DOI.search(url)) is not None:
        return "doi:" + m.group(1).rstrip(".,;)").casefold()
    title_words = _WORD.findall(title.casefold())
    return "title:" + " ".join(title_words) if len(title_words) >= 3 else None


def split_mirrors(
    results: Sequence[Mapping[str, Any]],
    works: dict[str, str],
    mirrors: dict[str, list[str]],
    key_of: Any,
) -> list[Mapping[str, Any]]:
    """Drop the results whose work was already seen under another URL (recorded in
    *mirrors*, keyed by the first URL's `norm_url`); *works* maps work keys to that first
    URL's `norm_url` and is updated with the new works. Order is kept."""
    kept: list[Mapping[str, Any]] = []
    for r in results:
        key = key_of(r)
        own = norm_url(str(r["url"]))
        first = works.get(key) if key is not None else None
        if first is not None and first != own:
            if r["url"] not in mirrors.setdefault(first, []):
                mirrors[first].append(str(r["url"]))
            continue
        if key is not None:
            works.setdefault(key, own)
        kept.append(r)
    return kept
