"""What pinning the CLI binary costs per call: the first check (link chain, sha256 of the real
file, package version) and each later one (an `lstat` of every link), on the agent CLIs
found on PATH. Then the real codex CLI answering the fake model server five times through
the factory, with what each receipt says (binary, billing route, cost state).

    PATH=<folder with the CLIs>:$PATH python benchmarks/binary_check.py
"""

from __future__ import annotations

import os
import shutil
import time

import anyio

from agentport import create_llm_adapter
from agentport.core import Message
from agentport.testing import FakeModelServer
from agentport.transport._binary import check_binary, forget_binaries

CLIS = ("claude", "codex", "gemini", "opencode", "qwen", "pi", "copilot", "grok")
LATER = 200


async def _costs() -> None:
    print(f"{'cli':9} {'MiB':>6} {'first ms':>9} {'later us':>9}  version  chain")
    for cli in CLIS:
        path = shutil.which(cli)
        if path is None:
            continue
        forget_binaries()
        started = time.perf_counter()
        info = await check_binary(cli, path)
        first = time.perf_counter() - started
        assert not isinstance(info, Exception), info
        started = time.perf_counter()
        for _ in range(LATER):
            await check_binary(cli, path)
        later = (time.perf_counter() - started) / LATER
        size = os.stat(info.real_path).st_size / 2**20
        print(
            f"{cli:9} {size:6.1f} {first * 1e3:9.1f} {later * 1e6:9.1f}  "
            f"{info.version or '-':8} {len(info.chain)} entries"
        )


async def _codex_batch() -> None:
    if shutil.which("codex") is None:
        return
    forget_binaries()
    home = os.environ.get("HOME", "")
    with FakeModelServer() as server:
        server.reply("hello")
        options = {"base_url": server.openai_base_url, "api_key": "test-key", "home": home}
        llm = create_llm_adapter("codex", model="fake-model", codex=options)
        for number in range(5):
            started = time.perf_counter()
            result = await llm.complete([Message.user(f"Say hi {number}")])
            took = time.perf_counter() - started
            response = result.unwrap()
            binary = response.binary
            assert binary is not None
            print(
                f"codex call {number}: {took:5.2f}s {binary.version} sha256 {binary.sha256[:12]} "
                f"route={response.usage.billing_route} cost={response.usage.cost_state} "
                f"tokens={response.usage.input_tokens}/{response.usage.output_tokens}"
            )


async def main() -> None:
    await _costs()
    await _codex_batch()


if __name__ == "__main__":
    os.environ.setdefault("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    anyio.run(main)
