"""Two-hop questions whose bridge is not a document title (small-model mode).

On real documentation the second hop is often named only as code (`` `nl2br` ``,
``` ``nargs=-1`` ```), a table row under its columns' names ("Dot Notation"), a man page's
tagged entry ("bsd    (equivalent to sum -r)"), or the page the question itself names by
its file ("the lsx man page"). The rules under test:

- a pipe table's header row is the subject of every row, in every passage the table is
  split into; a man page's tagged entries are one unit each;
- a name a finding writes as code is a follow-up bridge (after names, titles and links),
  read where another document names it (`_small.naming`);
- a follow-up bridge that is a document is read at a passage not read yet;
- a page the question names by its file ("the lsx man page", "lsx's") is read first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_deep_research_small_model import SMALL, chooser
from test_deep_research_two_hop_credit import PAGES

from agentport.workflows.deep_research import Corpus, load_corpus, run_research
from agentport.workflows.deep_research._corpus import _split_long
from agentport.workflows.deep_research._followup import CODED, follow_up_angles
from agentport.workflows.deep_research._small import documents_named
from agentport.workflows.deep_research._small_qa import asked_head
from agentport.workflows.deep_research._units import units_of

_CELL = st.from_regex(r"[A-Za-z][a-z]{1,8}( [A-Za-z][a-z]{1,8})?", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_CELL, min_size=2, max_size=3),
    st.lists(st.lists(_CELL, min_size=2, max_size=3), min_size=1, max_size=12),
    st.booleans(),
)
def test_every_table_row_is_a_unit_under_its_header(
    header: list[str], rows: list[list[str]], outer: bool
) -> None:
    def line(cells: list[str]) -> str:
        body = " | ".join(cells)
        return f"| {body} |" if outer else body

    text = "\n".join(
        ["Some prose that opens the section well.", "", line(header)]
        + [line(["---"] * len(header))]
        + [line([*r, "`wordmill.x_y`"]) for r in rows]
    )
    units = [u for u in units_of(text, "Section") if u.item]
    assert [u.text for u in units] == [
        line([*r, "`wordmill.x_y`"]).strip("|").strip() for r in rows
    ]
    assert {u.subject for u in units} == {" | ".join(header)}


@settings(max_examples=60, deadline=None)
@given(st.integers(5, 60), st.integers(120, 600))
def test_a_table_split_into_passages_keeps_its_header_in_each(rows: int, limit: int) -> None:
    header, rule = "Extension | Entry Point | Dot Notation", "--- | --- | ---"
    body = [f"[Name {i}] | `n{i}` | `markdown.extensions.n{i}`" for i in range(rows)]
    block = "\n".join([header, rule, *body])
    pieces = _split_long(block, limit)
    kept: list[str] = []
    for piece in pieces:
        lines = piece.split("\n")
        assert lines[:2] == [header, rule], piece
        kept += lines[2:]
        for unit in units_of(piece, "Officially Supported Extensions"):
            assert unit.subject == header
    assert kept == body  # every row once, in order


def test_a_man_pages_tagged_entries_are_units_of_their_own() -> None:
    text = (
        "   DIGEST determines the digest algorithm and default output format:\n"
        "       sysv   (equivalent to sum -s)\n"
        "       bsd    (equivalent to sum -r)\n"
        "       sha224 (equivalent to sha224sum)\n"
        "       blake2b\n"
        "              (equivalent to b2sum)\n"
    )
    texts = [u.text for u in units_of(text, "Description")]
    assert texts == [
        "sysv   (equivalent to sum -s)",
        "bsd    (equivalent to sum -r)",
        "sha224 (equivalent to sha224sum)",
        "blake2b (equivalent to b2sum)",
    ]


def test_in_this_case_stays_with_the_sentence_it_leans_on() -> None:
    text = (
        "However if a console is connected the stream will instead be emulated. "
        "In this case the stream will also use utf-16-le as internal encoding."
    )
    assert [u.text for u in units_of(text, "Unicode")] == [text]


_CODE = st.from_regex(r"[a-z][a-z0-9_]{2,9}", fullmatch=True)


@given(st.lists(_CODE, min_size=1, max_size=4, unique=True), st.integers(1, 4))
def test_a_name_written_as_code_is_a_bridge_after_titles_and_links(
    codes: list[str], limit: int
) -> None:
    question = "What is the dotted name of the extension that makes tables?"
    spans = " ".join(f"`{c}`" for c in codes)
    found = [
        (f"The Tables extension ({spans}) adds tables, see Kundova Notes.", "Tables"),
    ]
    titles = ["Tables", "Kundova Notes"]
    angles = follow_up_angles(question, found, ["Tables"], titles, limit=limit)
    assert len(angles) <= limit
    reasons = [a.rationale for a in angles]
    # the title the finding names comes first; code names only after it
    assert reasons[0] != CODED
    coded = [a for a in angles if a.rationale == CODED]
    assert len(coded) == min(limit - 1, len(codes))
    assert [a.label.removeprefix("follow-up: ") for a in coded] == codes[: len(coded)]
    assert reasons == sorted(reasons, key=lambda r: r == CODED)


# an index page whose table gives each extension's dotted name, and the extensions' pages
_INDEX = """title: Extensions

