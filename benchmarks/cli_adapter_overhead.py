"""Overhead of the generic CLI adapter: `complete()` through the codex spec, against a raw
spawn of the same fake CLI, both replaying the recorded codex transcript
tests/fixtures/cli/codex/ok-json.stdout (tests/fixtures/cli/fake_cli.py; no real CLI).

"raw" = `anyio.run_process` of the same executable with the same argv and the prompt on stdin,
reading all output. Runs alternate (raw, adapter) to share any drift. Goal: median ratio
adapter / raw <= 1.05.

`--without-guardian` starts the CLI without its host-death guardian (a measurement only:
agentport always uses it), to split the overhead into the guardian's share and the rest.

    python benchmarks/cli_adapter_overhead.py [--runs 40] [--without-guardian]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cli"


async def main(runs: int, without_guardian: bool) -> None:
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    if without_guardian:
        from agentport.transport import _spawner

        _spawner._guardable = lambda: False

    with tempfile.TemporaryDirectory(prefix="agentport-bench-") as scratch:
        await _measure(Path(scratch), runs)


async def _measure(tmp: Path, runs: int) -> None:
    from agentport import Message, create_llm_adapter
    from agentport.backends import CliCall, codex
    from agentport.core import CompletionConfig
    from agentport.transport import child_env

    exe = tmp / "fake-codex"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIXTURES / "fake_cli.py"}" "$@"\n')
    exe.chmod(0o755)
    fake_env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "codex" / "ok-json.stdout"),
        "FAKE_CLI_STDIN": "read",
    }
    llm = create_llm_adapter("codex", retry=False, codex={"executable": str(exe), "env": fake_env})
    prompt = "Reply with exactly this JSON and nothing else"
    work = tmp / "work"
    work.mkdir()
    call = CliCall(
        executable=str(exe), prompt=prompt, system_prompt=None, config=CompletionConfig(),
        schema=None, options={}, run_dir=tmp, cwd=work,
    )  # fmt: skip
    argv = list(codex.build(call).argv)
    env = child_env(os.environ, fake_env)

    raw_times: list[float] = []
    adapter_times: list[float] = []
    for i in range(runs + 3):
        t0 = time.perf_counter()
        done = await anyio.run_process(argv, input=prompt.encode(), env=env, cwd=work)
        t1 = time.perf_counter()
        result = await llm.complete([Message.user(prompt)])
        t2 = time.perf_counter()
        assert done.returncode == 0
        assert b"turn.completed" in done.stdout
        assert result.unwrap().content == '{"status": "ok", "answer": 42}'
        if i >= 3:  # warm-up
            raw_times.append(t1 - t0)
            adapter_times.append(t2 - t1)
    raw = statistics.median(raw_times)
    adapted = statistics.median(adapter_times)
    ratios = statistics.median(a / r for a, r in zip(adapter_times, raw_times, strict=True))
    print(f"raw spawn, median:       {raw * 1000:7.1f} ms  ({runs} runs)")
    print(f"complete(), median:      {adapted * 1000:7.1f} ms")
    print(f"ratio of medians:        {adapted / raw:7.3f}   (goal <= 1.05)")
    print(f"median of paired ratios: {ratios:7.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--without-guardian", action="store_true")
    args = parser.parse_args()
    anyio.run(main, args.runs, args.without_guardian)
