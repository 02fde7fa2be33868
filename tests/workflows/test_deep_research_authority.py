"""A page that says it is not current yields to one that does: the current value of a
near-copy is stated, the old one never (`_authority`, `_small_report.settled`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_deep_research_small_answers import DOCS, TOWN
from test_deep_research_small_model import SMALL, chooser

from agentport.workflows.deep_research import load_corpus, run_research
from agentport.workflows.deep_research._authority import (
    STALE_FOLDERS,
    current_version,
    one_value_apart,
    stale_page,
)
from agentport.workflows.deep_research._small_report import settled

_word = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@given(st.lists(_word, min_size=1, max_size=4), st.sampled_from(sorted(STALE_FOLDERS)))
def test_a_page_under_an_archive_folder_is_stale_wherever_the_folder_is(
    folders: list[str], old: str
) -> None:
    for at in range(len(folders) + 1):
        parts = [*folders[:at], old, *folders[at:], "page.md"]
        assert stale_page("/".join(parts))
    assert not stale_page("/".join([*folders, "page.md"])), "no archive folder, no title"
    assert not stale_page(f"{old}.md"), "a file named archive.md is a page about archives"


@pytest.mark.parametrize(
    ("title", "opening", "stale"),
    [
        ("split (archived notes)", "", True),
        ("Changelog of an older version", "", True),
        ("Usage", "This page is obsolete; see the new guide.", True),
        ("Usage", "The documentation was superseded by the 3.0 guide.", True),
        ("Usage", "The obsolete -s option is still accepted.", False),
        ("Archiving files", "tar makes an archive of files.", False),
        ("Options", "", False),
    ],
)
def test_a_title_or_opening_that_says_so_of_the_page(title: str, opening: str, stale: bool) -> None:
    assert stale_page("docs/page.md", title, opening) is stale


_tokens = st.lists(
    st.sampled_from(["the", "default", "is", "Width", "80", "100", "x_y"]), max_size=8
)


@given(_tokens, _tokens)
def test_one_value_apart_is_symmetric_and_needs_equal_length(a: list[str], b: list[str]) -> None:
    assert one_value_apart(a, b) is one_value_apart(b, a)
    if len(a) != len(b):
        assert not one_value_apart(a, b)
    assert one_value_apart(a, a)
    diff = sum(x != y for x, y in zip(a, b, strict=False))
    if len(a) == len(b) and diff > 1:
        assert not one_value_apart(a, b)


def _claim(text: str, url: str, stale: bool) -> dict[str, object]:
    return {"claim": text, "sourceUrl": url, "stale": stale, "valid": [], "refutedVotes": 0}


@given(st.lists(st.tuples(st.sampled_from(["80", "100", "120"]), st.booleans()), max_size=5))
def test_settled_never_drops_a_current_side_for_an_old_one(
    sides: list[tuple[str, bool]],
) -> None:
    claims = [
        _claim(f"The maximum width is {v} characters.", f"corpus://d{i}.md/0", old)
        for i, (v, old) in enumerate(sides)
    ]
    disputed, superseded = settled(claims)
    assert not disputed & superseded
    assert all(claims[i]["stale"] for i in superseded), "only an old page is superseded"
    values = {v for v, old in sides if not old}
    if len(values) == 1 and any(old for _, old in sides):
        kept = [i for i, (_, old) in enumerate(sides) if not old]
        assert not set(kept) & (disputed | superseded), "one current value stands"


def _planted(tmp_path: Path, folder: str) -> Path:
    for rel, text in DOCS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    copy = tmp_path / folder / "velmora.md"
    copy.parent.mkdir(parents=True)
    copy.write_text(TOWN.replace("48,200", "46,700"), encoding="utf-8")
    return tmp_path


@pytest.mark.anyio
@pytest.mark.parametrize("folder", ["archive", "docs/old-site/superseded"])
async def test_the_current_value_is_stated_and_the_archived_one_never(
    tmp_path: Path, folder: str
) -> None:
    corpus = load_corpus(_planted(tmp_path, folder), max_passage_chars=400).unwrap()
    out = await run_research(
        "How many people live in Velmora?", chooser(), corpus=corpus, config=SMALL
    )
    said = " ".join([out.summary, *(f.claim for f in out.findings)])
    assert "46,700" not in said
    assert "48,200" in out.summary.split(". ")[0]


def test_the_current_version_of_an_archived_sentence_is_verbatim_from_a_current_page(
    tmp_path: Path,
) -> None:
    corpus = load_corpus(_planted(tmp_path, "archive"), max_passage_chars=400).unwrap()
    old = next(p for p in corpus.passages if p.path.startswith("archive/") and "46,700" in p.text)
    found = current_version(corpus, "Velmora has a population of 46,700.", old.url)
    assert found is not None
    text, url = found
    assert text == "Velmora has a population of 48,200."
    assert url.startswith("corpus://towns/velmora.md/")
    assert corpus.grounded(text, url)
    assert current_version(corpus, "Nothing like this sentence exists anywhere.", old.url) is None
