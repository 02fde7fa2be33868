"""A runtime turn's last event is built by one function (`core.last_event`), so every
runtime (CLI, ACP, the approvals gate, the echo fake) hands callers the same keys: an
`error` event carries the `ProviderError` in `metadata["error"]`, a `final` event the
`CompletionResponse` and its `usage`."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

import agentport
from agentport.core import (
    CompletionResponse,
    ErrorKind,
    EventType,
    ProviderError,
    Usage,
    last_event,
)


@given(st.sampled_from(list(ErrorKind)), st.text(max_size=80), st.booleans())
def test_a_failure_ends_in_an_error_event_carrying_it(
    kind: ErrorKind, message: str, retryable: bool
) -> None:
    error = ProviderError(kind, message or "failed", backend="claude", retryable=retryable)
    event = last_event(Failure(error))
    assert event.type is EventType.error
    assert event.is_error
    assert event.metadata == {"error": error}
    assert event.content == str(error)


@given(st.text(max_size=80), st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_success_ends_in_a_final_event_carrying_the_response(
    content: str, prompt: int, completion: int
) -> None:
    usage = Usage(input_tokens=prompt, output_tokens=completion)
    response = CompletionResponse(content=content, usage=usage)
    event = last_event(Success(response))
    assert event.type is EventType.final
    assert not event.is_error
    assert event.content == content
    assert event.metadata == {"response": response, "usage": usage}


def test_no_module_builds_a_turns_last_event_by_hand() -> None:
    root = Path(agentport.__file__).parent
    by_hand = re.compile(r'metadata=\{"(?:error|response)":')
    found = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "_protocols.py" and by_hand.search(path.read_text(encoding="utf-8"))
    ]
    assert found == [], f"build the last event with core.last_event: {found}"
