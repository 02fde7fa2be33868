"""Reads a markdown research report the way a user would and checks what it claims:
which pages the answer cites, every quote against the page it cites, the confirmed count.
Shared by the README test and benchmarks/deep_research_local.py."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

_QUOTE = re.compile(r'^  > "(?P<quote>.*)"\n  — (?P<url>corpus://\S+)', re.MULTILINE)
_CONFIRMED = re.compile(r"^\*\*Status:\*\* (\d+) confirmed", re.MULTILINE)
_CITED = re.compile(r"corpus://([^\s,)\]]+?)/\d+")
# a finding quoted verbatim (small-model mode): its claim is the quote; the appendix names it
_FINDING = re.compile(
    r"^### \d+\. (?P<quote>.*) _\([^\n]*\)_\nQuoted verbatim from [^\n]*\n"
    r"Sources: [^\n]*?\((?P<url>corpus://[^\s)]+)\)",
    re.MULTILINE,
)


@dataclass
class ReportCheck:
    answer_pages: list[str] = field(default_factory=list)
    quotes: list[tuple[str, str]] = field(default_factory=list)
    bad_quotes: list[tuple[str, str]] = field(default_factory=list)
    confirmed: int = 0


def _flat(text: str) -> str:
    return " ".join(text.split())


def check_report(markdown: str, corpus_root: Path) -> ReportCheck:
    """The pages cited by the answer (summary and findings), every quote with the document
    it cites and the ones that are not a verbatim span of it (whitespace aside; ` …` marks
    a cut), and the confirmed count of the status line."""
    out = ReportCheck()
    answer = markdown.split("## Caveats")[0].split("## Verified claims")[0]
    answer = answer.split("## Summary", 1)[-1] if "## Summary" in answer else ""
    out.answer_pages = sorted(set(_CITED.findall(answer)))
    if (m := _CONFIRMED.search(markdown)) is not None:
        out.confirmed = int(m.group(1))
    for m in [*_QUOTE.finditer(markdown), *_FINDING.finditer(markdown)]:
        quote = html.unescape(m.group("quote"))
        url = m.group("url")
        path = _CITED.match(url)
        assert path is not None
        out.quotes.append((quote, path.group(1)))
        doc = corpus_root / path.group(1)
        text = _flat(doc.read_text(encoding="utf-8")) if doc.is_file() else ""
        parts = [_flat(p) for p in quote.split(" …") if _flat(p)]
        if not parts or not all(p in text for p in parts):
            out.bad_quotes.append((quote, path.group(1)))
    return out
