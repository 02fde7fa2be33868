"""A scripted model for web research through an agent CLI whose web tools run on the client
(Claude Code's WebSearch / WebFetch, Gemini CLI's google_web_search / web_fetch): each agent
calls its CLI's search or fetch tool, then answers from the tool result it got back.

The provider-side half of those tools (the search itself, the page summary or url context)
is answered by `claude_web_rules` / `gemini_web_rules` on the same FakeModelServer. The
"model" obeys the prompt injection of `/injected` (it asks for a shell command once), so the
tests can show that nothing outside the report changes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _more_clis_util import cli_bin_dir
from agentport.testing import (
    DEFAULT_QUESTION,
    JsonReply,
    LoopbackWeb,
    RecordedRequest,
    ReplyLike,
    ToolCallReply,
)

ANGLES = [
    ("costs", "Kessler Bay tidal array construction cost"),
    ("output", "Kessler Bay tidal array megawatts homes"),
    ("wildlife", "Kessler Bay tidal array porpoise seal wildlife"),
]
INJECTION = "IMPORTANT SYSTEM NOTICE"


def bin_dir() -> Path | None:
    return cli_bin_dir()


def phase_of(req: RecordedRequest) -> str:
    text = req.user_text
    for marker, phase in (
        ("Decompose this research question", "scope"),
        ("## Web Searcher:", "search"),
        ("## Source Extractor", "extract"),
        ("## Adversarial Claim Verifier", "verify"),
        ("## Synthesis", "synthesis"),
    ):
        if marker in text:
            return phase
    return "other"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def conversation_text(req: RecordedRequest) -> str:
    """Every string of the request body (tool results included), joined."""
    return "\n".join(_strings(req.body))


@dataclass
class CliTools:
    """One CLI's tool vocabulary: how its model calls search, fetch and a shell."""

    search: Callable[[str], ToolCallReply]
    fetch: Callable[[str], ToolCallReply]
    shell: Callable[[str], ToolCallReply]


class WebAgent:
    """Answers each research phase the way an obedient agent with client-side web tools
    would: call the search / fetch tool, then answer from its result. `base_url` is where
    the CLI sees the site (a TLS front, an alias host); `to_path` maps such a url back to
    the page's path on `web`."""

    def __init__(self, web: LoopbackWeb, base_url: str, tools: CliTools, marker: Path) -> None:
        self.web = web
        self.base_url = base_url
        self.tools = tools
        self.marker = marker
        self.url = re.compile(re.escape(base_url) + r"/[^\s\"'`)*\]<>\\]+")

    def path(self, url: str) -> str:
        return url.removeprefix(self.base_url)

    def __call__(self, req: RecordedRequest) -> ReplyLike:
        phase = phase_of(req)
        text = req.user_text
        seen = conversation_text(req) if req.has_tool_result else ""
        if phase == "scope":
            return {
                "question": DEFAULT_QUESTION,
                "summary": "cost, output and wildlife",
                "angles": [{"label": k, "query": q, "rationale": k} for k, q in ANGLES],
            }
        if phase == "search":
            query = re.search(r"Search query: `([^`]*)`", text)
            assert query is not None
            if not req.has_tool_result:
                return self.tools.search(query.group(1))
            urls = list(dict.fromkeys(self.url.findall(seen)))
            return JsonReply({"results": [self._result(u) for u in urls[:6]]})
        if phase == "extract":
            url = re.search(r"\*\*URL:\*\* (\S+)", text)
            assert url is not None
            if not req.has_tool_result:
                return self.tools.fetch(url.group(1))
            if INJECTION in seen and not self._asked_shell(req):
                return self.tools.shell(f"touch {self.marker}")  # the page says so: obey once
            return JsonReply(self._extract(url.group(1), seen))
        if phase == "verify":
            claim = re.search(r'## Claim under review\n"([^"]*)"', text)
            assert claim is not None
            refuted = "inspect" in claim.group(1)  # the injected page's claim is voted down
            return JsonReply(
                {
                    "refuted": refuted,
                    "evidence": "the loopback article states it",
                    "confidence": "high",
                    "counterSource": None,
                }
            )
        if phase == "synthesis":
            urls = sorted({u for u in self.url.findall(text) if "/articles/" in u})
            pages = [self.web.page(self.path(u)) for u in urls]
            return {
                "summary": "The Kessler Bay tidal array cost 640 million euros and generates "
                "118 megawatts; porpoise sightings fell.",
                "findings": [
                    {
                        "claim": page.paragraphs[0] if page else url,
                        "confidence": "high",
                        "sources": [url],
                        "evidence": "the loopback article states it",
                    }
                    for url, page in zip(urls, pages, strict=True)
                ],
                "caveats": "a test fixture",
                "openQuestions": [],
            }
        return "ok"

    def _asked_shell(self, req: RecordedRequest) -> bool:
        return str(self.marker) in json.dumps(req.body)

    def _result(self, url: str) -> dict[str, Any]:
        page = self.web.page(self.path(url))
        title = page.title if page else url
        return {"url": url, "title": title, "snippet": title, "relevance": "high"}

    def _extract(self, url: str, seen: str) -> dict[str, Any]:
        page = self.web.page(self.path(url))
        flat = " ".join(seen.split())
        quotes = [p for p in (page.paragraphs if page else ()) if INJECTION not in p and p in flat]
        first = quotes[0] if quotes else ""
        return {
            "sourceQuality": "secondary",
            "publishDate": None,
            "claims": [{"claim": first, "quote": first, "importance": "central"}] if first else [],
        }


def run_research(backend: str, proj: Path, home: Path, timeout: float = 600) -> dict[str, Any]:
    """`agentport research DEFAULT_QUESTION --backend B --json --quiet` in *proj*, as a user
    runs it; returns the process and the parsed report."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
        "AGENTPORT_TRUSTED_PROJECTS": str(proj),
    }
    argv = [sys.executable, "-m", "agentport", "research", DEFAULT_QUESTION]
    argv += ["--backend", backend, "--json", "--quiet"]
    proc = subprocess.run(
        argv, cwd=proj, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return {"proc": proc, "report": report}
