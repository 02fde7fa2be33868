"""The small-model summary states whole statements: a sentence that introduces a table or a
list ("... are:") never leads it while a whole statement is confirmed (`_small_report`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentport.workflows.deep_research._small_report import code_confidence, fragment, small_report

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


_LEVEL = {"low": 0, "medium": 1, "high": 2}


@given(st.floats(0, 1), st.floats(0, 1))
def test_code_confidence_is_monotone_in_rank_and_coverage(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    for first in (False, True):
        assert _LEVEL[code_confidence(first, lo)] <= _LEVEL[code_confidence(first, hi)]
    for covered in (lo, hi):
        assert _LEVEL[code_confidence(False, covered)] < _LEVEL[code_confidence(True, covered)]
    assert code_confidence(True, 1.0) == "high"
    assert code_confidence(False, 0.0) == "low"


def test_the_marks_follow_the_code_and_split_votes_make_a_finding_low() -> None:
    claims = [
        _claim("The retry policy makes three attempts by default.", 0) | {"_coverage": 0.9},
        _claim("Backoff uses full jitter between the attempts.", 1) | {"_coverage": 0.2},
        _claim("A cancelled call is never retried by the policy.", 2)
        | {"_coverage": 0.9, "refutedVotes": 1},
    ]
    report = small_report("How many attempts does the retry policy make?", claims, [0, 1, 2])
    assert [f.confidence for f in report.findings] == ["high", "low", "low"]
    assert "not from the votes" in report.caveats


@given(st.sampled_from(["", "retry.md › The retry policy"]), st.sampled_from(["", "Retries"]))
def test_a_source_is_named_by_its_section_or_title_never_by_its_number_alone(
    section: str, title: str
) -> None:
    from agentport.workflows.deep_research import ResearchReport, to_markdown

    url = "corpus://retry.md/3"
    report = ResearchReport.model_validate(
        {
            "question": "Q",
            "summary": "ans",
            "findings": [{"claim": "F1", "confidence": "low", "sources": [url], "evidence": "e"}],
            "sources": [
                {
                    "url": url,
                    "title": title,
                    "quality": "primary",
                    "angle": "a",
                    "claimCount": 1,
                    "section": section,
                }
            ],
        }
    )
    md = to_markdown(report)
    name = section or title
    listed = next(line for line in md.splitlines() if line.startswith("- ") and url in line)
    cited = next(line for line in md.splitlines() if line.startswith("Sources: "))
    if name:
        assert listed.startswith(f"- {name}: {url}")
        assert cited == f"Sources: {name} ({url})"
