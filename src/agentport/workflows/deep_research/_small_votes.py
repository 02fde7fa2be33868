"""Small-model mode's votes: a probability from the model's likelihoods, not one sampled
word (pure helpers and the async vote).

A 270M model asked "supported or refuted?" says "supported" to almost anything: one
sampled answer is its bias, not a decision. Where the backend reports each choice's
log-likelihood (the embedded model does), a vote is instead:

- the probability of "supported" against "refuted" from the two log-likelihoods;
- calibrated against the same prompt with a content-free statement ("N/A"), which
  measures the model's bias towards either word and divides it out (contextual
  calibration, Zhao et al. 2021, "Calibrate before use");
- cast only when that probability is at least `SURE` on one side; in between the voter
  is unsure and abstains, so a claim the model cannot tell from noise ends "unverified",
  never "confirmed 2-0";
- asked with the two words in a different order for each voter, so no answer depends on
  which word came first.

A backend that reports no likelihoods gets the seed's constrained vote (the sampled word),
and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from ._run import Run, cap

__all__ = [
    "SMALL_VOTES",
    "SURE",
    "calibrated",
    "confidence_of",
    "run_vote",
    "verdict_of",
    "verify_prompt",
    "vote_probability",
]

Record = dict[str, Any]

SMALL_VOTES = ("supported", "refuted")
SURE = 0.6  # a vote is cast only this sure of one side; closer to even, it abstains
_NULL = "N/A"


def vote_probability(scores: Mapping[str, float]) -> float | None:
    """P(supported) from the log-likelihoods of "supported" and "refuted" (normalised over
    the two), or None without both."""
    try:
        diff = scores["supported"] - scores["refuted"]
    except KeyError:
        return None
    if not math.isfinite(diff):
        return None
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, diff))))


def calibrated(p: float, prior: float | None) -> float:
    """*p* with the content-free *prior* divided out: the odds of *p* over the odds of
    *prior* (None or an extreme prior leaves *p* as it is). 0 <= result <= 1."""
    if prior is None or not 0.0 < prior < 1.0 or not 0.0 < p < 1.0:
        return min(1.0, max(0.0, p))
    odds = (p / (1.0 - p)) / (prior / (1.0 - prior))
    return odds / (1.0 + odds)


def confidence_of(probability: float | None) -> str:
    """The seed's confidence word for a vote: high from 0.8 either way, medium from
    `SURE`, low below (and for a vote with no probability)."""
    if probability is None:
        return "low"
    sure = max(probability, 1.0 - probability)
    return "high" if sure >= 0.8 else "medium" if sure >= SURE else "low"


def verdict_of(choice: str, probability: float | None = None) -> Record | None:
    """A seed `Verdict` record for a vote: from *probability* (of "supported") when the
    backend scored the choices (None = unsure: an abstention), else from the sampled
    *choice*."""
    if probability is None:
        return {
            "refuted": choice == "refuted",
            "evidence": f"voter chose '{choice}' (small-model mode: a sampled constrained "
            "choice; the backend reports no likelihoods)",
            "confidence": "low",
            "counterSource": None,
            "probability": None,
        }
    if 1.0 - SURE < probability < SURE:
        return None
    return {
        "refuted": probability < 0.5,
        "evidence": f"P(supported) = {probability:.2f} from the model's likelihoods, "
        "calibrated against a content-free statement",
        "confidence": confidence_of(probability),
        "counterSource": None,
        "probability": round(probability, 3),
    }


def verify_prompt(
    question: str, claim: str, source: str, counter: Sequence[tuple[str, str]], v: int, n: int
) -> str:
    """The vote prompt. Voter *v* lists the two answers in its own order; the voter
    number comes last so consecutive votes share the longest prompt prefix."""
    other = "\n".join(f"- ({url}) {text}" for url, text in counter) or "- (none)"
    first, second = SMALL_VOTES if v % 2 == 0 else SMALL_VOTES[::-1]
    return (
        "Question: " + question + "\n\n"
        "Statement from the documents (" + source + '):\n"' + claim + '"\n\n'
        "Other passages:\n" + other + "\n\n"
        "Is the statement supported by the documents and does it help answer the question? "
        f"Answer {first} or {second}.\n"
        "Voter " + str(v + 1) + " of " + str(n) + "."
    )


async def _prior(question: str, run: Run, v: int) -> float | None:
    """P(supported) for a content-free statement with voter *v*'s prompt (once per run
    and answer order)."""
    key = f"vote-prior:{v % 2}"
    lock = run.memo.setdefault("vote-prior-lock", anyio.Lock())
    async with lock:
        if key not in run.memo:
            n = run.config.VOTES_PER_CLAIM
            prompt = verify_prompt(question, _NULL, _NULL, [], v % 2, n)
            scores: dict[str, float] = {}
            await run.call("verify", prompt, choices=SMALL_VOTES, max_tokens=8, scores=scores)
            run.memo[key] = vote_probability(scores)
    prior = run.memo[key]
    return prior if isinstance(prior, float) else None


async def run_vote(question: str, run: Run, claim: Record, v: int) -> Record | None:
    """One vote as a seed `Verdict` record; None when the call failed or the voter was
    unsure (see the module docstring)."""
    cfg = run.config
    counter: list[tuple[str, str]] = []
    if run.corpus is not None and cfg.counter_passages:
        hits = run.corpus.search(claim["claim"], cfg.counter_passages, exclude=[claim["sourceUrl"]])
        counter = [
            (p.url.removeprefix("corpus://"), cap(" ".join(p.text.split()), cfg.counter_chars))
            for p in hits
        ]
    shown = claim["claim"]
    if claim.get("subject") and claim["subject"] not in shown:
        shown = f"{claim['subject']}: {shown}"
    prompt = verify_prompt(
        question,
        cap(shown, cfg.max_field_chars),
        claim["sourceUrl"].removeprefix("corpus://"),
        counter,
        v,
        cfg.VOTES_PER_CLAIM,
    )
    scores: dict[str, float] = {}
    answer = await run.call("verify", prompt, choices=SMALL_VOTES, max_tokens=8, scores=scores)
    if not isinstance(answer, str):
        return None
    p = vote_probability(scores)
    if p is None:
        return verdict_of(answer)
    run.scored_votes += 1
    return verdict_of(answer, calibrated(p, await _prior(question, run, v)))
