"""Every backend's way of saying "the prompt does not fit" is one table: the CLI classifier
(`kind_from_text`, read by claude, qwen, copilot, grok, hermes, codex and ACP) and the HTTP
wire (`classify_http`, read by openai-compatible servers and LiteLLM) give `context_length`
for the same sentences, so no backend calls a too-long prompt a generic failure."""

from __future__ import annotations

import json

import pytest

from agentport.backends._classify import kind_from_text
from agentport.backends._openai_wire import classify_http, classify_stream_error
from agentport.core import ErrorKind

WORDINGS = [
    "This model's maximum context length is 8192 tokens.",
    '{"error": {"code": "context_length_exceeded"}}',
    "prompt is too long: 210000 tokens > 200000 maximum",
    "Context is too large for the model. Try /compress.",
    "Request too large for the model's context window",
    "Requested tokens (9000) exceed context window of 4096",
    "input is too long for requested model",
    "the request exceeds the model's maximum context",
]


@pytest.mark.parametrize("text", WORDINGS)
def test_the_cli_table_and_the_http_wire_agree_on_context_length(text: str) -> None:
    assert kind_from_text(text) is ErrorKind.context_length
    assert classify_http(400, text).kind is ErrorKind.context_length
    streamed = classify_stream_error({"error": {"message": text}})
    assert streamed.kind is ErrorKind.context_length, json.dumps(text)


@pytest.mark.parametrize(
    "text",
    ["connection reset by peer", "429 Too Many Requests", "invalid api key", "model not found"],
)
def test_other_failures_are_not_called_context_length(text: str) -> None:
    assert kind_from_text(text) is not ErrorKind.context_length
