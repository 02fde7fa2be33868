"""Every CLI backend's decoder hands the end-state table a typed `EndSignal`, and the end
state is the one the string-keyed decoders produced: for every recorded transcript
(tests/fixtures/cli; gjc replays pi's, which its decoder shares) and for lines built from
the event shapes of the CLIs no transcript was recorded for, each event (type, text, error
flag, caller metadata, end signal, what the run watch does with it) and the run's end
state (failure or answer, finish reason, warnings, retry notice, abandoned tool calls,
usage, structured value) equal tests/fixtures/endstate_table.json, recorded from the
decoders before the signal was typed. `metadata` refuses the retired keys."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from _endstate_table import ACP_UPDATES, GOLDEN, LATER_FIELDS, SPECS, Case, cases, summary
from agentport.backends._acp_wire import decode_update
from agentport.core import AgentEvent, EndSignal, EventType
from agentport.core._protocols import RETIRED_METADATA_KEYS

TABLE: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
CASES = cases()


def signal(event: AgentEvent) -> dict[str, Any]:
    """The event's end signal, fields left at their default omitted."""
    end = event.end
    said = {f.name: getattr(end, f.name) for f in fields(end)}
    return {k: v for k, v in said.items() if v is not None and v is not False}


def caller(event: AgentEvent) -> dict[str, Any]:
    return {k: v for k, v in event.metadata.items() if k not in LATER_FIELDS}


def test_the_table_covers_every_cli_backend() -> None:
    assert {c.backend for c in CASES} == set(SPECS)
    assert {f"{c.backend}/{c.name}" for c in CASES} | {"acp/updates"} == set(TABLE)
    # the table is not trivial: terminal events, fatal errors, retry notices and answers
    ends = [e["end"] for t in TABLE.values() if isinstance(t, dict) for e in t["events"]]
    for mark in ("terminal", "fatal", "final_text", "structured", "warning", "finish_reason",
                 "retry_notice", "status", "kind"):  # fmt: skip
        assert any(mark in end for end in ends), mark


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.backend}/{c.name}")
def test_the_end_state_is_the_one_recorded(case: Case) -> None:
    assert summary(case, signal, caller) == TABLE[f"{case.backend}/{case.name}"]


def _row(event: AgentEvent | None) -> dict[str, Any] | None:
    if event is None:
        return None
    return {
        "type": event.type.value,
        "content": event.content,
        "is_error": event.is_error,
        "metadata": json.loads(json.dumps(caller(event))),
        "end": signal(event),
    }


def test_acp_updates_carry_no_end_state() -> None:
    assert [_row(decode_update(u)) for u in ACP_UPDATES] == TABLE["acp/updates"]


@pytest.mark.parametrize("key", sorted(RETIRED_METADATA_KEYS))
def test_metadata_refuses_every_end_state_key(key: str) -> None:
    with pytest.raises(ValueError, match=rf"metadata key '{key}' is an end-state mark"):
        AgentEvent(type=EventType.usage, metadata={"usage": None, key: True})


def test_the_signal_is_closed_and_immutable() -> None:
    end = EndSignal(terminal=True)
    with pytest.raises(TypeError):
        EndSignal(termnal=True)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        end.terminal = False  # type: ignore[misc]
    assert repr(end) == "EndSignal(terminal=True)"
    assert AgentEvent(type=EventType.text).end == EndSignal()
