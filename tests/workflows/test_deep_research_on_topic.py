"""Small-model reports state only claims about what the question asks: a question the
documents cannot answer gets an abstention naming how much was read, not off-topic
findings; a sentence from another subject's page carries that subject."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_deep_research_readme_answer import first_choice

from agentport.workflows.deep_research import ResearchConfig, run_research

DOCS = {
    "toc.md": "# Table of Contents\n\n## Usage\n\n"
    "The `title` option sets the title of the table of contents. "
    "The `marker` option is the text replaced by the table of contents.\n",
    "gemini.md": "# gemini (Gemini CLI)\n\n## Retries\n\n"
    "The CLI's own retries use the table of contents settings file.\n",
    "other.md": "# Other\n\nThe parser reads every option from the settings.\n",
}


def _corpus(tmp_path: Path) -> Path:
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.anyio
@pytest.mark.parametrize(
    "question",
    [
        "What is the default value of the table of contents collapse_depth option?",
        "Which extension renders LaTeX formulas in the table of contents?",
    ],
)
async def test_an_unanswerable_question_abstains(tmp_path: Path, question: str) -> None:
    out = await run_research(
        question, first_choice(), corpus=_corpus(tmp_path), config=ResearchConfig.for_small_model()
    )
    assert not out.findings, out.findings
    # either no passage had a candidate (the whole corpus checked), or none of the
    # confirmed sentences is about what the question asks (the part read, said so)
    assert out.summary.startswith(("Not found in the ", "The documents do not answer")), out
    if "collapse_depth" in question:  # sentences share its words, none names the option
        assert out.summary.startswith("Not found in the 3 of 5 passage(s) read"), out.summary
        assert "'collapse_depth'" in out.summary


@pytest.mark.anyio
async def test_another_subjects_sentence_carries_its_subject(tmp_path: Path) -> None:
    out = await run_research(
        "How are retries of the table of contents set?",
        first_choice(),
        corpus=_corpus(tmp_path),
        config=ResearchConfig.for_small_model(),
    )
    said = [f for f in out.findings if "CLI's own retries" in f.claim]
    assert said, out.findings
    # the finding stays the verbatim sentence; what it is about is named beside it, and the
    # summary states it with its subject
    assert all(f.evidence.endswith("; about gemini (Gemini CLI)") for f in said), said
    assert all(not f.claim.startswith("gemini (Gemini CLI)") for f in said), said
    if "CLI's own retries" in out.summary:
        assert "gemini (Gemini CLI): " in out.summary, out.summary
