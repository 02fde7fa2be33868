"""Can web mode (no corpus) run on a backend, and who searches: the rule every interface
applies before a run starts (`agentport research`, the MCP server's `research_start`).

- the catalog says the backend's web_search is NATIVE: the agent's own web tools search;
- else, when `[web]` names a search engine (and the `web` extra is installed): agentport's
  own tools search and fetch (`_web_own`, docs/web.md);
- else: one line saying why, and how to configure an engine or give a corpus.

`run_research` applies the same rule (it reports the refusal as `report.error`); checking
first lets an interface refuse before it starts anything. Source: docs/web.md.
"""

from __future__ import annotations

from ...web import WebSettings
from ._run import check_web_search
from ._web_own import own_web_refusal

__all__ = ["SMALL_MODEL_NATIVE_WEB", "uses_own_web", "web_mode_refusal"]

#: why small-model mode cannot use an agent's native web tools (it needs every text first)
SMALL_MODEL_NATIVE_WEB = (
    "small-model mode researches a local folder (--corpus DIR, corpus=...) or the pages "
    "agentport's own web tools fetch; it cannot use the agent's web tools"
)


def web_mode_refusal(
    backend: str, *, small_model: bool = False, settings: WebSettings | None = None
) -> str | None:
    """None when web research can run on *backend* (canonical name), else the one-line
    reason. *small_model*: the run is in small-model mode (`ResearchConfig.small_model`),
    which needs agentport's own tools (native web tools hand it no text to choose from).
    *settings*: the `[web]` table (default: the loaded settings; a bad config file is
    reported in the line, never raised)."""
    refusal = check_web_search(backend)
    if refusal is None:
        return SMALL_MODEL_NATIVE_WEB if small_model else None
    return own_web_refusal(refusal, settings)


def uses_own_web(backend: str, settings: WebSettings | None = None) -> bool:
    """True when web research on *backend* runs on agentport's own search and fetch: the
    catalog refuses its web tools and a search engine is configured."""
    refusal = check_web_search(backend)
    return refusal is not None and own_web_refusal(refusal, settings) is None
