"""The small-model summary's first sentence states the answer: a documentation entry that
names what it describes before its value ("`title_class`: CSS class used for the title.
Defaults to `toctitle`.") is stated value first (the finding stays verbatim), and for a
how-many question a claim carrying a value leads one that only names the subject."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_readme_answer import first_choice

from agentport.workflows.deep_research import ResearchConfig, run_research
from agentport.workflows.deep_research._lead import (
    answer_first,
    carries_value,
    split_sentences,
    valued_first,
)
from agentport.workflows.deep_research._small_qa import ask_of
from agentport.workflows.deep_research._small_report import small_report

# the summary's first sentence, as benchmarks/research_quality/score.py reads it
_LEAD_END = re.compile(r"(?<=[.!?])(?<!\s[A-Z]\.)\s+(?=[A-Z`*_\[(\"'])|\s\[[^\]]+\](?:\s|$)")


def _lead(summary: str) -> str:
    return _LEAD_END.split(summary.strip(), maxsplit=1)[0]


def _write(tmp_path: Path, docs: dict[str, str]) -> Path:
    for name, text in docs.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.anyio
async def test_an_entrys_value_leads_the_summary(tmp_path: Path) -> None:
    docs = {
        "toc.md": "# Table of Contents\n\n## Usage\n\n"
        "* **`title_class`**: CSS class used for the title contained in the Table of "
        "Contents. Defaults to `toctitle`.\n",
        "other.md": "# Other\n\nThe parser reads every file it is given.\n",
        "more.md": "# More\n\nNothing here names a class.\n",
    }
    out = await run_research(
        "What CSS class is used by default for the title of the Table of Contents?",
        first_choice(),
        corpus=_write(tmp_path, docs),
        config=ResearchConfig.for_small_model(),
    )
    assert "toctitle" in _lead(out.summary), out.summary
    # the finding is the verbatim entry, in its own order
    assert any(f.claim.endswith("Defaults to `toctitle`.") for f in out.findings), out.findings


def test_a_how_many_question_leads_with_the_claim_that_carries_a_number() -> None:
    # the model (or the rank order) put the page's name line first: the summary still
    # leads with the sentence that carries the number asked for
    confirmed = [
        {"claim": claim, "sourceUrl": f"corpus://shred.txt/{i}", "valid": [{}], "refutedVotes": 0}
        for i, claim in enumerate(
            [
                "shred - overwrite a file to hide its contents",
                "overwrite N times instead of the default (3)",
            ]
        )
    ]
    question = "How many times does shred overwrite a file by default?"
    report = small_report(question, confirmed, [0])
    assert "(3)" in _lead(report.summary), report.summary
    assert report.findings[0].claim.startswith("shred - ")  # findings keep order
    # a question that asks no number keeps the model's pick first
    other = small_report("What does shred do to a file?", confirmed, [0])
    assert _lead(other.summary).startswith("shred - "), other.summary


# a plain sentence: words of 3+ letters (one capital letter and a dot reads as an initial)
_PLAIN = st.lists(st.text(alphabet="abcdefgh", min_size=3, max_size=8), min_size=1, max_size=5).map(
    lambda words: " ".join(words).capitalize()
)


@given(st.lists(_PLAIN, min_size=1, max_size=4), st.text(alphabet="xyz", min_size=1), _PLAIN)
def test_answer_first_moves_only_the_value_and_keeps_every_sentence(
    plain: list[str], value: str, question: str
) -> None:
    sentences = [f"{p}." for p in plain]
    valued = f"Defaults to `{value}`."
    text = " ".join([*sentences, valued])
    out = answer_first(text, question)
    assert out.startswith(valued)  # the value first ...
    assert sorted(split_sentences(out)) == sorted(split_sentences(text))  # ... nothing lost
    # a text whose first sentence carries the value, or none, is left as it is
    assert answer_first(out, question) == out
    assert answer_first(" ".join(sentences), question) == " ".join(sentences)


@given(st.text(alphabet="abc", min_size=1, max_size=5))
def test_a_value_the_question_holds_is_none(word: str) -> None:
    assert not carries_value(f"Set to `{word}` or a string.", f"What if it is set to {word}?")
    assert carries_value(f"Set to `{word}x` or a string.", f"What if it is set to {word}?")
    # an entry's name before its colon is what it describes, not a value
    assert not carries_value(f"**`{word}_opt`**: the option.", "What is it?")


@given(st.integers(min_value=0, max_value=3))
def test_valued_first_keeps_the_claims_and_leads_with_a_value(at: int) -> None:
    claims = [{"record": {"claim": f"plain claim {c}"}} for c in "abcd"]
    claims[at] = {"record": {"claim": "the default is 3 lines"}}
    top = claims[:2]
    out = valued_first("How many lines are printed?", top, claims)
    assert out[0] is claims[at]
    assert len(out) == len(top)
    assert out[1:] == [m for m in top if m is not claims[at]][: len(top) - 1]
    # a question that asks no number keeps the order
    assert valued_first("What does it print?", top, claims) == top


def test_a_comparison_is_answered_in_the_questions_order() -> None:
    confirmed = [
        {"claim": claim, "sourceUrl": f"corpus://timeout.txt/{i}", "valid": [{}], "refutedVotes": 0}
        for i, claim in enumerate(
            ["125    if the timeout command itself fails", "124    if COMMAND times out"]
        )
    ]
    question = "What do timeout's exit statuses 124 and 125 mean?"
    report = small_report(question, confirmed, [0, 1], ask=ask_of(question))
    assert _lead(report.summary).startswith("124 "), report.summary
    assert "125 " in report.summary  # both sides stated
