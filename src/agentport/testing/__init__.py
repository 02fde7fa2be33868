"""agentport.testing: test doubles that ship with the library.

- `ScriptedAdapter` / `Rule` / `Call`: replies from rules matched on label, substring, regex
  or predicate; records calls; unmatched calls raise `UnmatchedCallError`.
- `FunctionAdapter`: replies from a function.
- `EchoAdapter` / `EchoRuntime`: the smallest implementations of both contracts.
- `block_real_backends()`: make real backends refuse to run (for unit-test suites).
- `FakeModelServer`: a loopback HTTP server speaking OpenAI Responses / Chat Completions,
  Anthropic Messages and Gemini, with scripted replies (`TextReply`, `JsonReply`,
  `ToolCallReply`, `LargeReply`) and faults (`HttpFault`, `DropConnection`, `CutStream`,
  `Hang`); it records every request (`RecordedRequest`). See docs/fake-model-server.md.
  `ConcurrencyLimit`: a reply that answers 429 above a hidden (optionally flapping)
  concurrency limit.
- `LoopbackWeb` / `WebPage` / `SearchHit`: a small web site on 127.0.0.1 (articles, redirects,
  404, slow/huge/binary/latin1 pages, a prompt-injection page, robots.txt, a SearxNG JSON API)
  for web-research tests; `DEFAULT_QUESTION` is the question its default pages answer.
- `WebSearchReply` / `WebCall`: a FakeModelServer turn in which the provider's server-side
  web search runs (over a `LoopbackWeb`) before the model answers.
- `Cassette` / `CassetteRecorder` / `cassette_calls`: a real CLI run recorded once (argv,
  stdout, stderr, exit code, the model requests it made) and replayed as a fake CLI
  executable; see docs/testing.md "Cassettes".
- `claude_web_rules` / `gemini_web_rules` / `RebasedSearch`: side rules answering the web
  utility requests Claude Code and Gemini CLI send (Anthropic web search results, Gemini
  grounding and url context) from a `LoopbackWeb`; `LoopbackTls`: an https front for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from .._guard import ALLOW_ENV, BLOCK_ENV
from ._cassette import Cassette, CassetteRecorder, cassette_calls
from ._echo import EchoAdapter, EchoRuntime
from ._fake_limit import ConcurrencyLimit
from ._fake_replies import (
    DEFAULT_SIDE_RULES,
    CutStream,
    DropConnection,
    Hang,
    HttpFault,
    JsonReply,
    LargeReply,
    RecordedRequest,
    ReplyLike,
    ServerReply,
    SideRule,
    TextReply,
    ToolCallReply,
)
from ._fake_server import FakeModelServer
from ._fake_web_rules import RebasedSearch, claude_web_rules, gemini_web_rules
from ._fake_websearch import WebCall, WebSearchReply
from ._fake_wire import ApiKind, TokenUsage
from ._scripted import Call, FunctionAdapter, Rule, ScriptedAdapter, UnmatchedCallError
from ._web_site import (
    DEFAULT_PAGES,
    DEFAULT_QUESTION,
    INJECTED_PAGE,
    LoopbackWeb,
    SearchHit,
    WebPage,
)
from ._web_tls import LoopbackTls

__all__ = [
    "ALLOW_ENV",
    "BLOCK_ENV",
    "DEFAULT_PAGES",
    "DEFAULT_QUESTION",
    "DEFAULT_SIDE_RULES",
    "INJECTED_PAGE",
    "ApiKind",
    "Call",
    "Cassette",
    "CassetteRecorder",
    "ConcurrencyLimit",
    "CutStream",
    "DropConnection",
    "EchoAdapter",
    "EchoRuntime",
    "FakeModelServer",
    "FunctionAdapter",
    "Hang",
    "HttpFault",
    "JsonReply",
    "LargeReply",
    "LoopbackTls",
    "LoopbackWeb",
    "RebasedSearch",
    "RecordedRequest",
    "ReplyLike",
    "Rule",
    "ScriptedAdapter",
    "SearchHit",
    "ServerReply",
    "SideRule",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "UnmatchedCallError",
    "WebCall",
    "WebPage",
    "WebSearchReply",
    "block_real_backends",
    "cassette_calls",
    "claude_web_rules",
    "gemini_web_rules",
]


@contextmanager
def block_real_backends() -> Iterator[None]:
    """Within this block real backends fail with `ErrorKind.config` (env var based, so it
    also reaches subprocesses); restores the previous value afterwards."""
    previous = os.environ.get(BLOCK_ENV)
    os.environ[BLOCK_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(BLOCK_ENV, None)
        else:
            os.environ[BLOCK_ENV] = previous
