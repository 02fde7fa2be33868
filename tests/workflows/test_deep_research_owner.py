"""Small-model mode answers what the question asks about, not its neighbours: a question
naming the owner of what it asks ("split's --compress option") is not answered by another
document's sentence that does not name the owner, and a sentence that quotes the question
(an example run, a benchmark's prose) is no candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_readme_answer import first_choice

from agentport.workflows.deep_research import ResearchConfig, run_research
from agentport.workflows.deep_research._small_topic import owners, quotes_question

# man pages: split has no compression level; sort compresses with a program
PAGES = {
    "split.txt": "split\n\nNAME\n\nsplit - split a file into pieces\n\nDESCRIPTION\n\n"
    "Output pieces of FILE to PREFIXaa, PREFIXab; default size is 1000 lines.\n\n"
    "--filter=COMMAND\n    write to shell COMMAND; file name is $FILE\n",
    "sort.txt": "sort\n\nNAME\n\nsort - sort lines of text files\n\nDESCRIPTION\n\n"
    "--compress-program=PROG\n    compress temporaries with PROG; decompress them with PROG -d\n",
    "head.txt": "head\n\nNAME\n\nhead - output the first part of files\n\nDESCRIPTION\n\n"
    "Print the first 10 lines of each FILE to standard output.\n",
    "cat.txt": "cat\n\nNAME\n\ncat - concatenate files\n\nDESCRIPTION\n\n"
    "Concatenate FILE(s) to standard output.\n",
}


def _write(tmp_path: Path, docs: dict[str, str]) -> Path:
    for name, text in docs.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.anyio
async def test_another_documents_option_does_not_answer_the_owners(tmp_path: Path) -> None:
    out = await run_research(
        "What is the default compression level of split's --compress option?",
        first_choice(),
        corpus=_write(tmp_path, PAGES),
        config=ResearchConfig.for_small_model(),
    )
    assert not any("compress temporaries" in f.claim for f in out.findings), out.findings
    assert "compress temporaries" not in out.summary, out.summary


@pytest.mark.anyio
async def test_the_owners_own_sentence_still_answers(tmp_path: Path) -> None:
    out = await run_research(
        "What is the default size of split's output pieces?",
        first_choice(),
        corpus=_write(tmp_path, PAGES),
        config=ResearchConfig.for_small_model(),
    )
    assert "1000 lines" in out.summary, out.summary


@pytest.mark.anyio
async def test_a_sentence_quoting_the_question_is_no_finding(tmp_path: Path) -> None:
    docs = {
        "errors.md": "# Errors\n\n## Retries\n\n"
        "Failed calls are retried 3 times with exponential backoff.\n",
        "bench.md": "# Benchmarks\n\n## The README question\n\n"
        'The README\'s question ("How are failed calls retried?") now takes 143 s '
        "and retried failed calls in 22 model calls.\n",
        "other.md": "# Other\n\nNothing about it here at all.\n",
    }
    out = await run_research(
        "How are failed calls retried?",
        first_choice(),
        corpus=_write(tmp_path, docs),
        config=ResearchConfig.for_small_model(),
    )
    assert out.findings, out
    assert not any("README" in f.claim for f in out.findings), out.findings
    assert "Failed calls are retried 3 times" in out.summary.split(" [", 1)[0], out.summary


_WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@given(st.lists(_WORD, min_size=3, max_size=8), _WORD, _WORD)
def test_a_sentence_holding_the_question_quotes_it(words: list[str], a: str, b: str) -> None:
    question = " ".join(words).capitalize() + "?"
    assert quotes_question(question, f'{a} "{question}" {b}.')
    # one word missing: the question is not quoted
    assert not quotes_question(question, " ".join(words[1:]) + f" {a}") or words[0] == a


@given(st.sampled_from(["split", "sort", "head"]), _WORD)
def test_the_owner_is_the_possessive_of_the_asking_clause(name: str, other: str) -> None:
    stems = {"split": "split", "sort": "sort", "head": "head"}
    assert owners(f"What is the default of {name}'s --x option?", stems) == [name]
    # the possessive sits in a clause that points elsewhere: the asking clause has none
    assert owners(f"{name}'s --x option names another command; which option of it?", stems) == []
    # a word that is no document's file stem names no owner
    assert owners(f"What does {other}x's option do?", stems) == []
