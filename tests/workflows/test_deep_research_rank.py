"""Candidate offering and ranking on the shapes real documentation has (small-model mode's
pure cores, and a corpus loaded from files the way `agentport research --corpus` loads it):
man pages, markdown option and definition lists, and the ranking signals (subject, title,
word pairs, the answer's kind)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.workflows.deep_research import load_corpus
from agentport.workflows.deep_research._rank import (
    expand,
    importance,
    index_of,
    own_terms,
    weighted_terms,
    word_pairs,
)
from agentport.workflows.deep_research._small_qa import ask_of, asks_for_name, names_identifier
from agentport.workflows.deep_research._units import units_of

MAN = """TIMEOUT(1)                       User Commands                      TIMEOUT(1)

NAME
       timeout - run a command with a time limit

DESCRIPTION
       Start COMMAND, and kill it if still running after DURATION.

       -k, --kill-after=DURATION

              also send a KILL signal if COMMAND is still running

              this long after the initial signal was sent

       -v, --verbose
              diagnose to stderr any signal sent upon timeout

   EXIT status:
       124    if COMMAND times out, and --preserve-status is not specified

       126    if COMMAND is found but cannot be invoked

       127    if COMMAND cannot be found

AUTHOR
       Written by Padraig Brady.

GNU coreutils 9.1               September 2022                      TIMEOUT(1)
"""

OPTIONS = """# Table of Contents

## Usage

The following options are provided to configure the output:

* **`title_class`**:
    CSS class used for the title contained in the Table of Contents. Defaults to `toctitle`.

* **`permalink_leading`**:
    Set to `True` if the extension should generate leading permanent links.
    Default is `False`.

    Leading permanent links are placed at the start of the header tag,
    before any header content.

__encoding__{: #encoding }

:   The encoding of the source text file.

    Defaults to `"utf-8"`. The same encoding will always be used for input and output.

__input__{: #input }

:   The source text file.

    `input` may be set to one of three options:

    * a string which contains a path to a readable file on the file system,
    * or `None` (default) which will read from `stdin`.
"""


def _corpus(tmp_path: Path, files: dict[str, str]):  # type: ignore[no-untyped-def]
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path, max_passage_chars=900).unwrap()


def _units(corpus):  # type: ignore[no-untyped-def]
    return [(p, u) for p in corpus.passages for u in units_of(p.text, p.heading)]


def test_a_man_page_keeps_sections_and_option_descriptions(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"timeout.txt": MAN})
    by_text = {u.text: u.subject for _, u in _units(corpus)}
    kill = next(t for t in by_text if t.startswith("also send a KILL"))
    assert kill.endswith("this long after the initial signal was sent"), "one description"
    assert by_text[kill] == "-k, --kill-after=DURATION"
    assert by_text["timeout - run a command with a time limit"] == "Name", "NAME is a heading"
    assert any(t.startswith("127") and s == "EXIT status" for t, s in by_text.items())
    assert not any("User Commands" in t or "September 2022" in t for t in by_text)
    assert by_text["Written by Padraig Brady."] == "Author"


def test_an_option_item_is_one_unit_with_its_default_and_definitions_their_term(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path, {"toc.md": OPTIONS})
    by_text = {u.text: u.subject for _, u in _units(corpus)}
    title = next(t for t in by_text if "CSS class used for the title" in t)
    assert "Defaults to `toctitle`." in title, "the default stays with its description"
    assert by_text[title] == "`title_class`"
    leading = next(t for t in by_text if "Leading permanent links are placed" in t)
    assert by_text[leading] == "`permalink_leading`", "an indented paragraph stays under it"
    encoding = next(t for t in by_text if t.startswith("The encoding of the source"))
    assert 'Defaults to `"utf-8"`' in encoding
    assert by_text[encoding] == "encoding"
    assert by_text["The source text file."] == "input", "a colon-ended item is cut, not lost"
    assert by_text["or `None` (default) which will read from `stdin`."] == "input"
    assert not any(t.endswith(":") for t in by_text)


def test_the_word_pairs_of_the_question_rank_the_exact_statement_first(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, {"timeout.txt": MAN, "other.txt": "NAME\n       other - x y z\n"})
    index = index_of(corpus)
    question = "What exit status does timeout return when the command cannot be found?"
    terms, pairs = weighted_terms(question), word_pairs(question)
    scores = {u.text: index.score_unit(terms, p, u, pairs) for p, u in _units(corpus)}
    found = next(t for t in scores if t.startswith("127"))
    invoked = next(t for t in scores if t.startswith("126"))
    assert scores[found] > scores[invoked]


def test_a_term_in_the_document_title_ranks_that_document_first(tmp_path: Path) -> None:
    other = (
        "# CodeHilite\n\n## Usage\n\n"
        "* **`css_class`**:\n    Set CSS class name. Defaults to `codehilite`.\n"
    )
    corpus = _corpus(tmp_path, {"toc.md": OPTIONS, "code.md": other})
    index = index_of(corpus)
    question = (
        "In the Table of Contents extension, what CSS class is used by default for the title?"
    )
    terms = weighted_terms(question)
    scores = {
        u.text: index.score_unit(terms, p, u, word_pairs(question)) for p, u in _units(corpus)
    }
    best = max(scores, key=scores.__getitem__)
    assert "toctitle" in best


@given(st.floats(0, 100), st.floats(0, 100))
def test_importance_is_monotone_in_the_score(a: float, b: float) -> None:
    # claims rank by importance first: a higher score is never less important
    index = _INDEX
    question = "What CSS class does the title use by default?"
    rank = {"central": 0, "supporting": 1}
    lo, hi = sorted((a, b))
    assert rank[importance(index, question, hi)] <= rank[importance(index, question, lo)]


_WORDS = st.sampled_from(
    [
        *("retry", "after", "Linux", "macOS", "shell=True", "total_timeout_s", "how"),
        *("does", "the", "fail", "request", "maxRetries", "click.echo", "option", "default"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=8))
def test_expansion_never_drops_the_question_terms(words: list[str]) -> None:
    question = " ".join(words) + "?"
    terms = weighted_terms(question)
    assert set(own_terms(question)) <= set(terms)
    assert not set(expand(question)) & set(re.findall(r"\w+", question.lower())) - {
        w for w in expand(question) if "_" in w
    }


def test_which_function_questions_ask_for_a_name() -> None:
    assert asks_for_name("Which click function reads a single character?")
    assert asks_for_name("Which sort option compares human readable numbers?")
    assert not asks_for_name("How many times does shred overwrite a file?")
    question = "Which click function reads a single character?"
    assert names_identifier("Click provides the :func:`getchar` function.", question)
    assert names_identifier("-h, --human-numeric-sort compare human readable numbers", question)
    assert not names_identifier("Note that this function will always read.", question)


def test_literal_values_and_scope_words_are_no_names() -> None:
    ask = ask_of("How do the input options behave when they are set to None?")
    assert "None" not in ask.names
    scoped = ask_of(
        "In the Python-Markdown Meta-Data extension, what ends all meta-data?",
        common={"python", "markdown"},
    )
    assert scoped.names == ("Meta-Data",)


def _index():  # type: ignore[no-untyped-def]
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rank-"))
    return index_of(_corpus(folder, {"toc.md": OPTIONS}))


_INDEX = _index()
