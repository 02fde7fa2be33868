"""The path of one CLI call through agentport: which modules one `complete()` crosses in the
host process, and how many module-to-module hops it takes, from the factory's adapter to
the process and back (the codex spec replaying its recorded transcript through
tests/fixtures/cli/fake_cli.py; no real CLI, no network). With `--http`, one openai_compat
call to `agentport.testing.FakeModelServer` on 127.0.0.1 instead (the server runs in its own
thread, which is not profiled).

A module is crossed when one of its functions runs during the call; a hop is a distinct
(caller module, callee module) pair with the two different. The guardian process that
spawns the CLI is a second process and is not profiled (named in the output).

    python benchmarks/call_path.py [--show] [--http]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cli"


def _module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) and name.startswith("agentport") else None


async def _one_call(tmp: Path, show: bool, base_url: str | None) -> None:
    from agentport import Message, create_llm_adapter

    prompt = [Message.user("Reply with exactly this JSON and nothing else")]
    if base_url is not None:
        http = {"base_url": base_url, "api_key": "sk-fake-0123456789"}
        llm = create_llm_adapter("openai_compat", cwd=tmp, openai_compat=http)
        expected = "ok"  # the fake server's default reply
    else:
        exe = tmp / "fake-codex"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIXTURES / "fake_cli.py"}" "$@"\n')
        exe.chmod(0o755)
        stdout = str(FIXTURES / "codex" / "ok-json.stdout")
        env = {"FAKE_CLI_STDOUT": stdout, "FAKE_CLI_STDIN": "read"}
        llm = create_llm_adapter("codex", codex={"executable": str(exe), "env": env})
        expected = '{"status": "ok", "answer": 42}'
    (await llm.complete(prompt)).unwrap()  # warm: imports and caches out of the measurement

    order: list[str] = []
    hops: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        here = _module(frame)
        if here is None:
            return
        if here not in order:
            order.append(here)
        back = frame.f_back
        while back is not None and _module(back) is None:
            back = back.f_back  # through anyio/asyncio frames to the agentport caller
        caller = _module(back) if back is not None else None
        if caller is not None and caller != here:
            hops[(caller, here)] += 1

    sys.setprofile(profile)
    try:
        result = await llm.complete(prompt)
    finally:
        sys.setprofile(None)
    assert result.unwrap().content == expected
    print(f"modules crossed in the host process: {len(order)}")
    print(f"distinct hops (caller module -> callee module): {len(hops)}")
    if base_url is None:
        print("plus the guardian process (agentport.transport._guardian) that runs the CLI")
    if show:
        print("\nmodules, in order of first entry:")
        for name in order:
            print(f"  {name}")
        print("\nhops:")
        for (caller, callee), n in sorted(hops.items()):
            print(f"  {n:4d}  {caller} -> {callee}")


async def main(show: bool, http: bool) -> None:
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    with tempfile.TemporaryDirectory(prefix="agentport-path-") as scratch:
        if not http:
            await _one_call(Path(scratch), show, None)
            return
        from agentport.testing import FakeModelServer

        with FakeModelServer() as server:
            await _one_call(Path(scratch), show, server.openai_base_url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", action="store_true", help="list the modules and hops")
    parser.add_argument("--http", action="store_true", help="an openai_compat call instead")
    args = parser.parse_args()
    anyio.run(main, args.show, args.http)
