"""Issue 12's scenario: 200 calls through `["codex", "claude", "local"]` from 4 processes,
where codex's usage window is exhausted after its 50th call.

codex and claude are the real CLI adapters (`create_llm_adapter`, default settings) driving
tests/fixtures/cli/fake_cli.py: codex replays its recorded ok-json transcript for calls 1-50
(a counter shared by all processes under `flock`) and from then on its recorded http429
transcript with the usage-limit message of quota-messages.md ("try again in 2 days 17
hours"), exit 1; claude replays its ok-stream-json transcript. `local` is never needed.
Each process makes 50 calls, one after the other; all 4 start together and share one
cooldown store (a fresh AGENTPORT_STATE_DIR).

Reports: codex starts after its first exhausted answer (goal 0 until retry_at, across the 4
processes), answers lost (goal 0), who answered, and the time per call.

    python benchmarks/quota_failover_scenario.py [--calls 200] [--processes 4] [--limit 50]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cli"
FAKE_CLI = FIXTURES / "fake_cli.py"
MESSAGE = "You've hit your usage limit. Upgrade to Pro or try again in 2 days 17 hours."


def _codex_exe(tmp: Path, limit: int) -> Path:
    """A codex stand-in: the first *limit* starts (all processes) answer, later ones report
    the exhausted window; each start is logged with its time and outcome."""
    limited = tmp / "codex-limited.jsonl"
    text = (FIXTURES / "codex" / "http429.stdout").read_text()
    limited.write_text(
        text.replace("exceeded retry limit, last status: 429 Too Many Requests", MESSAGE)
    )
    exe = tmp / "codex"
    exe.write_text(
        "#!/bin/sh\n"
        f"spawned=$(date +%s.%N)\n"
        f'exec 9>>"{tmp / "codex.lock"}"\n'
        "flock 9\n"
        f'n=$(($(cat "{tmp / "codex.count"}" 2>/dev/null || echo 0) + 1))\n'
        f'echo $n > "{tmp / "codex.count"}"\n'
        "flock -u 9\n"
        f'if [ $n -le {limit} ]; then out="{FIXTURES / "codex" / "ok-json.stdout"}"; code=0; '
        f'else out="{limited}"; code=1; fi\n'
        f'echo "$n $spawned start" >> "{tmp / "codex.log"}"\n'
        f'FAKE_CLI_STDOUT="$out" FAKE_CLI_EXIT=$code "{sys.executable}" "{FAKE_CLI}" "$@"\n'
        "rc=$?\n"
        f'echo "$n $(date +%s.%N) end $code" >> "{tmp / "codex.log"}"\n'
        "exit $rc\n"
    )
    exe.chmod(0o755)
    return exe


def _worker(tmp: str, codex: str, calls: int, go: float) -> dict[str, object]:
    import anyio
    from returns.result import Success

    from agentport import Message, create_llm_adapter

    claude_opts = {
        "executable": sys.executable,
        "env": {"FAKE_CLI_STDOUT": str(FIXTURES / "claude" / "ok-stream-json.stdout"),
                "FAKE_CLI_STDIN": "read"},
    }  # fmt: skip
    claude_exe = Path(tmp) / "claude"
    if not claude_exe.exists():
        claude_exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
        claude_exe.chmod(0o755)
    claude_opts["executable"] = str(claude_exe)
    llm = create_llm_adapter(
        ["codex", "claude", "local"],
        codex={"executable": codex, "env": {"FAKE_CLI_STDIN": "read"}},
        claude=claude_opts,
        total_timeout_s=120,
    )
    answered: dict[str, int] = {}
    lost = 0
    durations: list[float] = []
    while time.time() < go:
        time.sleep(0.01)

    async def run() -> None:
        nonlocal lost
        for _ in range(calls):
            began = time.perf_counter()
            result = await llm.complete([Message.user("Say hi")])
            durations.append(time.perf_counter() - began)
            if isinstance(result, Success):
                backend = result.unwrap().backend
                answered[backend] = answered.get(backend, 0) + 1
            else:
                lost += 1

    anyio.run(run)
    return {"answered": answered, "lost": lost, "durations": durations}


def main(total: int, processes: int, limit: int) -> None:
    with tempfile.TemporaryDirectory(prefix="agentport-scenario-") as scratch:
        tmp = Path(scratch)
        os.environ["AGENTPORT_STATE_DIR"] = str(tmp / "state")
        os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
        os.environ.pop("AGENTPORT_BLOCK_REAL_BACKENDS", None)
        codex = _codex_exe(tmp, limit)
        go = time.time() + 2.0
        ctx = multiprocessing.get_context("spawn")
        per = total // processes
        began = time.perf_counter()
        with ctx.Pool(processes) as pool:
            results = pool.starmap(_worker, [(scratch, str(codex), per, go)] * processes)
        wall = time.perf_counter() - began - max(0.0, go - time.time())
        log = [line.split() for line in (tmp / "codex.log").read_text().splitlines()]
        ends = [float(t) for n, t, what, *rest in log if what == "end" and int(n) > limit]
        first_exhausted = min(ends) if ends else None
        starts = [(int(n), float(t)) for n, t, what, *_ in log if what == "start"]
        after = [n for n, t in starts if first_exhausted is not None and t > first_exhausted]
        exhausted_answers = len(ends)
        import sqlite3

        with sqlite3.connect(tmp / "state" / "cooldown.sqlite3") as conn:
            row = conn.execute("SELECT recorded FROM cooldown WHERE backend='codex'").fetchone()
        # `recorded`: when the cooldown began (the first exhausted answer's write)
        recorded = float(row[0]) if row else None
        after_record = [n for n, t in starts if recorded is not None and t > recorded]
        answered: dict[str, int] = {}
        for r in results:
            for name, count in r["answered"].items():  # type: ignore[attr-defined]
                answered[name] = answered.get(name, 0) + count
        lost = sum(int(r["lost"]) for r in results)  # type: ignore[call-overload]
        durations = [d for r in results for d in r["durations"]]  # type: ignore[attr-defined]
        print(json.dumps({
            "calls": per * processes, "processes": processes, "codex_limit": limit,
            "codex_starts": len(starts),
            "codex_exhausted_answers": exhausted_answers,
            "codex_starts_after_first_exhausted_answer": len(after),
            "codex_starts_after_the_cooldown_was_recorded": len(after_record),
            "answers_lost": lost, "answered_by": answered,
            "median_call_s": round(statistics.median(durations), 4),
            "p90_call_s": round(statistics.quantiles(durations, n=10)[-1], 4),
            "wall_s": round(wall, 2),
        }, indent=2))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--limit", type=int, default=50)
    args = parser.parse_args()
    main(args.calls, args.processes, args.limit)
