"""A comparison question is answered on both sides (`_sides`): the two things it sets side
by side are found in the question, each side's sentence becomes a candidate even when it
shares no other word with the question, the document the question names by its file name
is read, and the summary states both sides. Measured on real documentation by
benchmarks/research_quality (comparison, first candidate: 20 % -> 67 %)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_small_model import SMALL, chooser

from agentport.workflows.deep_research import Corpus, load_corpus, run_research
from agentport.workflows.deep_research._sides import about_side, says, sides_of
from agentport.workflows.deep_research._small import cover_sides
from agentport.workflows.deep_research._small_qa import ask_of


@pytest.mark.parametrize(
    ("question", "sides"),
    [
        ("How does tail -F differ from tail -f?", ("-F", "-f")),
        ("What is the difference between rm -i and rm -I?", ("-i", "-I")),
        ("What do timeout's exit statuses 124 and 125 mean?", ("124", "125")),
        ("Which uses a wider default line width, fmt or fold?", ("fmt", "fold")),
        ("What are the defaults of baselevel and toc_depth?", ("baselevel", "toc_depth")),
        ("How do click arguments and click options differ?", ("arguments", "options")),
        ("How do the \\b and \\f escape markers differ?", ("\\b", "\\f")),
        ("Is `max_retries` or `timeout_s` applied first?", ("max_retries", "timeout_s")),
        ("Which takes options, the Abbr extension or the Toc extension?", ("Abbr", "Toc")),
        ("How do the input and output options behave when set to None?", ("input", "output")),
        ("How does agentport retry failed calls?", ()),
        ("How do I set the timeout to 30 seconds?", ()),
        ("How do I install and configure the backend?", ()),
    ],
)  # fmt: skip
def test_the_sides_of_a_question(question: str, sides: tuple[str, ...]) -> None:
    assert sides_of(question) == sides
    assert ask_of(question).sides == sides


_WORDS = st.sampled_from(
    ["-i", "-I", "--sort", "124", "toc_depth", "fmt", "fold", "the", "and", "or", "differ",
     "from", "between", "options", "rm", "What", "`x_y`", "\\b", "a.b", "ok"]
)  # fmt: skip


@given(st.lists(_WORDS, max_size=12))
def test_sides_are_two_distinct_tokens_of_the_question(words: list[str]) -> None:
    question = " ".join(words) + "?"
    sides = sides_of(question)
    assert len(sides) in (0, 2)
    if sides:
        assert sides[0] != sides[1]
        for side in sides:
            assert side in question
            assert side.casefold() not in {"and", "or", "the", "from", "between", "differ"}
    if not {"and", "or", "from"} & set(words):
        assert sides == ()


@given(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), st.text(alphabet="xyz ", max_size=20))
def test_an_option_side_keeps_its_case(letter: str, rest: str) -> None:
    text = f"-{letter}  {rest}"
    assert says(text, f"-{letter}")
    assert not says(text, f"-{letter.upper()}")
    assert not says(f"--{letter}x {rest}", f"-{letter}"), "a long option is another option"


def test_a_sentence_naming_both_sides_is_about_neither() -> None:
    sides = ("baselevel", "toc_depth")
    both = "If you set `baselevel` to `3` and `toc_depth` to `2-6`, the first headline is h3."
    assert not about_side(both, "baselevel", sides)
    assert about_side("`baselevel` Defaults to `1`.", "baselevel", sides)


@given(
    st.lists(st.sampled_from(["-i once", "-I every", "-i -I both", "none"]), max_size=6),
    st.lists(st.integers(0, 5), max_size=3),
)
def test_cover_sides_adds_each_missing_side_once(texts: list[str], picked: list[int]) -> None:
    ask = ask_of("What is the difference between rm -i and rm -I?")
    order = list(dict.fromkeys(i for i in picked if i < len(texts)))
    out = cover_sides(ask, texts, order)
    assert out[: len(order)] == order, "the model's picks stay first, in their order"
    assert len(out) == len(set(out))
    for side in ask.sides:
        if any(about_side(t, side, ask.sides) for t in texts):
            assert any(about_side(texts[i], side, ask.sides) for i in out)
    assert len(out) <= len(order) + 2


RM = (
    "NAME\n\nrm - remove files or directories\n\n"
    "DESCRIPTION\n\nThis manual page documents the GNU version of rm. rm removes each "
    "specified file.\n\n"
    "OPTIONS\n\n"
    "-f, --force\n       ignore nonexistent files and arguments, never prompt\n\n"
    "-i     prompt before every removal\n\n"
    "-I     prompt once before removing more than three files, or when removing "
    "recursively\n\n"
    "-r, -R, --recursive\n       remove directories and their contents recursively\n"
)
OTHER = (
    "NAME\n\nb2sum - compute and check BLAKE2 message digest\n\n"
    "DESCRIPTION\n\nNote: There is no difference between binary mode and text mode on GNU "
    "systems.\n"
)


@pytest.fixture
def man_pages(tmp_path: Path) -> Corpus:
    (tmp_path / "rm.txt").write_text(RM, encoding="utf-8")
    (tmp_path / "b2sum.txt").write_text(OTHER, encoding="utf-8")
    for name in ("cat", "ls", "cp"):
        (tmp_path / f"{name}.txt").write_text(
            f"NAME\n\n{name} - a tool\n\nDESCRIPTION\n\n{name} reads files and prints them.\n",
            encoding="utf-8",
        )
    return load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()


@pytest.mark.anyio
@pytest.mark.parametrize("pick", [0, 1])
async def test_both_sides_are_stated_whatever_the_model_picks(man_pages: Corpus, pick: int):
    """A model that takes one sentence of each passage (the first, or the second) still
    gets a report stating both options: the question's own words ("difference between")
    are in another page, the options' sentences share none of them."""
    out = await run_research(
        "What is the difference between rm -i and rm -I?",
        chooser(pick=pick),
        corpus=man_pages,
        config=SMALL,
    )
    assert out.error is None
    assert "prompt before every removal" in out.summary
    assert "more than three files" in out.summary
    assert out.summary.index("every removal") < out.summary.index("more than three files")
    assert "binary mode" not in out.summary, "both sides stated: a sentence about neither goes"
    claims = [f.claim for f in out.findings]
    for side in ("-i", "-I"):
        assert any(re.search(rf"(?<![\w-]){re.escape(side)}(?![\w-])", c) for c in claims) or (
            any("rm.txt" in s for f in out.findings for s in f.sources)
        )
