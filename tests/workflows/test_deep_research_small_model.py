"""Small-model mode: the model only chooses (sections, sentence ids, one of two votes, the
best confirmed claims) and the code checks; quotes are verbatim by construction."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import ROOT
from agentport.core import ErrorKind, ProviderError
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import (
    Corpus,
    ResearchConfig,
    load_corpus,
    run_research,
    to_markdown,
)
from agentport.workflows.deep_research._small import pick_sentences, sentences

DOCS_DIR = ROOT / "docs"
README_Q = "How does agentport retry failed calls?"

DOCS = {
    "errors.md": "# Errors and retries\n\n| kind | retryable |\n| --- | --- |\n"
    "| `timeout` | yes, retried by the retry policy |\n\n## The retry policy\n\n"
    "The retry policy retries only failures marked retryable, with exponential backoff "
    "and full jitter. It never retries a cancelled call.\n\n"
    "```python\nRetryPolicy(attempts=3)\n```\n",
    "cache.md": "# Cache\n\nThe cache stores finished calls on disk for a later resume. "
    "Writes are atomic: temp file, fsync, rename.",
    "mirror.md": "# Cache\n\nThe cache stores finished calls on disk for a later resume. "
    "Writes are atomic: temp file, fsync, rename.",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return load_corpus(tmp_path).unwrap()


def _enum(call: Call) -> list[str]:
    schema = call.config.output_schema
    assert isinstance(schema, dict), "small-model calls constrain the answer to an enum"
    items: list[str] = schema["properties"]["ids"]["items"]["enum"]
    return items


def chooser(*, vote: str = "supported", pick: int = 0, rng: random.Random | None = None) -> Any:
    """A model that answers every call with an allowed choice."""

    def reply(call: Call) -> Any:
        if call.config.choices is not None:
            return rng.choice(call.config.choices) if rng else vote
        ids = _enum(call)
        if rng is not None:
            return {"ids": rng.sample(ids, k=rng.randint(1, min(3, len(ids))))}
        return {"ids": [ids[min(pick, len(ids) - 1)]]}

    llm = ScriptedAdapter()
    llm.add(reply)
    return llm


SMALL = ResearchConfig.for_small_model()


@pytest.mark.anyio
async def test_small_mode_quotes_are_verbatim_sentences_of_their_source(corpus: Corpus) -> None:
    llm = chooser()
    out = await run_research(
        "How does the retry policy handle failures?", llm, corpus=corpus, config=SMALL
    )
    assert out.error is None
    assert out.stats["researchMode"] == "small-model"
    assert out.claims
    for c in out.claims:
        assert c.grounded is True
        assert c.quote == c.claim
        passage = corpus.passage(c.source)
        assert passage is not None
        assert c.quote in sentences(passage.text)
    assert any(c.outcome == "confirmed" for c in out.claims)
    assert out.findings
    assert "errors.md" in " ".join(s for f in out.findings for s in f.sources)


@pytest.mark.anyio
async def test_small_mode_never_sends_a_seed_prompt_or_free_schema(corpus: Corpus) -> None:
    llm = chooser()
    await run_research(
        "How does the retry policy handle failures?", llm, corpus=corpus, config=SMALL
    )
    assert llm.calls
    assert not llm.calls_with("search"), "retrieval is BM25, no model ranking call"
    for call in llm.calls:
        assert "Structured output only" not in call.prompt
        if call.config.choices is not None:
            assert call.config.choices == ("supported", "refuted")
        else:
            offered = re.findall(r"^([SHC]\d+): ", call.prompt, re.MULTILINE)
            assert _enum(call) == offered, "the enum is exactly the ids shown"


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_whatever_the_model_chooses_every_quote_is_in_its_source(
    seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import anyio

    folder = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    loaded = load_corpus(folder).unwrap()
    llm = chooser(rng=random.Random(seed))
    out = anyio.run(
        lambda: run_research("retry policy cache failures", llm, corpus=loaded, config=SMALL)
    )
    assert out.error is None
    assert out.ungrounded == []
    assert all(c.grounded is True for c in out.claims)
    confirmed = {c.claim for c in out.claims if c.outcome == "confirmed"}
    for f in out.findings:
        assert f.claim in confirmed, "synthesis only cites confirmed claims"
    loaded.close()


@given(
    st.lists(
        st.text(alphabet=st.characters(categories=["L", "N", "P", "Zs"]), min_size=1, max_size=80),
        min_size=1,
        max_size=12,
    )
)
@settings(max_examples=60, deadline=None)
def test_every_sentence_unit_is_a_verbatim_span(lines: list[str]) -> None:
    text = "\n".join(lines)
    flat = " ".join(text.split())
    for unit in sentences(text):
        for part in unit.split(" …"):
            assert " ".join(part.split()) in flat


def test_sentences_skip_code_headings_and_table_rules() -> None:
    units = sentences(DOCS["errors.md"])
    assert "RetryPolicy(attempts=3)" not in " ".join(units)
    assert not any(u.startswith("#") or set(u) <= set("|-: ") for u in units)
    assert any(u.startswith("The retry policy retries only failures") for u in units)


def test_only_sentences_sharing_a_question_word_are_offered() -> None:
    units = sentences(DOCS["errors.md"] + "\n\n" + DOCS["cache.md"])
    offered = pick_sentences("How are retries done?", units)
    assert offered
    assert all("retr" in u.lower() for u in offered)
    assert pick_sentences("quantum chromodynamics", units) == []


@pytest.mark.anyio
async def test_votes_outside_the_allowed_answers_abstain(corpus: Corpus) -> None:
    llm = ScriptedAdapter()
    llm.add({"ids": ["S1"]}, label="extract")
    llm.add({"ids": ["H1"]}, label="scope")
    llm.add("<vote>yes</vote> or supported or refuted", label="verify")
    out = await run_research("retry policy failures", llm, corpus=corpus, config=SMALL)
    assert out.claims
    assert all(c.outcome == "unverified" for c in out.claims)
    assert not out.findings


@pytest.mark.anyio
async def test_failed_synthesis_choice_is_retried_then_replaced_by_rank_order(
    corpus: Corpus,
) -> None:
    llm = chooser()
    llm.add(ProviderError(ErrorKind.schema_mismatch, "garbage"), label="synthesis")
    llm.rules.insert(0, llm.rules.pop())  # before the chooser's catch-all rule
    out = await run_research("retry policy failures", llm, corpus=corpus, config=SMALL)
    assert len(llm.calls_with("synthesis")) == 2
    assert out.stats["synthesis"] == "fallback (rank order)"
    assert out.findings
    assert any("failed twice" in w for w in out.warnings)
    assert "synthesis: fallback" in to_markdown(out)


@pytest.mark.anyio
async def test_identical_passages_are_fetched_once_and_listed_with_mirrors(
    corpus: Corpus,
) -> None:
    llm = chooser()
    out = await run_research("cache stores finished calls", llm, corpus=corpus, config=SMALL)
    urls = [s.url for s in out.sources]
    assert not ({"corpus://cache.md/0", "corpus://mirror.md/0"} <= set(urls))
    mirrored = [s for s in out.sources if s.mirrors]
    assert mirrored
    assert out.stats["mirrorsMerged"] == 1
    assert "also at corpus://" in to_markdown(out)


@pytest.mark.anyio
async def test_small_mode_needs_a_corpus() -> None:
    out = await run_research("Q?", chooser(), config=SMALL)
    assert out.error is not None
    assert "corpus" in out.error


def test_readme_question_retrieves_the_retry_page_without_the_model() -> None:
    from agentport.workflows.deep_research._small import angle_queries

    loaded = load_corpus(DOCS_DIR, max_passage_chars=SMALL.max_passage_chars).unwrap()
    try:
        angles = angle_queries(README_Q)
        hits = [p.path for a in angles for p in loaded.search(a.query, 3)]
        assert "errors.md" in hits
    finally:
        loaded.close()
