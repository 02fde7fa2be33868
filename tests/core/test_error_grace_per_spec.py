"""How long a CLI run may stay silent after a fatal error line (`error_grace_s`) before it is
judged: the spec's own where one was measured (pi: 1 s, its retry notice follows an error
`agent_end` within 1 ms), 5 s for the others, and the `error_grace_s` option over both."""

from __future__ import annotations

from typing import Any

import pytest

from agentport.backends import _cli_turn
from agentport.core import as_messages
from agentport.factory import create_llm_adapter


@pytest.mark.parametrize(
    ("backend", "options", "expected"),
    [
        ("pi", {}, 1.0),
        ("pi", {"error_grace_s": 3}, 3.0),
        ("claude", {}, 5.0),
        ("gemini", {}, 5.0),
        ("claude", {"error_grace_s": 0.5}, 0.5),
    ],
)
@pytest.mark.anyio
async def test_the_error_grace_is_the_specs_unless_the_option_says(
    backend: str, options: dict[str, Any], expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    seen: list[float] = []
    real = _cli_turn.RunWatch

    def watch(grace: float) -> Any:
        seen.append(grace)
        return real(grace)

    monkeypatch.setattr(_cli_turn, "RunWatch", watch)
    adapter = create_llm_adapter(
        backend, retry=False, **{backend: {"executable": "/bin/false", **options}}
    )
    await adapter.complete(as_messages("hi"))  # /bin/false fails at once: only the grace matters
    assert seen == [expected]
