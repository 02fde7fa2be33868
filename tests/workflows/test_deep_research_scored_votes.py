"""Votes carry a probability: from the two choices' likelihoods, calibrated against a
content-free statement; an unsure voter abstains, so noise is never "confirmed 2-0"."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Result, Success

from agentport.backends._local_client import pick_choice
from agentport.core import CompletionConfig, CompletionResponse, Message, ProviderError, RawInfo
from agentport.workflows.deep_research import ResearchConfig, run_research
from agentport.workflows.deep_research._small_votes import (
    SURE,
    calibrated,
    verdict_of,
    verify_prompt,
    vote_probability,
)

PROB = st.floats(0.001, 0.999)
LOGP = st.floats(-50, 0)


@given(LOGP, LOGP)
def test_vote_probability_is_symmetric_in_the_two_words(a: float, b: float) -> None:
    p = vote_probability({"supported": a, "refuted": b})
    q = vote_probability({"supported": b, "refuted": a})
    assert p is not None
    assert q is not None
    assert math.isclose(p + q, 1.0, abs_tol=1e-9)
    assert vote_probability({"supported": a}) is None


@given(PROB, PROB, PROB)
def test_calibration_divides_out_the_prior_and_keeps_the_order(p: float, q: float, prior: float):
    assert math.isclose(calibrated(p, 0.5), p, abs_tol=1e-9)
    assert math.isclose(calibrated(prior, prior), 0.5, abs_tol=1e-9)
    if p < q:
        assert calibrated(p, prior) <= calibrated(q, prior) + 1e-12
    assert 0.0 <= calibrated(p, prior) <= 1.0


@given(st.floats(0.0, 1.0))
def test_an_unsure_voter_abstains_and_a_sure_one_votes(p: float) -> None:
    verdict = verdict_of("supported", p)
    if 1 - SURE < p < SURE:
        assert verdict is None
    else:
        assert verdict is not None
        assert verdict["refuted"] is (p < 0.5)
        assert verdict["probability"] == round(p, 3)


def test_voters_see_the_two_words_in_both_orders() -> None:
    first = verify_prompt("Q?", "claim", "a.md", [], 0, 3)
    second = verify_prompt("Q?", "claim", "a.md", [], 1, 3)
    assert "Answer supported or refuted." in first
    assert "Answer refuted or supported." in second


@given(st.lists(LOGP, min_size=1, max_size=6))
def test_pick_choice_greedy_is_the_likeliest(logprobs: list[float]) -> None:
    choices = [f"c{i}" for i in range(len(logprobs))]
    best = pick_choice(choices, logprobs, None)
    assert logprobs[choices.index(best)] == max(logprobs)
    random.seed(0)
    assert pick_choice(choices, logprobs, 0.7) in choices


DOCS = {
    "errors.md": "# Errors and retries\n\n## The retry policy\n\n"
    "The retry policy retries only failures marked retryable, with exponential backoff "
    "and full jitter.\n\nThe cache stores finished calls on disk for a later resume.\n",
    "cache.md": "# Cache\n\nThe cache stores finished calls on disk for a later resume.\n",
}


class _ScoringModel:
    """A backend that reports the choices' likelihoods, as the embedded model does: every
    statement gets *p_supported*, the content-free one 0.5; id choices take the first."""

    backend = "scripted"

    def __init__(self, p_supported: float, p_second: float | None = None) -> None:
        self.p = p_supported
        self.second = p_supported if p_second is None else p_second  # the other voters'

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        assert config is not None
        if config.choices is None:
            schema = config.output_schema
            assert isinstance(schema, dict)
            ids = {"ids": schema["properties"]["ids"]["items"]["enum"][:1]}
            return Success(CompletionResponse(content=json.dumps(ids), parsed=ids))
        asked = messages[-1].content
        p = self.p if "Voter 1 of" in asked else self.second
        p = 0.5 if '"N/A"' in asked else p
        scores = {"supported": math.log(p), "refuted": math.log(1 - p)}
        return Success(
            CompletionResponse(
                content="supported",
                parsed="supported",
                raw=RawInfo(extra={"choice_logprobs": scores}),
            )
        )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("p", "second", "outcome"),
    [
        (0.9, None, "confirmed"),
        (0.52, None, "unverified"),
        # one voter refutes, the others are unsure: no quorum, the claim is not dropped
        (0.1, 0.52, "unverified"),
        (0.1, None, "refuted"),
    ],
)
async def test_noise_is_never_confirmed(
    tmp_path: Path, p: float, second: float | None, outcome: str
) -> None:
    """A sure model confirms; an unsure one, or one voter refuting while the others are
    unsure, leaves the claim unverified, stated on the code's ranking as "model unsure" and
    low (never "confirmed"); a claim a quorum refuted goes."""
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = await run_research(
        "How does the retry policy handle failures?",
        _ScoringModel(p, second),
        corpus=tmp_path,
        config=ResearchConfig.for_small_model(),
    )
    assert out.claims
    assert {c.outcome for c in out.claims} == {outcome}
    if outcome == "confirmed":
        assert "P(supported) 0.90" in (out.findings[0].vote or "")
        assert "probability" in out.caveats
    elif outcome == "unverified":
        assert out.findings
        for f in out.findings:
            assert (f.vote or "").endswith("model unsure"), f.vote
            assert f.confidence == "low"
        assert 'marked "model unsure"' in out.caveats
        if second is None:
            assert all(c.abstained == c.valid_votes + c.abstained for c in out.claims)
    else:
        assert not out.findings


def test_choice_config_is_unchanged_by_scoring() -> None:
    # scoring is the backend's business: the caller still asks for choices only
    assert CompletionConfig(choices=("a", "b")).choices == ("a", "b")


class _Recording(_ScoringModel):
    def __init__(self, p_supported: float) -> None:
        super().__init__(p_supported)
        self.prompts: list[str] = []

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        if config is not None and config.choices is not None:
            self.prompts.append(messages[-1].content)
        return await super().complete(messages, config)


@pytest.mark.anyio
@pytest.mark.parametrize("counter", [None, 1])
async def test_a_small_model_votes_on_the_claim_alone(tmp_path: Path, counter: int | None) -> None:
    """Another page's passage beside the claim did not help a 270M voter tell answers from
    noise (benchmarks/research_quality/vote_separation.py) and lengthens every vote:
    small-model mode shows none unless asked."""
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    model = _Recording(0.9)
    extra = {} if counter is None else {"counter_passages": counter}
    await run_research(
        "Where does the cache store finished calls?",
        model,
        corpus=tmp_path,
        config=ResearchConfig.for_small_model(**extra),
    )
    votes = [p for p in model.prompts if "Statement from the documents" in p and '"N/A"' not in p]
    assert votes
    alone = ["Other passages:\n- (none)" in p for p in votes]
    assert all(alone) if counter is None else not any(alone)
