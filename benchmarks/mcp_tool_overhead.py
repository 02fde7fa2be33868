"""Latency a tool call through `agentport mcp` adds over calling the library directly.

The same `complete` (a ScriptedAdapter answering "ok": no model, no I/O, so what is measured
is the protocol path) four ways:

- direct: `adapter.complete(...)` in this process;
- in-process: the MCP SDK's `Client` connected to the server object (no transport);
- stdio: the SDK client talking to a server subprocess over stdin/stdout (what agent CLIs do);
- http: the SDK client over streamable HTTP to a server subprocess on 127.0.0.1.

Reports median and p90 per call and the added latency (median - direct median). Startup (the
server process importing the SDK) is reported apart, since clients pay it once per session.

    python benchmarks/mcp_tool_overhead.py [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from agentport import CompletionConfig, Message
from agentport.testing import ScriptedAdapter


def _adapter(_: str | None = None) -> ScriptedAdapter:
    return ScriptedAdapter(default="ok")


def _serve(http: str | None) -> None:
    from agentport.mcp import build_server, serve_http, serve_stdio

    server = build_server([Path.cwd()], _adapter)
    if http:
        serve_http(server, "127.0.0.1", int(http), None)
    else:
        serve_stdio(server)


async def _time(n: int, call: Callable[[], Awaitable[object]]) -> list[float]:
    for _ in range(min(10, n)):  # warm-up
        await call()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _row(name: str, ms: list[float], base: float | None) -> str:
    med = statistics.median(ms)
    p90 = statistics.quantiles(ms, n=10)[-1]
    added = "" if base is None else f"  added {med - base:7.3f} ms"
    return f"{name:<11} median {med:7.3f} ms  p90 {p90:7.3f} ms{added}"


async def main(calls: int) -> None:
    from mcp import Client, StdioServerParameters

    from agentport.mcp import build_server

    args = {"prompt": "hi"}
    adapter = _adapter()
    direct = await _time(calls, lambda: adapter.complete([Message.user("hi")], CompletionConfig()))
    base = statistics.median(direct)
    print(_row("direct", direct, None))

    async with Client(build_server([Path.cwd()], _adapter)) as client:
        print(
            _row("in-process", await _time(calls, lambda: client.call_tool("complete", args)), base)
        )
        # CPU per call (client + server, same process): insensitive to a busy machine
        cpu0 = time.process_time()
        for _ in range(calls):
            await client.call_tool("complete", args)
        cpu = (time.process_time() - cpu0) * 1000 / calls
        print(f"in-process CPU per call (client + server): {cpu:.3f} ms")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve"], env=env)
    t0 = time.perf_counter()
    async with Client(params) as client:
        print(f"stdio startup (spawn + import + handshake): {time.perf_counter() - t0:.2f} s")
        print(_row("stdio", await _time(calls, lambda: client.call_tool("complete", args)), base))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await anyio.open_process(
        [sys.executable, __file__, "--serve-http", str(port)], env=env, stderr=None
    )
    try:
        with anyio.fail_after(120):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    await anyio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            print(
                _row("http", await _time(calls, lambda: client.call_tool("complete", args)), base)
            )
    finally:
        proc.terminate()
        await proc.wait()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--serve-http", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.serve or ns.serve_http:
        os.environ.setdefault("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
        _serve(ns.serve_http)
    else:
        anyio.run(main, ns.calls)
