"""How big is a handed-over conversation, and how long does the handover take?

A 10-turn session on the REAL `claude` CLI (every other turn runs a Bash tool call) against
`FakeModelServer`, then `handoff(rt, to="codex")`; prints:

- the transcript: turns, characters, estimated tokens of the whole briefing (unbounded) and
  of the default-bounded one, and what the bound left out;
- `brief()` time (the pure part);
- handover time: from `handoff()` to codex's first model request (its process start
  included), and to its final answer.

The CLIs come from .ci/steps/20-agent-clis (`$AGENTPORT_CLI_BIN_DIR` or the bin-dir.txt of
`$AGENTPORT_CLI_PREFIX`); run loopback-only, as the tests do:

    unshare -n sh -c 'ip link set lo up; python benchmarks/session_handoff.py'

`--synthetic` skips the CLIs and measures a recorded-shape transcript of the same size.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from agentport import create_agent_runtime, handoff
from agentport.core import (
    DEFAULT_BRIEFING_TOKENS,
    CompletionConfig,
    Transcript,
    Turn,
    TurnKind,
    brief,
    estimate_tokens,
)
from agentport.testing import ALLOW_ENV, FakeModelServer, ToolCallReply

TURNS = 10


def _bin_dir() -> Path | None:
    explicit = os.environ.get("AGENTPORT_CLI_BIN_DIR")
    if explicit:
        return Path(explicit)
    prefix = Path(
        os.environ.get("AGENTPORT_CLI_PREFIX")
        or Path.home() / ".cache" / "agentport-ci" / "agent-clis"
    )
    listed = prefix / "bin-dir.txt"
    return Path(listed.read_text().strip()) if listed.is_file() else None


def _options(cli: str, srv: FakeModelServer, home: Path, bins: Path) -> dict[str, Any]:
    base = {"executable": str(bins / cli), "env": {"HOME": str(home)}, "api_key": "k"}
    if cli == "claude":
        return base | {"base_url": srv.anthropic_base_url, "max_retries": 0}
    return base | {"base_url": srv.openai_base_url, "request_max_retries": 0,
                   "stream_max_retries": 0}  # fmt: skip


def _report(transcript: Transcript) -> None:
    whole = brief(transcript, max_tokens=10**9)
    bounded = brief(transcript)
    started = time.perf_counter()
    for _ in range(100):
        brief(transcript)
    per_call_ms = (time.perf_counter() - started) * 10
    kinds = [t.kind for t in transcript.turns]
    print(f"turns recorded           {len(transcript.turns)} "
          f"({kinds.count(TurnKind.user)} user, {kinds.count(TurnKind.tool_call)} tool calls, "
          f"{kinds.count(TurnKind.tool_result)} tool results)")  # fmt: skip
    print(f"transcript text          {sum(len(t.text) for t in transcript.turns)} chars")
    print(f"whole briefing           {len(whole.text)} chars, ~{whole.tokens} tokens (est.)")
    print(f"bounded briefing         {len(bounded.text)} chars, ~{bounded.tokens} tokens "
          f"(bound {DEFAULT_BRIEFING_TOKENS}), kept {bounded.kept}, "
          f"dropped {bounded.dropped}")  # fmt: skip
    print(f"brief() time             {per_call_ms:.3f} ms")


def synthetic() -> Transcript:
    turns: list[Turn] = []
    for i in range(TURNS):
        turns.append(Turn(TurnKind.user, f"step {i}: look at the build and tell me what failed"))
        if i % 2:
            turns.append(Turn(TurnKind.tool_call, '{"command": "make test 2>&1 | tail"}', "Bash"))
            turns.append(Turn(TurnKind.tool_result, "FAILED tests/test_x.py::case\n" * 40))
        turns.append(Turn(TurnKind.assistant, f"Step {i}: the failure is in test_x; " * 6))
    return Transcript(turns=tuple(turns), cwd="/home/user/project", backend="claude")


async def real(bins: Path) -> None:
    os.environ[ALLOW_ENV] = "1"
    tmp = Path(tempfile.mkdtemp(prefix="agentport-bench-"))
    (tmp / "home-b" / ".codex").mkdir(parents=True)
    with FakeModelServer(default="ok") as srv:
        options = {
            "claude": _options("claude", srv, tmp / "home-a", bins),
            "codex": _options("codex", srv, tmp / "home-b", bins),
        }
        config = CompletionConfig(idle_timeout_s=60, total_timeout_s=180)
        tools = CompletionConfig(idle_timeout_s=60, total_timeout_s=180).model_copy(
            update={"tools": CompletionConfig().tools.model_copy(
                update={"allowed_tools": ("Bash",), "sandbox": None})}
        )  # fmt: skip
        session_started = time.monotonic()
        async with create_agent_runtime("claude", model="fake-model", **options) as rt:
            for i in range(TURNS):
                if i % 2:
                    srv.reply(ToolCallReply(
                        "Bash", {"command": f"seq 1 40 | sed 's/^/line {i}-/'",
                                 "description": "list"},
                        then=f"Step {i}: the listing shows 40 lines; " * 6))  # fmt: skip
                    turn = rt.send(f"step {i}: list the lines", tools)
                else:
                    srv.reply(f"Step {i}: nothing to run; " * 6)
                    turn = rt.send(f"step {i}: what is next?", config)
                async for _ in turn:
                    pass
            session_s = time.monotonic() - session_started
            transcript = rt.transcript
            before = len(srv.model_requests)
            srv.reply("continued on codex")
            began_wall, began = time.time(), time.monotonic()
            async with handoff(rt, to="codex", model="fake-model", **options) as moved:
                async for event in moved.send("what did the listings show?", config):
                    last = event
            done_s = time.monotonic() - began
        first = srv.model_requests[before]
        print(f"10-turn claude session   {session_s:.1f} s")
        _report(transcript)
        print(f"handover -> first codex request  {first.received_at - began_wall:.2f} s")
        print(f"handover -> codex final answer   {done_s:.2f} s ({last.type.value})")
        size = len(str(first.raw))
        print(f"codex first request      {size} bytes on the wire, "
              f"briefing ~{estimate_tokens(moved.briefing.text if moved.briefing else '')} "
              "tokens (est.)")  # fmt: skip


def main() -> None:
    bins = _bin_dir()
    if "--synthetic" in sys.argv or bins is None:
        print("synthetic transcript (no CLIs)" if bins is None else "synthetic transcript")
        _report(synthetic())
        return
    anyio.run(real, bins)


if __name__ == "__main__":
    main()
