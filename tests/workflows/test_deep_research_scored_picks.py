"""The extract and synthesis picks of small-model mode on a backend that reports the
choices' likelihoods: asked in two orders and calibrated for position, so a model that
only likes the first id changes nothing, and one that knows the answer moves it first."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import anyio
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Result, Success

from agentport.core import CompletionConfig, CompletionResponse, Message, ProviderError, RawInfo
from agentport.workflows.deep_research import ResearchConfig, run_research
from agentport.workflows.deep_research._small_votes import position_calibrated, weighed

_ITEM = re.compile(r"^([SC]\d+): (.*)$", re.MULTILINE)
LOGP = st.floats(-30, 0)


@given(st.lists(LOGP, min_size=1, max_size=8))
def test_a_position_bias_alone_calibrates_to_even(logprobs: list[float]) -> None:
    prior = position_calibrated(logprobs, None)
    even = position_calibrated(logprobs, prior)
    assert all(math.isclose(p, 1 / len(logprobs), rel_tol=1e-6) for p in even)
    assert math.isclose(sum(prior), 1.0, rel_tol=1e-9)


@given(st.lists(st.floats(0.01, 100), min_size=1, max_size=8))
def test_an_even_model_keeps_the_codes_order(code: list[float]) -> None:
    # items come in the code's order; an even model must not reorder them
    ranked = sorted(code, reverse=True)
    order = weighed(ranked, [1 / len(ranked)] * len(ranked))
    assert order[0] == 0
    assert order == sorted(order)


class _Scorer:
    """The embedded model's interface (backend "local", likelihoods per choice) with a
    strong taste for the first id, plus *bonus* log-likelihood for an item holding
    *knows* (none: a model that only has the position bias)."""

    backend = "local"

    def __init__(self, knows: str | None) -> None:
        self.knows = knows
        self.moved_first = 0

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        assert config is not None
        text = messages[-1].content
        if config.choices is None:  # the scope's section pick: the first id
            schema = config.output_schema
            assert isinstance(schema, dict)
            ids = {"ids": schema["properties"]["ids"]["items"]["enum"][:1]}
            return Success(CompletionResponse(content=str(ids), parsed=ids))
        if config.choices == ("supported", "refuted"):
            p = 0.5 if '"N/A"' in text else 0.9
            scores = {"supported": math.log(p), "refuted": math.log(1 - p)}
        else:
            items = dict(_ITEM.findall(text))
            scores = {}
            for i, choice in enumerate(config.choices):
                bonus = 4.0 if self.knows and self.knows in items.get(choice, "") else 0.0
                scores[choice] = (-1.0 if i == 0 else -4.0) + bonus
        best = max(scores, key=lambda c: scores[c])
        return Success(
            CompletionResponse(
                content=best, parsed=best, raw=RawInfo(extra={"choice_logprobs": scores})
            )
        )


DOC = (
    "# Errors and retries\n\n## The retry policy\n\n"
    "Failed calls are retried, and retried calls are logged by every backend. "
    "A failed call gets up to 3 attempts when it is retryable, honouring retry_after.\n"
)


def _run(tmp_path: Path, knows: str | None) -> object:
    (tmp_path / "errors.md").write_text(DOC, encoding="utf-8")
    return anyio.run(
        lambda: run_research(
            "How are failed calls retried?",
            _Scorer(knows),
            corpus=tmp_path,
            config=ResearchConfig.for_small_model(),
        )
    )


def test_a_model_with_only_a_position_bias_moves_nothing(tmp_path: Path) -> None:
    out = _run(tmp_path, None)
    assert out.summary.startswith("Failed calls are retried, and")  # type: ignore[attr-defined]
    assert "changed the code's first choice in 0 of" in out.caveats  # type: ignore[attr-defined]


def test_a_model_that_knows_the_answer_leads_with_it(tmp_path: Path) -> None:
    out = _run(tmp_path, "retry_after")
    summary = out.summary  # type: ignore[attr-defined]
    assert summary.startswith("A failed call gets up to 3 attempts"), summary
    assert re.search(r"changed the code's first choice in [1-9]\d* of", out.caveats)  # type: ignore[attr-defined]
