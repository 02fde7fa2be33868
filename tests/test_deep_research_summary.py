"""The small-model summary states whole statements: a sentence that introduces a table or a
list ("... are:") never leads it while a whole statement is confirmed (`_small_report`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentport.workflows.deep_research._small_report import fragment, small_report

_words = st.lists(st.sampled_from(["retries", "three", "attempts", "the", "policy"]), min_size=3)


@given(_words, st.sampled_from([":", ",", " (", " —", ";"]))
def test_a_sentence_that_introduces_what_follows_is_a_fragment(words: list[str], end: str) -> None:
    assert fragment(" ".join(words) + end)
    assert not fragment(" ".join(words) + ".")


def _claim(text: str, n: int) -> dict[str, object]:
    return {"claim": text, "sourceUrl": f"corpus://d{n}.md/0", "valid": [], "refutedVotes": 0}


@given(
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.permutations(range(6)),
)
def test_the_summary_leads_with_a_whole_statement_when_one_is_confirmed(
    shapes: list[bool], order: list[int]
) -> None:
    claims = [
        _claim(f"Statement {i} on topic {i} lists the defaults" + (":" if cut else "."), i)
        for i, cut in enumerate(shapes)
    ]
    best = [i for i in order if i < len(claims)][:3]
    report = small_report("What are the defaults?", claims, best)
    first = report.summary.split(" [", 1)[0]
    if not all(shapes):
        assert not fragment(first), report.summary
    assert len(report.findings) == len(claims), "a fragment is still a finding"