# Extensions

The extensions listed below are included with the library and officially supported.

Extension            | Entry Point    | Dot Notation
-------------------- | -------------- | ------------
[Abbreviations]      | `abbr`         | `wordmill.extensions.abbr`
[New Line to Break]  | `nl2br`        | `wordmill.extensions.nl2br`
[Tables]             | `tables`       | `wordmill.extensions.tables`
"""

_PAGE = """title: {title}

# {title}

## Summary

The {title} (`{code}`) extension will {does}.

## Usage

See the extensions index for general extension usage.
"""


@pytest.fixture
def docs(tmp_path: Path) -> Corpus:
    (tmp_path / "index.md").write_text(_INDEX, encoding="utf-8")
    pages = {
        "nl2br.md": ("New-Line-to-Break Extension", "nl2br", "treat newlines as hard breaks"),
        "abbr.md": ("Abbreviations Extension", "abbr", "add the ability to define abbreviations"),
        "tables.md": ("Tables Extension", "tables", "add the ability to create tables"),
    }
    for name, (title, code, does) in pages.items():
        text = _PAGE.format(title=title, code=code, does=does)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()


@pytest.mark.anyio
async def test_the_dotted_name_of_an_extension_is_read_from_the_index_row(docs: Corpus) -> None:
    out = await run_research(
        "What is the dot-notation name of the extension that treats newlines as hard breaks?",
        chooser(),  # always the first option the code offers: no model
        corpus=docs,
        config=SMALL,
    )
    said = " ".join([out.summary, *(f.claim for f in out.findings)])
    assert "wordmill.extensions.nl2br" in said, said
    assert "wordmill.extensions.abbr" not in said


@pytest.fixture
def pages(tmp_path: Path) -> Corpus:
    for rel, text in PAGES.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Which option does the lsx man page give for colour?", ["lsx"]),
        ("What does lsx's --hide option do, and pager's?", ["lsx", "pager"]),
        ("What does the pager page say about prompts?", ["pager"]),
        ("What pages list colour options?", []),  # "pages" names no document
    ],
)
def test_a_page_the_question_names_by_its_file(
    pages: Corpus, question: str, named: list[str]
) -> None:
    assert documents_named(question, pages) == named


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("On Windows, which encoding does the stream use with a console?", "encod"),
        ("In the nested example, what port does it set for runserver?", "port"),
        ("What block size does that command's BSD algorithm use?", "size"),
        ("Which option of that command outputs Bourne shell code?", "option"),
        ("What does the --reference option do?", ""),  # asks what it does, no noun
        ("What is the default mode of shred's --remove option?", ""),
    ],
)
def test_the_noun_a_question_asks_a_value_of(question: str, head: str) -> None:
    assert asked_head(question) == head


_CONSOLE = """Windows Console Notes
=====================

Unicode Output and Input
------------------------

Output on Windows goes through a dispatching text stream that checks the console.
What this means is that when the library first needs a text stream on windows it goes
through a few checks to figure out if a windows console is connected or not.
If no Windows console is present then the encoding for that stream is set to ``utf-8``.
However if a console is connected the stream will instead be emulated.  In this case the
stream will also use ``utf-16-le`` as internal encoding.
"""


@pytest.mark.anyio
async def test_the_sentence_giving_the_asked_noun_a_value_is_offered_first(
    tmp_path: Path,
) -> None:
    (tmp_path / "wincmd.rst").write_text(_CONSOLE, encoding="utf-8")
    (tmp_path / "other.rst").write_text(
        "Other\n=====\n\nThe stream writes text to the console.\n", encoding="utf-8"
    )
    corpus = load_corpus(tmp_path, max_passage_chars=SMALL.max_passage_chars).unwrap()
    out = await run_research(
        "Which encoding does the text stream use when no console is connected?",
        chooser(),  # always the first option the code offers: no model
        corpus=corpus,
        config=SMALL,
    )
    # the sentence meeting most of the question's words ("What this means is that ...
    # a windows console is connected or not.") gives the encoding no value
    lead = out.summary.split(". ")[0]
    assert "``utf-" in lead, out.summary


@pytest.mark.parametrize("opener", ["```", "~~~", "    :::python", "<!--"])
def test_a_table_inside_code_or_a_comment_is_no_unit(opener: str) -> None:
    closer = {"```": "```", "~~~": "~~~", "<!--": "-->"}.get(opener, "")
    indent = "    " if opener.endswith(":::python") else ""
    rows = ["name | value | meaning here", "--- | --- | ---", "port | 5000 | the port to serve"]
    text = "\n".join([opener, *(indent + r for r in rows), closer, "", "Prose after the block."])
    assert [u.text for u in units_of(text, "Section")] == ["Prose after the block."]
