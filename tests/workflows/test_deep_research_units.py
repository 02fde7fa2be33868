"""Passages keep their subject, markup never becomes a claim, retrieval fuses rankings, and
abstention says what was read (small-model mode's pure cores)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentport.workflows.deep_research._rank import expand, rrf, weighted_terms
from agentport.workflows.deep_research._small_report import no_answer
from agentport.workflows.deep_research._units import Unit, is_markup, units_of

_WORD = re.compile(r"\w+")

REFERENCE = """## signal.alarm

signal.alarm(time)

If time is non-zero, this function requests that a SIGALRM signal be sent to the process.

signal.pause()

Cause the process to sleep until a signal is received; then the handler is called.

* `options` {Object}
  * `shell` {boolean|string} If `true`, runs `command` inside of a shell. **Default:** `false`.
  * `cwd` {string} Current working directory of the child process.

--max-count NUM
Stop reading a file after NUM matching lines have been output.

[`alarm`]: #signalalarm
[docs]: https://example.org/docs
<!-- YAML
changes:
  - version: v1.2.3
    description: the option was added to the module
-->
| kind | what happens |
|---|---|
| timeout | retried while time is left |

The table below lists the kinds of failure:

[Previous page](a.md) | [Next page](b.md)
"""


def test_a_sentence_carries_the_signature_or_option_it_sits_under() -> None:
    units = units_of(REFERENCE, "Signals")
    by_text = {u.text: u.subject for u in units}
    alarm = next(t for t in by_text if t.startswith("If time is non-zero"))
    assert by_text[alarm] == "signal.alarm(time)"
    pause = next(t for t in by_text if t.startswith("Cause the process"))
    assert by_text[pause] == "signal.pause()"
    shell = next(t for t in by_text if "inside of a shell" in t)
    assert by_text[shell] == "shell"
    assert "**Default:** `false`." in shell, "a short item is one unit: its default stays in it"
    count = next(t for t in by_text if t.startswith("Stop reading a file"))
    assert by_text[count] == "--max-count NUM"
    row = next(t for t in by_text if t.startswith("timeout"))
    assert "retried" in row


def test_markup_never_becomes_a_unit() -> None:
    texts = [u.text for u in units_of(REFERENCE, "Signals")]
    joined = "\n".join(texts)
    for markup in ("#signalalarm", "example.org", "YAML", "version: v1.2.3", "---", "Next page"):
        assert markup not in joined, markup
    assert not any(t.endswith(":") for t in texts), "a colon-ended fragment states nothing"


@given(st.sampled_from(["[x]: #a", "[`alarm`]: #signalalarm", "|---|:---:|", "| --- | --- |"]))
def test_is_markup_on_link_definitions_and_table_rules(line: str) -> None:
    assert is_markup(line)


_LINES = st.sampled_from(
    [
        "The retry policy retries only failures marked retryable.",
        "It waits retry_after when given, capped by max_delay_s.",
        "- `shell` {boolean} If true, runs the command in a shell. **Default:** `false`.",
        "alarm(time)",
        "## The retry policy",
        "[x]: #anchor",
        "<!-- a comment",
        "that spans lines -->",
        "| kind | retried | by whom here |",
        "|---|---|---|",
        "Extension | Entry Point | Dot Notation",
        "--------- | ----------- | ------------",
        "[Extra]   | `extra`     | `markdown.extensions.extra`",
        "   DIGEST determines the digest algorithm:",
        "       sysv   (equivalent to sum -s)",
        "       sha224 (equivalent to sha224sum)",
        "In this case the stream uses utf-16-le.",
        "```",
        "code = 1",
        "",
        "The table below lists them:",
        "e.g. the codex CLI retries on its own too.",
        "    Defaults to `toctitle`. Used for the title.",
        ":   The encoding of the source text file.",
        "__encoding__{: #encoding }",
        "NICE(1)                  User Commands                  NICE(1)",
        "       -k, --kill-after=DURATION",
        "              also send a KILL signal if COMMAND is still running",
        ":::python",
        "    import markdown",
        "* **`title_class`**:",
        "    !!! Note",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=25))
def test_every_unit_is_a_verbatim_span_and_never_markup(lines: list[str]) -> None:
    text = "\n".join(lines)
    flat = " ".join(text.split())
    for unit in units_of(text, "Heading"):
        assert isinstance(unit, Unit)
        body = unit.text.removesuffix(" …")
        assert " ".join(body.split()) in flat, unit
        assert not unit.text.endswith(":")
        assert "#anchor" not in unit.text
        assert "comment" not in unit.text
        assert "User Commands" not in unit.text, "a man page's running header is markup"
        assert not re.fullmatch(r"[|\s:\-]+", unit.text)


@given(st.lists(st.lists(st.integers(0, 20), max_size=10), max_size=4))
def test_rrf_keeps_every_item_once(rankings: list[list[int]]) -> None:
    fused = rrf(rankings)
    assert sorted(fused) == sorted({x for r in rankings for x in r})


@given(st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True))
def test_rrf_of_one_ranking_is_that_ranking(ranking: list[int]) -> None:
    assert rrf([ranking]) == ranking


@given(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True), st.integers(0, 30))
def test_rrf_an_item_first_everywhere_is_first(ranking: list[int], extra: int) -> None:
    other = [ranking[0], *[x for x in [extra, *ranking[1:]] if x != ranking[0]]]
    assert rrf([ranking, other])[0] == ranking[0]


def test_expansion_of_platforms_identifiers_and_flags() -> None:
    assert {"posix", "windows"} <= set(expand("Which signal stops it on Linux?"))
    assert {"total", "timeout"} <= set(expand("What bounds total_timeout_s?"))
    terms = weighted_terms("What happens with shell=True?")
    assert "shell" in terms
    assert "true" not in terms
    assert "retry_after" in expand("Is the retry after header honoured?")


@given(st.integers(1, 50), st.integers(51, 900))
def test_abstention_claims_the_documents_only_when_all_were_searched(read: int, total: int) -> None:
    partial = no_answer(read, total, anywhere=True)
    assert partial.startswith(f"Not found in the {read} of {total} passage(s) read")
    assert "do not answer" not in partial
    whole = no_answer(read, total, anywhere=False)
    assert whole.startswith("The documents do not answer the question")
    assert str(total) in whole


def test_rest_literal_blocks_are_code_and_a_sentence_about_defaults_is_prose(tmp_path) -> None:
    from agentport.workflows.deep_research import load_corpus

    (tmp_path / "utils.rst").write_text(
        "Editors\n=======\n\nIt will fall back to a sensible\ndefault.  If the user closes "
        "the editor without saving, the return value\nwill be ``None``.\n\nExample usage::\n\n"
        "    def get_message():\n        return click.edit('x')\n\n"
        ".. click:example::\n\n    @click.command()\n    def hello():\n        pass\n\n"
        "After the example the prose goes on with more words.\n",
        encoding="utf-8",
    )
    corpus = load_corpus(tmp_path).unwrap()
    texts = [u.text for p in corpus.passages for u in units_of(p.text, p.heading)]
    assert any(t.startswith("If the user closes the editor") and "None" in t for t in texts)
    assert not any("def " in t or "@click" in t for t in texts), texts
    assert "After the example the prose goes on with more words." in texts


@given(st.sampled_from(["fail", "retry", "govern", "config"]), st.sampled_from(["x", "en", "al_"]))
def test_a_word_meets_its_derivations_not_any_longer_word(stem_word: str, junk: str) -> None:
    from agentport.workflows.deep_research._small_qa import extends, overlap

    assert extends("fail", "failure")
    assert extends("retry", "retryable")
    assert not extends("list", "listen")
    assert not extends(stem_word, stem_word + junk + "zz")
    assert overlap({"list"}, {"listen"}) == 0
