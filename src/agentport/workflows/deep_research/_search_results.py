"""The search phase's answer mapped onto the retrieved candidates (corpus mode and
agentport's own web tools, seed path)."""

from __future__ import annotations

from ._core import norm_url
from ._run import Record, Run
from ._schemas import Angle, Search

__all__ = ["corpus_results"]


def corpus_results(
    run: Run, angle: Angle, sr: Search | None, candidates: list[Record]
) -> list[Record]:
    """Map the ranking call's answer onto the retrieved candidates (exact url, "[n]"/"n",
    or same normalised url); unknown urls are dropped. When the call failed or named no
    candidate, fall back to BM25 order (2 high, 2 medium, the rest low)."""
    by_key: dict[str, Record] = {}
    for i, c in enumerate(candidates, 1):
        by_key[c["url"]] = c
        by_key[norm_url(c["url"])] = c
        by_key[str(i)] = c
        by_key[f"[{i}]"] = c
    picked: list[Record] = []
    seen: set[str] = set()
    unknown = 0
    for r in sr.results if sr is not None else []:
        hit = by_key.get(r.url.strip()) or by_key.get(norm_url(r.url.strip()))
        if hit is None:
            unknown += 1
            continue
        if hit["url"] in seen:
            continue
        seen.add(hit["url"])
        picked.append(
            {
                "url": hit["url"],
                "title": hit["title"],
                "snippet": r.snippet,
                "relevance": r.relevance,
            }
        )
    if unknown:
        run.warn(f"search: the model named {unknown} url(s) that were not among the candidates")
    if picked:
        return picked
    if sr is not None and not sr.results:
        return []  # the model judged every candidate irrelevant
    run.warn(
        f"search ({angle.label}): the ranking call failed or named no candidate; "
        "used full-text search order"
    )
    levels = ["high", "high", "medium", "medium"]
    return [
        {
            "url": c["url"],
            "title": c["title"],
            "snippet": c["snippet"],
            "relevance": levels[i] if i < len(levels) else "low",
        }
        for i, c in enumerate(candidates[:6])
    ]
