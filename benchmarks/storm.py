"""A call storm against a provider with a hidden, flapping concurrency limit: the adaptive
concurrency window against a fixed cap.

The fake model server (`agentport.testing.FakeModelServer` with `ConcurrencyLimit`) answers
while at most `limit` requests are in service and a 429 "too many concurrent requests"
(Retry-After) above it; the limit flaps between `--high` and `--low` every `--flap-s`
seconds. Two processes (`--processes`) start together, each sending its share of `--calls`
calls at once through `create_llm_adapter("openai_compat", ...)` with the default retry
policy (3 attempts), sharing one state folder (so one shared window). Each run is made on
asyncio and on trio, once with the adaptive window (the default) and once with it turned
off and a fixed cap per process (`--caps`: what a batch's `--jobs` does; 8 is over the
limit, 1 never is).

Columns: completion ratio (goal >= 0.95), the 429s the server sent, the most requests it
served at once, the wall time, and `mislabelled`: attempts whose busy 429 was not taken as
pressure plus exhausted-window cooldowns recorded from busy 429s (goal 0). A last check
sends one real exhausted-window answer (`usage_limit_reached`) and shows that it is recorded
as a quota cooldown with its window name and leaves the concurrency window as it was.

    python benchmarks/storm.py [--calls 200] [--processes 2] [--caps 8,1] [--high 8] [--low 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_WORKER = r"""
import json, sys, time
import anyio
from returns.result import Success
from agentport import Message, create_llm_adapter
from agentport.policies import _concurrency

base_url, calls, mode, cap, loop = sys.argv[1:6]
calls, cap = int(calls), int(cap)
seen = []  # (busy 429?, outcome) of every attempt the window settled
original = _concurrency.Slot.settle

def settle(self, result):
    outcome = original(self, result)
    if not isinstance(result, Success):
        error = result.failure()
        seen.append(("too many concurrent" in error.message, outcome.value, error.kind.value))
    return outcome

_concurrency.Slot.settle = settle

async def main():
    llm = create_llm_adapter(
        "openai_compat", model="fake-model",
        openai_compat={"base_url": base_url, "api_key": "sk-storm"},
    )
    limiter = None
    if mode != "adaptive":
        llm.concurrency = None  # the adaptive window off: the caller's fixed cap only
        limiter = anyio.CapacityLimiter(cap)
    kinds = {}
    ok = 0

    async def one(i):
        nonlocal ok
        if limiter is None:
            result = await llm.complete([Message.user(f"storm call {i}")])
        else:
            async with limiter:
                result = await llm.complete([Message.user(f"storm call {i}")])
        if isinstance(result, Success):
            ok += 1
        else:
            kind = result.failure().kind.value
            kinds[kind] = kinds.get(kind, 0) + 1

    print("ready", flush=True)  # imported and built: wait for the others
    await anyio.to_thread.run_sync(sys.stdin.readline)
    began = time.time()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    mislabelled = sum(1 for busy, outcome, kind in seen if busy and outcome != "pressure")
    mislabelled += sum(1 for busy, outcome, kind in seen if not busy and outcome == "pressure")
    print(json.dumps({"ok": ok, "failed": kinds, "began": began, "ended": time.time(),
                      "mislabelled": mislabelled, "settled": len(seen)}))

