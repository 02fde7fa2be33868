"""Contract: why opencode, qwen, pi and copilot keep `web_search` IGNORED.

Each pinned CLI runs once against FakeModelServer with its own default tools (the widest set
it offers headless, `ToolPolicy.cli_defaults()`, nothing for web turned on by agentport),
and the test records which tools the CLI offered the model. None of them offers a web
SEARCH tool agentport could turn on: qwen-code 0.24.4 and Copilot CLI 1.0.102 (BYOK) offer
only a page fetch (`web_fetch`; qwen 0.24 lists it as a deferred tool that its `tool_search`
loads), pi 0.73.1 no web tool at all, and opencode 1.18.33 offers
`webfetch` and adds `websearch` only on opencode's own providers or with
`OPENCODE_ENABLE_EXA` / `OPENCODE_ENABLE_PARALLEL`, which sends queries to Exa's or Parallel's
hosted MCP service (URLs fixed in the binary: neither self-hostable nor provable offline).
So deep research on these backends takes agentport's own search and fetch (docs/web.md), and
the catalog says why. If a new pinned
version starts offering a search tool, this test fails: revisit the catalog entry.
Runs through scripts/test.sh (`unshare -n`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from returns.result import Success

from _more_clis_util import cli_executable, network_isolated
from agentport import create_llm_adapter
from agentport._catalog_data._support import OWN_WEB
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, Param, ParamSupport, ToolPolicy, as_messages
from agentport.testing import ALLOW_ENV, FakeModelServer, RecordedRequest

pytestmark = [
    pytest.mark.contract,
    pytest.mark.slow,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]


@dataclass(frozen=True)
class Case:
    fetch_tool: str | None  # the page-fetch tool the CLI offers by default (None: none)
    reason: str  # a phrase the catalog's web_search note must carry


CASES = {
    "qwen": Case("web_fetch", "no web search tool"),
    "copilot": Case("web_fetch", "no web search tool"),
    "pi": Case(None, "no web tool"),
    "opencode": Case("webfetch", "OPENCODE_ENABLE_EXA"),
}


def _is_search(name: str) -> bool:
    flat = name.lower().replace("_", "").replace("-", "")
    return "websearch" in flat or "searchweb" in flat


# qwen-code 0.24 offers some tools deferred: only their names and one-line descriptions, as
# `- "name": "..."` lines in a user message, loaded on demand by its `tool_search` tool.
_DEFERRED = re.compile(r'^- "(\w+)": ', re.MULTILINE)


def _offered(req: RecordedRequest) -> set[str]:
    """Tools the model could use: those sent as tools, and those listed as deferred."""
    tools = set(req.tool_names)
    if "tool_search" in tools:
        tools |= set(_DEFERRED.findall(req.user_text))
    return tools


@pytest.fixture(scope="module")
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        srv.set_default("done")
        yield srv


@pytest.fixture(scope="module")
def offered(
    server: FakeModelServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, set[str]]:
    """Tool names each CLI offered on its first model request (one run per CLI)."""
    out: dict[str, set[str]] = {}
    mp = pytest.MonkeyPatch()
    mp.setenv(ALLOW_ENV, "1")
    try:
        for name in CASES:
            exe = cli_executable(name)
            if exe is None:
                continue
            home = tmp_path_factory.mktemp(f"home-{name}")
            out[name] = anyio.run(_first_offer, name, exe, home, server)
    finally:
        mp.undo()
    return out


async def _first_offer(name: str, exe: Path, home: Path, server: FakeModelServer) -> set[str]:
    options: dict[str, Any] = {
        "base_url": server.openai_base_url,
        "api_key": "test-key",
        "executable": str(exe),
        "env": {"HOME": str(home)},
        "grace_s": 1.0,
    }
    adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
    seen = len(server.requests)
    config = CompletionConfig(
        model="fake-model",
        tools=ToolPolicy.cli_defaults(),
        startup_timeout_s=60.0,
        idle_timeout_s=30.0,
        total_timeout_s=90.0,
    )
    result = await adapter.complete(as_messages("Say hi"), config)
    assert isinstance(result, Success), (name, result)
    model_reqs = [r for r in server.requests[seen:] if r.api.is_model_api and r.side is None]
    assert model_reqs, name
    return _offered(model_reqs[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_offers_no_web_search_tool(name: str, offered: dict[str, set[str]]) -> None:
    if name not in offered:
        pytest.skip(f"{name} not installed (run .ci/steps/21-more-agent-clis)")
    tools, case = offered[name], CASES[name]
    assert tools, (name, "offered no tool at all: the probe saw nothing")
    assert not {t for t in tools if _is_search(t)}, (name, sorted(tools))
    if case.fetch_tool is None:
        assert not {t for t in tools if "fetch" in t.lower()}, (name, sorted(tools))
    else:
        assert case.fetch_tool in tools, (name, sorted(tools))


# the agents not installed here keep IGNORED too: what each note must name
NOT_RUN = {
    "hermes": "loopback URLs are refused",
    "goose": "not run here",
    "kiro": "not run here",
    "agy": "not run here",
    "acp": "no switch",
}


@pytest.mark.parametrize("name", sorted(CASES.keys() | NOT_RUN.keys()))
def test_catalog_keeps_web_search_ignored_and_says_why(name: str) -> None:
    cap = get_capability(name)
    assert cap.support(Param.web_search) is ParamSupport.IGNORED
    note = cap.notes[Param.web_search]
    assert (CASES[name].reason if name in CASES else NOT_RUN[name]) in note
    assert note.endswith(OWN_WEB)  # says which way deep research then takes
