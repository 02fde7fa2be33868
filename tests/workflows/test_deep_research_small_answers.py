"""Small-model mode finds the answer, not a true sentence near it: the documents named by
the question, a second hop, namesakes left out, near-copies that disagree, and questions
the documents do not answer (`_small_qa`; measured by benchmarks/research_quality)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_small_model import SMALL, chooser

from agentport.workflows.deep_research import Corpus, load_corpus, run_research
from agentport.workflows.deep_research._small_qa import (
    ask_of,
    conflicts,
    hop_titles,
    mentions,
    unit_score,
)

TOWN = (
    "# Velmora\n\nVelmora is a town in the Karsk region, on the river Isker.\n\n"
    "## History\n\nVelmora was founded in 1712 as a market.\n\n"
    "## Government\n\nThe mayor of Velmora is Ilse Varga.\n\n"
    "## Population\n\nVelmora has a population of 48,200.\n"
)
DOCS = {
    "towns/velmora.md": TOWN,
    "towns/port-velmora.md": TOWN.replace("Velmora", "Port Velmora")
    .replace("48,200", "9,900")
    .replace("Ilse Varga", "Marek Holm"),
    "towns/tessaly.md": "# Tessaly\n\nTessaly is a town in the Karsk region.\n\n"
    "## Population\n\nTessaly has a population of 31,900.\n",
    "regions/karsk.md": "# Karsk region\n\nKarsk is a region of the lowlands.\n\n"
    "## Administration\n\nThe governor of the Karsk region is Dagny Holm.\n\n"
    "The Karsk region covers 4,310 square kilometres.\n",
    "notes/travel.md": "# Travel notes\n\nWe stopped in Velmora for a night; the inn was full.\n",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    for rel, text in DOCS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()


def _said(report: object) -> str:
    return " ".join([report.summary, *(f.claim for f in report.findings)])  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_the_answer_in_another_words_section_is_found(corpus: Corpus) -> None:
    # "people live" shares no word with "has a population of": the answer's type does
    out = await run_research(
        "How many people live in Velmora?", chooser(), corpus=corpus, config=SMALL
    )
    assert "48,200" in _said(out)
    assert "9,900" not in _said(out), "Port Velmora is a namesake, not Velmora"
    assert all("port-velmora" not in s for f in out.findings for s in f.sources)
    # a reader is pointed to the document and section, not to a passage number
    assert "[towns/velmora.md › Population]" in out.summary
    assert "towns/velmora.md › Population" in out.findings[0].evidence


@pytest.mark.anyio
async def test_two_hop_reaches_the_linked_document(corpus: Corpus) -> None:
    out = await run_research(
        "Who governs the region that Velmora is in?", chooser(), corpus=corpus, config=SMALL
    )
    assert "Dagny Holm" in _said(out)
    assert any("regions/karsk.md" in s for f in out.findings for s in f.sources)


@pytest.mark.anyio
async def test_comparison_states_both_values(corpus: Corpus) -> None:
    out = await run_research(
        "Which town has more inhabitants, Velmora or Tessaly?",
        chooser(),
        corpus=corpus,
        config=SMALL,
    )
    assert "48,200" in _said(out)
    assert "31,900" in _said(out)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "question",
    [
        "What is the elevation of Velmora?",
        "What is the population of Zarbuck?",
        "Which football club plays in Velmora?",
    ],
)
async def test_a_question_the_documents_do_not_answer_gets_no_finding(
    corpus: Corpus, question: str
) -> None:
    llm = chooser()
    out = await run_research(question, llm, corpus=corpus, config=SMALL)
    assert out.findings == []
    assert out.summary.startswith("The documents do not answer the question")
    assert out.error is None


@pytest.mark.anyio
async def test_a_near_copy_that_disagrees_is_never_a_finding(
    corpus: Corpus, tmp_path: Path
) -> None:
    """Two current pages that disagree: neither value is stated (an archived copy yields to
    the current page instead: test_deep_research_authority)."""
    copy = tmp_path / "mirror" / "velmora-copy.md"
    copy.parent.mkdir()
    copy.write_text(TOWN.replace("48,200", "46,700"), encoding="utf-8")
    planted = load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()
    out = await run_research(
        "How many people live in Velmora?", chooser(), corpus=planted, config=SMALL
    )
    assert "46,700" not in _said(out)
    assert "48,200" not in _said(out)
    assert "46,700" in out.caveats
    assert "48,200" in out.caveats
    assert out.summary.startswith("The documents disagree")


def test_ask_of_splits_names_asked_words_and_the_answer_type() -> None:
    ask = ask_of("Which town has more inhabitants, Port Velmora or Tessaly?")
    assert ask.names == ("Port Velmora", "Tessaly")
    assert ask.kind == "quantity"
    assert "inhabitant" in ask.asked
    assert ask_of("When was Velmora founded?").kind == "year"
    assert ask_of("Who is the mayor of Velmora?").kind == "person"
    assert ask_of("How does agentport retry failed calls?").names == ()


def test_a_unit_needs_a_name_and_an_asked_word_or_the_answer_type() -> None:
    ask = ask_of("How many people live in Velmora?")
    assert unit_score(ask, "Velmora has a population of 48,200.", "Velmora Population") > 0
    assert unit_score(ask, "Velmora was founded in 1712 as a market.", "Velmora") == 0
    assert unit_score(ask, "Tessaly has a population of 31,900.", "Tessaly") == 0


def test_hop_titles_follow_a_sentence_that_shares_an_asked_word() -> None:
    ask = ask_of("Who governs the region that Velmora is in?")
    units = ["Velmora is a town in the Karsk region, on the river Isker."]
    titles = ["Karsk region", "Velmora", "Isker"]
    assert hop_titles(ask, units, "Velmora", titles, "Velmora") == ["Karsk region"]
    assert (
        hop_titles(ask_of("When was Velmora founded?"), units, "Velmora", titles, "Velmora") == []
    )


_words = st.lists(
    st.sampled_from(["the", "town", "of", "Velmora", "has", "a", "market", "river", "old", "new"]),
    min_size=3,
    max_size=10,
)


@given(_words, st.integers(0, 9), st.integers(1000, 99999), st.integers(1, 500))
def test_one_changed_value_across_documents_is_a_conflict(
    words: list[str], at: int, value: int, delta: int
) -> None:
    at = at % (len(words) + 1)
    a = " ".join([*words[:at], f"{value:,}", *words[at:]])
    b = " ".join([*words[:at], f"{value + delta:,}", *words[at:]])
    assert conflicts([(a, "x.md"), (b, "y.md")]) == {0, 1}
    assert conflicts([(a, "x.md"), (b, "x.md")]) == set(), "one document cannot disagree"
    assert conflicts([(a, "x.md"), (a, "y.md")]) == set(), "agreeing copies are no conflict"


@given(st.text(max_size=40), st.text(max_size=20))
def test_mentions_is_whole_words_and_never_raises(text: str, name: str) -> None:
    if mentions(text, name):
        assert name.strip() != ""
    assert not mentions("Velmora", "Velmo")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("question", "answer"),
    [("When was Velmora founded?", "1712"), ("Which mayor does the town have?", "Ilse Varga")],
)
async def test_a_corpus_of_one_document_still_answers(
    tmp_path: Path, question: str, answer: str
) -> None:
    # every word is in "most" documents of a one-file corpus: none may count as common
    (tmp_path / "velmora.md").write_text(TOWN, encoding="utf-8")
    one = load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()
    out = await run_research(question, chooser(), corpus=one, config=SMALL)
    assert answer in _said(out)


def test_a_sentence_opening_with_a_pronoun_keeps_its_referent() -> None:
    from agentport.workflows.deep_research._small import sentences

    text = (
        "The retry policy retries only failures marked retryable. It never retries a "
        "cancelled call. Budgets are separate from retries."
    )
    units = sentences(text)
    assert units[0] == (
        "The retry policy retries only failures marked retryable. It never retries a "
        "cancelled call."
    )
    assert not any(u.startswith("It ") for u in units)


def test_a_person_alone_does_not_answer_who_did_something_else() -> None:
    ask = ask_of("Who designed the coat of arms of Velmora?")
    assert unit_score(ask, "The mayor of Velmora is Ilse Varga.", "Velmora") == 0
    assert (
        unit_score(
            ask_of("Who is the mayor of Velmora?"), "The mayor of Velmora is Ilse Varga.", "Velmora"
        )
        > 0
    )


def test_the_sentence_that_links_a_name_to_its_hop_is_a_candidate() -> None:
    from dataclasses import replace

    ask = replace(
        ask_of("Who governs the region that Velmora is in?", common=["region"]),
        hops=("Karsk region",),
    )
    link = "Velmora is a town in the Karsk region, on the river Isker."
    assert unit_score(ask, link, "Velmora") > 0
    assert unit_score(ask, "Velmora was founded in 1712 as a market.", "Velmora") == 0