anyio.run(main, backend=loop)
"""


@dataclass(frozen=True)
class Row:
    mode: str
    loop: str
    calls: int
    ok: int
    rejected: int
    peak: int
    over: int
    wall_s: float
    mislabelled: int
    failed: dict[str, int]

    @property
    def ratio(self) -> float:
        return self.ok / self.calls if self.calls else 1.0


def _flapping(high: int, low: int, flap_s: float) -> Any:
    def limit(elapsed: float) -> int:
        return high if int(elapsed / flap_s) % 2 == 0 else low

    return limit


def run_storm(
    mode: str,
    loop: str,
    *,
    calls: int = 200,
    processes: int = 2,
    cap: int = 0,
    high: int = 8,
    low: int = 3,
    flap_s: float = 1.0,
    service_s: float = 0.1,
    retry_after: float = 0.5,
) -> Row:
    """One storm (module docstring) in a fresh state folder; the measured `Row`."""
    from agentport.policies import CooldownStore
    from agentport.testing import ConcurrencyLimit, FakeModelServer

    limit = ConcurrencyLimit(
        _flapping(high, low, flap_s), service_s=service_s, retry_after=retry_after
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeModelServer(default=limit, shutdown_timeout=1.0) as server,
    ):
        state = Path(tmp) / "state"
        env = {
            **os.environ,
            "AGENTPORT_STATE_DIR": str(state),
            "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
            "HOME": tmp,  # no user configuration
            "XDG_CONFIG_HOME": str(Path(tmp) / "config"),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path]),
        }
        shares = [calls // processes + (i < calls % processes) for i in range(processes)]
        argv = [sys.executable, "-c", _WORKER, server.openai_base_url]
        procs = [
            subprocess.Popen(
                [*argv, str(n), mode, str(cap), loop],
                env=env,
                cwd=tmp,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in shares
        ]
        for proc in procs:  # every process imported and ready: all start at once
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"storm worker failed: {proc.communicate()[1][-2000:]}")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"storm worker failed: {err[-2000:]}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
        store = CooldownStore(state / "cooldown.sqlite3")
        busy_cooldowns = len(store.all_active())  # a busy 429 is never an exhausted window
    failed: dict[str, int] = {}
    for out in outs:
        for kind, n in out["failed"].items():
            failed[kind] = failed.get(kind, 0) + n
    return Row(
        mode=mode,
        loop=loop,
        calls=calls,
        ok=sum(o["ok"] for o in outs),
        rejected=limit.rejected,
        peak=limit.peak,
        over=limit.over,
        wall_s=max(o["ended"] for o in outs) - min(o["began"] for o in outs),
        mislabelled=sum(o["mislabelled"] for o in outs) + busy_cooldowns,
        failed=failed,
    )


def quota_check() -> dict[str, Any]:
    """One exhausted-window answer through the factory: recorded as a quota cooldown named
    after its window, the concurrency window unchanged."""
    import anyio

    from agentport import Message, create_llm_adapter
    from agentport.policies import CooldownStore, windows
    from agentport.testing import FakeModelServer, HttpFault, TextReply

    body = {
        "error": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "resets_in_seconds": 3600,
        }
    }
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        os.environ["AGENTPORT_STATE_DIR"] = str(Path(tmp) / "state")
        os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
        llm = create_llm_adapter(
            "openai_compat", model="fake-model",
            openai_compat={"base_url": server.openai_base_url, "api_key": "sk-storm"},
        )  # fmt: skip
        server.script(TextReply("ok"), HttpFault(429, body=body))
        anyio.run(llm.complete, [Message.user("warm up")])
        store = CooldownStore()
        before = [r.state for r in windows(store, time.time())]
        result = anyio.run(llm.complete, [Message.user("spent")])
        after = [r.state for r in windows(store, time.time())]
        cooling = store.all_active()
        return {
            "kind": result.failure().kind.value,
            "cooldowns": [(c.kind, c.window) for c in cooling],
            "window_unchanged": [s.window for s in before] == [s.window for s in after],
        }


def table(rows: list[Row]) -> str:
    head = (
        "| mode | loop | calls | completed | ratio | 429s sent | peak served | wall s "
        "| mislabelled | failures |"
    )
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        failures = ", ".join(f"{k} {n}" for k, n in sorted(r.failed.items())) or "-"
        lines.append(
            f"| {r.mode} | {r.loop} | {r.calls} | {r.ok} | {r.ratio:.3f} | {r.rejected} | "
            f"{r.peak} | {r.wall_s:.1f} | {r.mislabelled} | {failures} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--caps", default="8,1", help="the fixed caps per process to compare (comma list)"
    )
    parser.add_argument("--high", type=int, default=8)
    parser.add_argument("--low", type=int, default=3)
    parser.add_argument("--flap-s", type=float, default=1.0)
    args = parser.parse_args()
    caps = [int(c) for c in args.caps.split(",") if c.strip()]
    rows = []
    for loop in ("asyncio", "trio"):
        for mode, cap in [("adaptive", 0)] + [(f"fixed cap {c}", c) for c in caps]:
            rows.append(
                run_storm(
                    mode, loop, calls=args.calls, processes=args.processes, cap=cap,
                    high=args.high, low=args.low, flap_s=args.flap_s,
                )
            )  # fmt: skip
            print(f"{mode} on {loop}: done", file=sys.stderr)
    print(
        f"{args.calls} calls from {args.processes} processes at once; hidden limit flapping "
        f"{args.high}/{args.low} every {args.flap_s:g}s; fixed caps are per process\n"
    )
    print(table(rows))
    check = quota_check()
    print(
        f"\nexhausted window: failed as {check['kind']}, cooldowns {check['cooldowns']}, "
        f"concurrency window unchanged: {check['window_unchanged']}"
    )


if __name__ == "__main__":
    main()
