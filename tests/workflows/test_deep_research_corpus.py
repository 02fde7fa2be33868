"""Corpus mode: indexing a folder (md, txt, rst, html), BM25 search, quote grounding, bad
folders, and a scripted end-to-end run where agentport searches and fetches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from returns.result import Failure

from _deep_research_util import PASS, scope
from agentport.core import ErrorKind, ProviderError
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import (
    Corpus,
    Extract,
    ResearchConfig,
    Search,
    Verdict,
    load_corpus,
    run_research,
    to_markdown,
)

DOCS = {
    "retry.md": "# Retry policy\n\nThe retry policy waits with exponential backoff and full "
    "jitter.\n\nIt retries at most three attempts by default.",
    "errors.rst": "Errors\n======\n\nA schema mismatch is never retried by the retry policy; "
    "it is re-prompted instead.",
    "cache.txt": "The cache stores finished calls on disk. Writes are atomic: temp file, fsync, "
    "rename.",
    "page.html": "<html><head><title>Timeouts</title><script>var retry = 1;</script></head>"
    "<body><h1>Timeouts</h1><p>Three timeouts exist: startup, idle and total.</p></body></html>",
    ".hidden/secret.md": "retry retry retry hidden",
    "notes.pdf": "not indexed",
}


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    loaded = load_corpus(_write(tmp_path, dict(DOCS)))
    assert not isinstance(loaded, Failure)
    return loaded.unwrap()


# ── indexing ──


def test_indexes_md_txt_rst_html_but_not_hidden_folders_or_pdf(corpus: Corpus) -> None:
    paths = {p.path for p in corpus.passages}
    assert paths == {"retry.md", "errors.rst", "cache.txt", "page.html"}
    assert corpus.documents == 4


def test_titles_come_from_headings_rst_underlines_and_html_title(corpus: Corpus) -> None:
    titles = {p.path: p.title for p in corpus.passages}
    assert titles["retry.md"] == "Retry policy"
    assert titles["errors.rst"] == "Errors"
    assert titles["page.html"] == "Timeouts"
    assert titles["cache.txt"] == "cache"


def test_html_script_text_is_not_indexed(corpus: Corpus) -> None:
    html = next(p for p in corpus.passages if p.path == "page.html")
    assert "var retry" not in html.text
    assert "startup, idle and total" in html.text


def test_passages_never_exceed_the_configured_size(tmp_path: Path) -> None:
    long = "\n\n".join(f"Sentence number {i} is about retries. " * 20 for i in range(10))
    loaded = load_corpus(_write(tmp_path, {"long.md": long}), max_passage_chars=300)
    passages = loaded.unwrap().passages
    assert len(passages) > 5
    assert max(len(p.text) for p in passages) <= 300


def test_search_ranks_the_passage_with_the_query_terms_first(corpus: Corpus) -> None:
    hits = corpus.search("exponential backoff jitter", 3)
    assert hits[0].path == "retry.md"


def test_search_tolerates_fts_syntax_in_model_written_queries(corpus: Corpus) -> None:
    for query in ('"retry" AND (policy OR *', "NEAR(x y)", "-", "", "c++ / retry:"):
        corpus.search(query, 3)  # must not raise sqlite3.OperationalError
    assert corpus.search("", 3) == []


def test_search_can_exclude_the_claims_own_passage(corpus: Corpus) -> None:
    own = corpus.search("retry policy", 1)[0]
    assert own.url not in [p.url for p in corpus.search("retry policy", 5, exclude=[own.url])]


def test_quote_grounding_ignores_case_punctuation_and_spacing(corpus: Corpus) -> None:
    url = next(p.url for p in corpus.passages if p.path == "retry.md")
    assert corpus.grounded("waits with EXPONENTIAL   backoff, and full jitter", url)
    assert corpus.grounded("The retry policy waits ... at most three attempts", url)
    assert not corpus.grounded("retries forever with no backoff", url)
    assert not corpus.grounded("", url)
    assert not corpus.grounded("anything", "corpus://missing.md/0")


# ── bad folders ──


def test_missing_folder_is_a_config_error_naming_it(tmp_path: Path) -> None:
    result = load_corpus(tmp_path / "nope")
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.config
    assert "nope" in result.failure().message
    assert "does not exist" in result.failure().message


def test_a_file_instead_of_a_folder_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "a.md"
    f.write_text("x", encoding="utf-8")
    result = load_corpus(f)
    assert isinstance(result, Failure)
    assert "not a folder" in result.failure().message


def test_folder_without_readable_documents_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, {"a.pdf": "x", "empty.md": "  \n", "bad.txt": b"\xff\xfe\x00bad"})
    result = load_corpus(tmp_path)
    assert isinstance(result, Failure)
    assert "no readable document" in result.failure().message


def test_undecodable_files_are_skipped_and_listed(tmp_path: Path) -> None:
    _write(tmp_path, {"ok.md": "fine text", "bad.txt": b"\xff\xfe\x00bad"})
    loaded = load_corpus(tmp_path).unwrap()
    assert [p.path for p in loaded.passages] == ["ok.md"]
    assert loaded.skipped[0].startswith("bad.txt")


# ── end to end ──


def _candidate_urls(call: Call) -> list[str]:
    return re.findall(r"url: (corpus://\S+)", call.prompt)


def _passage(call: Call) -> str:
    return call.prompt.split("## Passage\n", 1)[1].split("\n\n## Task", 1)[0]


def _rank_by_index(call: Call) -> Search:
    """Answer with candidate numbers ("[1]"), as a small model often does."""
    n = len(_candidate_urls(call))
    return Search.model_validate(
        {
            "results": [
                {"url": f"[{i}]", "title": "t", "relevance": "high"}
                for i in range(1, min(n, 2) + 1)
            ]
        }
    )


def _extract_quoting(call: Call) -> Extract:
    passage = _passage(call)
    first_sentence = passage.split(". ")[0].split("\n")[-1]
    return Extract.model_validate(
        {
            "sourceQuality": "primary",
            "claims": [
                {
                    "claim": "grounded: " + first_sentence,
                    "quote": first_sentence,
                    "importance": "central",
                },
                {
                    "claim": "invented",
                    "quote": "the moon is made of cheese",
                    "importance": "central",
                },
            ],
        }
    )


def _corpus_model(search: object = _rank_by_index, verify: object = PASS) -> ScriptedAdapter:
    llm = ScriptedAdapter()
    llm.add(scope(3), label="scope")
    llm.add(search, label="search")
    llm.add(_extract_quoting, label="extract")
    llm.add(verify, label="verify")
    llm.add(
        {
            "summary": "corpus done: it retries at most three attempts",
            "findings": [
                {
                    "claim": "It retries at most three attempts by default.",
                    "confidence": "medium",
                    "sources": ["corpus://retry.md/0"],
                    "evidence": "quoted",
                }
            ],
            "caveats": "c",
            "openQuestions": [],
        },
        label="synthesis",
    )
    return llm


@pytest.mark.anyio
async def test_corpus_run_on_a_backend_without_web_tools(corpus: Corpus) -> None:
    llm = _corpus_model()
    out = await run_research("How does the retry policy work?", llm, corpus=corpus)
    assert out.error is None
    assert out.mode == "corpus"
    assert out.summary.startswith("corpus done")
    assert out.sources
    assert all(s.url.startswith("corpus://") for s in out.sources)
    assert not any(c.config.web_search for c in llm.calls)


@pytest.mark.anyio
async def test_corpus_search_prompt_lists_retrieved_passages(corpus: Corpus) -> None:
    llm = _corpus_model()
    await run_research("retry policy backoff", llm, corpus=corpus)
    urls = _candidate_urls(llm.calls_with("search")[0])
    assert urls
    assert len(urls) <= ResearchConfig().corpus_candidates


@pytest.mark.anyio
async def test_extractor_gets_the_passage_text(corpus: Corpus) -> None:
    llm = _corpus_model()
    await run_research("retry policy backoff", llm, corpus=corpus)
    texts = [_passage(c) for c in llm.calls_with("extract")]
    assert any("exponential backoff" in t for t in texts)


@pytest.mark.anyio
async def test_ungrounded_quote_is_set_aside_and_never_voted_on(corpus: Corpus) -> None:
    llm = _corpus_model()
    out = await run_research("retry policy backoff", llm, corpus=corpus)
    assert all(c.grounded is True for c in out.claims)
    assert "invented" in [c.claim for c in out.ungrounded]
    assert not any("moon is made of cheese" in c.prompt for c in llm.calls_with("verify"))
    assert not any("moon is made of cheese" in c.prompt for c in llm.calls_with("synthesis"))
    assert out.stats["ungroundedQuotes"] == len(out.ungrounded) >= 1
    assert any("not found in their source" in w for w in out.warnings)
    md = to_markdown(out)
    assert md.index("set aside (quote not found") < md.index("## Summary")


@pytest.mark.anyio
async def test_verifiers_get_counter_evidence_from_other_passages(corpus: Corpus) -> None:
    llm = _corpus_model()
    await run_research("retry policy backoff", llm, corpus=corpus)
    prompt = next(c.prompt for c in llm.calls_with("verify") if "grounded: It retries" in c.prompt)
    appendix = prompt.split("possible counter-evidence)\n", 1)[1]
    assert "corpus://" in appendix
    assert "corpus://retry.md/0]" not in appendix  # not the claim's own passage
    assert prompt.startswith("## Adversarial Claim Verifier (voter ")


@pytest.mark.anyio
async def test_failed_ranking_falls_back_to_search_order(corpus: Corpus) -> None:
    llm = _corpus_model(search=ProviderError(ErrorKind.schema_mismatch, "bad"))
    out = await run_research("retry policy backoff", llm, corpus=corpus)
    assert out.sources
    assert any("used full-text search order" in w for w in out.warnings)


@pytest.mark.anyio
async def test_urls_the_model_invents_are_dropped(corpus: Corpus) -> None:
    invented = Search.model_validate(
        {"results": [{"url": "https://made.up/x", "title": "t", "relevance": "high"}]}
    )
    llm = _corpus_model(search=invented)
    out = await run_research("retry policy backoff", llm, corpus=corpus)
    assert all(s.url.startswith("corpus://") for s in out.sources)
    assert any("not among the candidates" in w for w in out.warnings)


@pytest.mark.anyio
async def test_model_judging_every_candidate_irrelevant_fetches_nothing(corpus: Corpus) -> None:
    llm = _corpus_model(search=Search(results=[]))
    out = await run_research("retry policy backoff", llm, corpus=corpus)
    assert out.sources == []
    assert llm.calls_with("extract") == []
    assert out.summary.startswith("No claims extracted.")


@pytest.mark.anyio
async def test_corpus_path_is_loaded_and_bad_paths_become_report_errors(tmp_path: Path) -> None:
    llm = _corpus_model()
    missing = await run_research("Q", llm, corpus=tmp_path / "missing")
    assert missing.error is not None
    assert "does not exist" in missing.error
    assert llm.calls == []
    _write(tmp_path / "docs", dict(DOCS))
    out = await run_research("retry policy", llm, corpus=tmp_path / "docs")
    assert out.error is None
    assert out.sources


@pytest.mark.anyio
async def test_small_model_caps_shorten_every_prompt(corpus: Corpus) -> None:
    llm = _corpus_model(verify=Verdict(refuted=False, evidence="e" * 2000, confidence="high"))
    cfg = ResearchConfig.for_small_model(small_model=False)  # the caps on the seed path
    await run_research("retry policy backoff", llm, corpus=corpus, config=cfg)
    longest = max(len(c.prompt) for c in llm.calls)
    assert longest < 6000
    assert "e" * 400 not in llm.calls_with("synthesis")[0].prompt
