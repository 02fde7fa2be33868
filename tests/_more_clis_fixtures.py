"""Replay recorded CLI transcripts (tests/fixtures/cli/<cli>/<case>.stdout) through a spec's
decoder and classifier, as the generic adapter would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentport.backends import BackendSpec, RunOutcome
from agentport.core import AgentEvent

FIXTURES = Path(__file__).parent / "fixtures" / "cli"


def transcript_lines(cli: str, case: str) -> list[Any]:
    """The JSON values of a transcript: JSONL lines, or the elements of one JSON array
    (qwen `-o json`). Lines that are not JSON are skipped, as the runner counts them as noise."""
    text = (FIXTURES / cli / f"{case}.stdout").read_text(encoding="utf-8")
    stripped = text.strip()
    if stripped.startswith("["):
        value = json.loads(stripped)
        return list(value)
    out: list[Any] = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def meta(cli: str, case: str) -> dict[str, Any]:
    value = json.loads((FIXTURES / cli / f"{case}.meta.json").read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


def replay(spec: BackendSpec, cli: str, case: str) -> tuple[list[AgentEvent], RunOutcome]:
    """Decode every object of the transcript (stopping after a terminal event, like the
    runner) and build the `RunOutcome` the classifier sees (exit code from meta.json)."""
    events: list[AgentEvent] = []
    for obj in transcript_lines(cli, case):
        if not isinstance(obj, dict):
            continue
        event = spec.decode(obj)
        if event is None:
            continue
        events.append(event)
        if event.end.terminal:
            break
    stderr = FIXTURES / cli / f"{case}.stderr"
    tail = stderr.read_text(encoding="utf-8")[-4000:] if stderr.exists() else ""
    return events, RunOutcome(meta(cli, case)["exit_code"], tail, events)
