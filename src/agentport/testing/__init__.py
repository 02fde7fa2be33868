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
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from .._guard import ALLOW_ENV, BLOCK_ENV
from ._echo import EchoAdapter, EchoRuntime
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
from ._fake_wire import ApiKind, TokenUsage
from ._scripted import Call, FunctionAdapter, Rule, ScriptedAdapter, UnmatchedCallError

__all__ = [
    "ALLOW_ENV",
    "BLOCK_ENV",
    "DEFAULT_SIDE_RULES",
    "ApiKind",
    "Call",
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
    "RecordedRequest",
    "ReplyLike",
    "Rule",
    "ScriptedAdapter",
    "ServerReply",
    "SideRule",
    "TextReply",
    "TokenUsage",
    "ToolCallReply",
    "UnmatchedCallError",
    "block_real_backends",
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
