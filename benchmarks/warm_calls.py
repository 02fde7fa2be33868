"""Per-call time of the real agents, cold (one agent process per call) against warm
(`[llm] warm = 1`: one agent kept between calls, a fresh conversation per call), each
answering from FakeModelServer on 127.0.0.1 (no network, no account).

Agents: `gemini --acp`, `qwen --acp`, `opencode acp` and `copilot --acp` through the acp
backend, configured as each CLI's docs tell users to point it at an OpenAI-compatible or
Gemini endpoint (tests/_acp_agents.py); `claude`, `pi` and `codex` (warm: `codex
app-server`) through their own backends (`base_url`, `api_key`), as CI installs them
(.ci/steps/20-agent-clis and 21-more-agent-clis). Goal: warm <= 1/5 of cold for the node-based CLIs.

Also: a research run (`run_research`, web mode with `assume_web_tools`: the scripted model
answers each phase's schema) on FakeModelServer through `gemini --acp` (or `claude`, `codex`:
`--research-agent`), with the workflows' default warm block and with `warm = 0`.

    python benchmarks/warm_calls.py [--calls 6] [--no-research] [--research-agent gemini]
                                    [--agents gemini,qwen,opencode,copilot,claude,pi,codex]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _acp_agents import acp_options  # noqa: E402


def _options(agent: str, server: Any, home: Path) -> dict[str, Any]:
    options = acp_options(agent, server, home)
    if options is None:
        raise SystemExit(f"{agent} is not installed: run .ci/run (it installs the agent CLIs)")
    return options


def _cli(agent: str, server: Any, tmp: Path) -> dict[str, Any]:
    """claude (ANTHROPIC_BASE_URL / _API_KEY), pi (a models.json provider) or codex (a custom
    provider) options."""
    from _more_clis_util import cli_executable

    exe = cli_executable(agent)
    if exe is None:
        raise SystemExit(f"{agent} is not installed: run .ci/run (it installs the agent CLIs)")
    home = tmp / f"home-{agent}"
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    url = server.anthropic_base_url if agent == "claude" else server.openai_base_url
    return {"executable": str(exe), "base_url": url, "api_key": "test-key",
            "env": {"HOME": str(home)}}  # fmt: skip


async def _per_call(agent: str, calls: int, warm: int, tmp: Path) -> list[float]:
    from agentport import Message, create_llm_adapter
    from agentport.testing import FakeModelServer

    with FakeModelServer(default="hello from the fake model") as server:
        if agent in ("claude", "pi", "codex"):
            options = _cli(agent, server, tmp)
            model = None if agent == "codex" else "m"  # codex: its default catalog model
            llm = create_llm_adapter(agent, retry=False, warm=warm, model=model, **{agent: options})
        else:
            options = _options(agent, server, tmp / f"home-{agent}")
            llm = create_llm_adapter("acp", retry=False, warm=warm, acp=options)
        times = []
        for _ in range(calls + 1):
            started = time.perf_counter()
            (await llm.complete([Message.user("say hello")])).unwrap()
            times.append(time.perf_counter() - started)
        await llm.aclose()  # type: ignore[attr-defined]
    return times[1:] if warm else times  # warm: the first call starts the agent


def _research_model(req: Any) -> Any:
    """The scripted model of a web-mode run (`assume_web_tools`): each phase answered by the
    schema its prompt asks for (three angles, three sources each, two claims a source)."""
    from agentport.testing import JsonReply

    # the schema is in the prompt (gemini) or sent natively (codex: `text.format`; claude:
    # its structured-output tool)
    text = req.user_text + json.dumps([req.body.get("text"), req.body.get("tools")])
    if '"angles"' in text:
        angles = [{"label": f"a{i}", "query": f"backoff q{i}"} for i in range(3)]
        return JsonReply({"question": "Q", "summary": "s", "angles": angles})
    if '"refuted"' in text:
        return JsonReply({"refuted": False, "evidence": "agrees", "confidence": "high"})
    if '"sourceQuality"' in text:
        n = len(text) % 97
        claims = [
            {"claim": f"claim {n}-{i}", "quote": "backoff doubles", "importance": "central"}
            for i in range(2)
        ]
        return JsonReply({"sourceQuality": "primary", "claims": claims})
    if '"results"' in text:
        n = len(text) % 7
        results = [
            {"url": f"https://site{n * 3 + i}.org/p", "title": "t", "relevance": "high"}
            for i in range(3)
        ]
        return JsonReply({"results": results})
    url = re.search(r"https://site\d+\.org/p", text)
    claim = re.search(r"claim \d+-\d", text)
    finding = {
        "claim": claim.group(0) if claim else "claim",
        "sources": [url.group(0)] if url else [],
        "evidence": "backoff doubles",
        "confidence": "high",
    }
    return JsonReply(
        {"summary": "retries back off", "findings": [finding], "caveats": "c",
         "openQuestions": []}
    )  # fmt: skip


async def _research(warm: bool, tmp: Path, agent: str) -> tuple[float, int]:
    from agentport import create_llm_adapter
    from agentport.testing import FakeModelServer
    from agentport.workflows.deep_research import ResearchConfig, run_research

    with FakeModelServer(default="{}") as server:
        server.reply(_research_model, times=None)
        setting = None if warm else 0
        if agent == "gemini":
            options = _options("gemini", server, tmp / "home-research")
            llm = create_llm_adapter("acp", retry=False, warm=setting, acp=options)
        else:
            options = _cli(agent, server, tmp)
            llm = create_llm_adapter(agent, retry=False, warm=setting, **{agent: options})
        config = ResearchConfig(assume_web_tools=True, MAX_VERIFY_CLAIMS=6, VOTES_PER_CLAIM=3)
        started = time.perf_counter()
        report = await run_research("How should retries back off?", llm, config=config)
        if report.error:
            raise SystemExit(f"the research run failed: {report.error}")
        return time.perf_counter() - started, int(report.stats["agentCallsMade"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--agents", default="gemini,qwen,opencode,copilot,claude,pi,codex")
    parser.add_argument("--no-research", action="store_true")
    parser.add_argument("--research-agent", default="gemini", choices=["gemini", "claude", "codex"])
    args = parser.parse_args()
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    with tempfile.TemporaryDirectory(prefix="agentport-warm-") as scratch:
        tmp = Path(scratch)
        print("| agent | cold median (s) | warm median (s) | warm / cold |")
        print("| --- | --- | --- | --- |")
        for agent in args.agents.split(","):
            cold = statistics.median(anyio.run(_per_call, agent, args.calls, 0, tmp))
            warm = statistics.median(anyio.run(_per_call, agent, args.calls, 1, tmp))
            print(f"| {agent} | {cold:.3f} | {warm:.3f} | {warm / cold:.3f} |")
        if not args.no_research:
            agent = args.research_agent
            cold_run, calls = anyio.run(_research, False, tmp, agent)
            warm_run, _ = anyio.run(_research, True, tmp, agent)
            print(
                f"\nresearch run ({calls} agent calls) on {agent}, scripted fake server: "
                f"warm = 0 {cold_run:.1f} s; the workflow's default warm block "
                f"{warm_run:.1f} s ({warm_run / cold_run:.2f}x)"
            )


if __name__ == "__main__":
    main()
