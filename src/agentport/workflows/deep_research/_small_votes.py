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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from ._run import Run, cap

__all__ = [
    "SMALL_VOTES",
    "SURE",
    "calibrated",
    "confidence_of",
    "position_calibrated",
    "run_vote",
    "scored_items",
    "scored_pick",
    "unsure",
    "verdict_of",
    "verify_prompt",
    "vote_probability",
    "weighed",
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


# ── scored choices: which of several listed items answers (extract, synthesis) ──


def position_calibrated(logprobs: Sequence[float], prior: Sequence[float] | None) -> list[float]:
    """The probability of each listed position from the log-likelihoods of its id, with
    the position's content-free *prior* probability divided out (the same prompt listing
    "N/A" items: a small model's taste for the first and the last id), normalised to
    sum to 1. Without a usable *prior*, the softmax of *logprobs* as it is."""
    peak = max(logprobs)
    p = [math.exp(lp - peak) for lp in logprobs]
    if prior is not None and len(prior) == len(p) and all(x > 0 for x in prior):
        p = [a / b for a, b in zip(p, prior, strict=True)]
    total = sum(p)
    return [x / total for x in p]


async def scored_items(
    run: Run,
    phase: str,
    prompt_of: Callable[[Sequence[str]], str],
    items: Sequence[str],
    priority: float = 0.0,
    prefix: str = "S",
) -> list[float] | None:
    """P(item i is the best answer) for *items* listed by *prompt_of* as S1..Sn (ids
    begin with *prefix*): the
    likelihood of each id after the prompt, asked in two orders (as given and reversed,
    so no item owes its score to its place), each calibrated per position against the
    same prompt with content-free items (`position_calibrated`), averaged. None when the
    backend reports no likelihoods or a call failed."""
    n = len(items)
    ids = tuple(f"{prefix}{i}" for i in range(1, n + 1))
    prior = await _position_prior(run, phase, prompt_of, ids, priority)
    total = [0.0] * n
    orders = [list(range(n)), list(range(n))[::-1]] if n > 1 else [[0]]
    for place_in_run, order in enumerate(orders):
        scores: dict[str, float] = {}
        prompt = prompt_of([items[i] for i in order])
        run.pick_calls += place_in_run  # the reversed order: a call the seed never makes
        answer = await run.call(
            phase, prompt, choices=ids, max_tokens=4, scores=scores, priority=priority
        )
        if answer is None or len(scores) != n:
            return None
        probs = position_calibrated([scores[i] for i in ids], prior)
        for place, item in enumerate(order):
            total[item] += probs[place] / len(orders)
    return total


async def _position_prior(
    run: Run,
    phase: str,
    prompt_of: Callable[[Sequence[str]], str],
    ids: tuple[str, ...],
    priority: float,
) -> list[float] | None:
    """Each position's probability for content-free items (once per run, phase and
    number of items)."""
    key = f"position-prior:{phase}:{len(ids)}"
    lock = run.memo.setdefault("position-prior-lock", anyio.Lock())
    async with lock:
        if key not in run.memo:
            scores: dict[str, float] = {}
            prompt = prompt_of([_NULL] * len(ids))
            run.pick_calls += 1  # a content-free prior: a call the seed never makes
            await run.call(
                phase, prompt, choices=ids, max_tokens=4, scores=scores, priority=priority
            )
            found = [scores[i] for i in ids] if len(scores) == len(ids) else None
            run.memo[key] = position_calibrated(found, None) if found else None
    prior = run.memo[key]
    return prior if isinstance(prior, list) else None


def weighed(code: Sequence[float], model: Sequence[float], most: int = 3) -> list[int]:
    """The items to keep, best first: the code's relevance *code* (any scale >= 0, its
    share of the sum the prior) times the model's probability *model*; the best, and the
    others at least half as likely as it, at most *most*. The model moves the code's
    order only as far as it is sure: an even *model* leaves it as it is."""
    share = sum(code) or 1.0
    final = [(c or 1e-9) / share * m for c, m in zip(code, model, strict=True)]
    order = sorted(range(len(final)), key=lambda i: (-final[i], i))
    top = final[order[0]] if order else 0.0
    return [i for i in order if final[i] >= top / 2][:most]


_BEST = "\nThe best answer is"  # the id follows: its likelihood is the model's choice


async def scored_pick(
    run: Run,
    phase: str,
    prompt_of: Callable[[Sequence[str]], str],
    items: Sequence[str],
    code: Sequence[float],
    prefix: str = "S",
    code_leads: bool = False,
) -> list[int] | None:
    """The indexes of *items* (listed in the code's order, best first; *code* their code
    relevance) to keep, best first, from the model's scored choice (`scored_items`,
    `weighed`); counted in `run.picks_scored` and, when the model moved the code's first
    item, `run.picks_moved`. *code_leads*: the code's first item stays first (the model
    only adds to it). None when the backend reports no likelihoods."""

    def asked(shown: Sequence[str]) -> str:
        return prompt_of(shown) + _BEST

    probs = await scored_items(run, phase, asked, items, prefix=prefix)
    if probs is None:
        return None
    order = weighed(code, probs)
    if code_leads and order:
        order = [0, *(i for i in order if i != 0)][: len(order)]
    run.picks_scored += 1
    run.picks_moved += bool(order) and order[0] != 0
    return order


def unsure(claim: Record) -> bool:
    """True when the model could neither confirm nor refute *claim*: it is unverified (no
    quorum either way) and at least one voter was less than `SURE` either way. With scored
    votes, small-model mode states such a claim on the code's ranking, marked "model
    unsure" and low, never confirmed: measured on real documentation
    (benchmarks/research_quality/vote_separation.py) the votes' probability barely tells
    an answering sentence from its neighbours (AUC about 0.5, the code's order 0.77), and
    a lone refuting vote fell on 4 % of the answering claims against 1 % of the others
    (the full embedded run on the 95 real-documentation questions), so dropping what the
    model is unsure of drops the code's best answer more often than noise. A claim
    refuted by a quorum is dropped."""
    return claim.get("outcome") == "unverified" and int(claim.get("abstained") or 0) > 0
