"""Two-hop questions in small-model mode whose second hop is only named by the first
document: "who wrote the command that page X recommends?" is answered by the AUTHOR line
of the page X links to (`name(1)`, `:doc:`, a markdown link), a line that shares no word
with the question. The first hop's link sentence joins the pick (`cover_links`), the
follow-up round reads the linked page where a candidate is (`best_of_bridge`), and a
credit line ("Written by ...") is a candidate only on a page the question or a finding
leads to (every man page has one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_small_model import SMALL, chooser

from agentport.workflows.deep_research import Corpus, load_corpus, run_research
from agentport.workflows.deep_research._corpus import _blocks
from agentport.workflows.deep_research._small import cover_links
from agentport.workflows.deep_research._small_qa import credits
from agentport.workflows.deep_research._units import sentences


def _man(name: str, summary: str, body: str, author: str, see_also: str = "") -> str:
    """A man page as `man` renders it to text (the layout of GNU coreutils' pages)."""
    up = name.upper()
    lines = [
        f"{up}(1)                    User Commands                    {up}(1)",
        "",
        "NAME",
        f"       {name} - {summary}",
        "",
        "DESCRIPTION",
        *(f"       {line}" for line in body.splitlines()),
        "",
        "AUTHOR",
        f"       Written by {author}.",
        "",
    ]
    if see_also:
        lines += ["SEE ALSO", f"       {see_also}", ""]
    lines += ["Tools 1.0                     May 2026                        " + f"{up}(1)"]
    return "\n".join(lines) + "\n"


# option lines, so a page is several passages as a real one is (its AUTHOR section apart)
_OPTIONS = "\n".join(
    f"-{c}, --{word}\n       {word} the entries by their {word} order"
    for c, word in zip(
        "acdfghk", ["arrange", "count", "dim", "fold", "group", "hide", "keep"], strict=True
    )
)

PAGES = {
    "lsx.txt": _man(
        "lsx",
        "list directory entries",
        "List information about the FILEs.\n\n"
        "Using colour to tell file types apart is off by default.\n"
        "The LSX_COLORS environment variable can change the settings.\n"
        "Use the palette(1) command to set it.\n\n" + _OPTIONS,
        "Orla Brenner",
    ),
    "palette.txt": _man(
        "palette",
        "colour setup for lsx",
        "Output commands to set the LSX_COLORS environment variable.\n\n"
        "-b, --bourne-shell\n       output Bourne shell code to set LSX_COLORS\n" + _OPTIONS,
        "K. Mara Olsen",
        "Full documentation <https://example.org/tools/palette>",
    ),
    # decoys: pages whose words meet the question's, with credit lines of their own
    "pager.txt": _man(
        "pager",
        "page through text",
        "Show the text one screen at a time; the colour of the prompt can be set.\n"
        "The PAGER_PROMPT variable sets the prompt.",
        "Dorian Vale",
    ),
    "envshow.txt": _man(
        "envshow",
        "print the environment",
        "Print the value of each environment variable named, or of all.",
        "Petra Quist",
    ),
}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    for rel, text in PAGES.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()


def _said(report: object) -> str:
    return " ".join([report.summary, *(f.claim for f in report.findings)])  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "question",
    [
        "Who wrote the command that the lsx man page recommends for setting its colour variable?",
        # the possessive names the first hop's page, not the owner of the answer: the credit
        # line of the page it links to is still on topic
        "Who wrote the command that lsx's man page recommends for setting its colour variable?",
    ],
)
async def test_who_wrote_the_linked_command_is_its_author_line(
    corpus: Corpus, question: str
) -> None:
    out = await run_research(
        question,
        chooser(),  # always the first option the code offers: no model
        corpus=corpus,
        config=SMALL,
    )
    said = _said(out)
    assert "K. Mara Olsen" in said, said
    assert any("palette.txt" in s for f in out.findings for s in f.sources)
    # a credit line no question word and no link leads to is never a finding
    assert "Dorian Vale" not in said
    assert "Petra Quist" not in said


def test_an_initial_ends_no_sentence() -> None:
    assert sentences("Written by H. Peter Anvin.") == ["Written by H. Peter Anvin."]
    # a word before the period still ends one
    two = "The value was set by the caller. Then the tool ran again."
    assert sentences(two) == ["The value was set by the caller.", "Then the tool ran again."]


def test_an_indented_hash_line_is_code_not_a_heading() -> None:
    text = "## Usage\n\nPass it on.\n\n        # define your extension here\n        x = 1\n"
    headings = {h for h, _ in _blocks(text)}
    assert headings == {"Usage"}


_NAME = st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True)


@given(_NAME, _NAME, st.sampled_from(["Written by", "Maintained by", "Author:"]), st.booleans())
def test_a_credit_line_credits_a_person_the_question_does_not_name(
    first: str, last: str, lead: str, initial: bool
) -> None:
    person = f"{'J. ' if initial else ''}{first} {last}"
    unit = f"{lead} {person}."
    assert credits("person", unit, "Who wrote the pager command?")
    # the question's own person is no answer; other answer types are no credit
    assert not credits("person", unit, f"Who is {first} {last}?")
    assert not credits("year", unit, "When was the pager written?")
    assert not credits("person", f"The {first} {last} option sets it.", "Who wrote it?")


@given(
    st.lists(st.lists(st.sampled_from(["palette", "pager"]), max_size=2), min_size=1, max_size=8),
    st.data(),
)
def test_cover_links_adds_one_linking_unit_only_when_the_pick_links_nowhere(
    links: list[list[str]], data: st.DataObject
) -> None:
    order = data.draw(st.lists(st.integers(0, len(links) - 1), max_size=3, unique=True))
    out = cover_links(links, order)
    assert out[: len(order)] == order
    added = out[len(order) :]
    assert len(added) <= 1
    if any(links[i] for i in order) or not any(links):
        assert added == []
    else:
        assert added
        assert links[added[0]]
        assert added[0] not in order
        assert added[0] == min(i for i, t in enumerate(links) if t and i not in order)
