"""Helpers for the MCP server tests: a small corpus, a scripted model for every workflow
label, and a launcher (`python tests/_mcp_util.py [--http HOST:PORT] --root DIR ...`) that
serves agentport's MCP server with that model, as `agentport mcp` would with a real one.

`--spawn-dir DIR` makes every verify call start a real child process (`sleep 300`) and write
its pid to DIR, so tests can prove a cancelled or abandoned job leaves no process behind.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentport.testing import Call, ScriptedAdapter

DOCS = {
    "retry.md": "# Retry policy\n\nThe retry policy waits with exponential backoff and full "
    "jitter.\n\nIt retries at most three attempts by default.",
    "errors.rst": "Errors\n======\n\nA schema mismatch is never retried by the retry policy; "
    "it is re-prompted instead.",
    "cache.txt": "The cache stores finished calls on disk. Writes are atomic: temp file, fsync, "
    "rename.",
}

REFINE_Q = "How does with_retry retry a ProviderError?"
GOOD = '<refinement>insert_edge("RetryingAdapter", "uses", "RetryPolicy")</refinement>'
LOW = '<refinement>insert_edge(".complete()", "calls", "with_retry()")</refinement>'


def write_corpus(root: Path) -> Path:
    folder = root / "corpus"
    folder.mkdir(parents=True)
    for name, body in DOCS.items():
        (folder / name).write_text(body, encoding="utf-8")
    return folder


def _scope(call: Call) -> dict[str, Any]:
    return {
        "question": "Q",
        "summary": "s",
        "angles": [
            {"label": f"a{i}", "query": q} for i, q in enumerate(("retry", "cache", "schema"))
        ],
    }


def _rank(call: Call) -> dict[str, Any]:
    n = len(re.findall(r"url: (corpus://\S+)", call.prompt))
    return {
        "results": [
            {"url": f"[{i}]", "title": "t", "relevance": "high"} for i in range(1, min(n, 2) + 1)
        ]
    }


def _extract(call: Call) -> dict[str, Any]:
    passage = call.prompt.split("## Passage\n", 1)[1].split("\n\n## Task", 1)[0]
    sentence = passage.split(". ")[0].split("\n")[-1]
    return {
        "sourceQuality": "primary",
        "claims": [{"claim": "grounded: " + sentence, "quote": sentence, "importance": "central"}],
    }


VERDICT = {"refuted": False, "evidence": "well supported", "confidence": "high"}
SYNTHESIS = {
    "summary": "corpus done: it retries at most three attempts",
    "findings": [
        {
            "claim": "It retries at most three attempts by default.",
            "confidence": "medium",
            "sources": ["corpus://retry.md/0"],
            "evidence": "quoted",
        }
    ],
    "caveats": "c",
    "openQuestions": [],
}


def model(
    *, refinement: str = GOOD, verify_delay_s: float = 0.0, spawn_dir: Path | None = None
) -> ScriptedAdapter:
    """Answers research (scope..synthesis), DeepRefine (judge, abduction, refinement) and,
    for anything else, `echo: <prompt>`."""

    async def verify(call: Call) -> dict[str, Any]:
        if spawn_dir is not None:
            async with await anyio.open_process(["sleep", "300"]) as proc:
                (spawn_dir / f"{proc.pid}.pid").write_text(str(proc.pid))
                try:
                    await proc.wait()
                finally:
                    proc.kill()
        return VERDICT

    llm = ScriptedAdapter(default=lambda call: f"echo: {call.messages[-1].content}")
    llm.add(_scope, label="scope")
    llm.add(_rank, label="search")
    llm.add(_extract, label="extract")
    llm.add(verify, label="verify", delay_s=verify_delay_s)
    llm.add(SYNTHESIS, label="synthesis")
    llm.add("<judge>No</judge>", label="judge")
    llm.add(
        "<abduction>RetryingAdapter's use of RetryPolicy is missing</abduction>", label="abduction"
    )
    llm.add(refinement, label="refinement")
    return llm


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(
    *args: str,
    host: str = "127.0.0.1",
    connect: str | None = None,
    cmd: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[str, Callable[[], str]]]:
    """Serve MCP over HTTP on *host* (this launcher, or *cmd* such as `agentport mcp`) with
    *args*; yields the URL on *connect* (default: *host*) and a reader of its stderr."""
    connect = connect or host
    port = free_port(connect)
    shown = f"[{host}]" if ":" in host else host
    argv = cmd or [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryFile() as log:

        def stderr() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")

        proc = subprocess.Popen([*argv, "--http", f"{shown}:{port}", *args], env=env, stderr=log)
        try:
            end = time.monotonic() + 30
            while True:
                try:
                    with socket.create_connection((connect, port), timeout=0.2):
                        break
                except OSError:
                    assert proc.poll() is None, f"the HTTP server exited: {stderr()}"
                    assert time.monotonic() < end, "the HTTP server did not start"
                    time.sleep(0.05)
            reach = f"[{connect}]" if ":" in connect else connect
            yield f"http://{reach}:{port}/mcp", stderr
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    from agentport.mcp import SessionLimits, build_server, serve_http, serve_stdio

    ap = argparse.ArgumentParser()
    ap.add_argument("--root", action="append", default=[])
    ap.add_argument("--http")
    ap.add_argument("--token")
    ap.add_argument("--verify-delay", type=float, default=0.0)
    ap.add_argument("--spawn-dir", type=Path)
    ap.add_argument("--refinement", default=GOOD)
    ap.add_argument("--pid-file", type=Path)
    ap.add_argument("--allow-origin", action="append", default=[])
    ap.add_argument("--max-message-bytes", type=int, default=1 << 20)
    ap.add_argument("--per-client", type=int, default=8)
    ap.add_argument("--handshake-s", type=float, default=30.0)
    args = ap.parse_args(argv)
    if args.pid_file:
        args.pid_file.write_text(str(os.getpid()))

    def factory(backend: str | None) -> ScriptedAdapter:
        return model(
            refinement=args.refinement,
            verify_delay_s=args.verify_delay,
            spawn_dir=args.spawn_dir,
        )

    server = build_server(args.root, factory)
    if args.http:
        host, _, port = args.http.rpartition(":")
        limits = SessionLimits(per_client=args.per_client, handshake_s=args.handshake_s)
        serve_http(
            server,
            host,
            int(port),
            args.token,
            allowed_origins=args.allow_origin,
            limits=limits,
            max_message_bytes=args.max_message_bytes,
        )
    else:
        serve_stdio(server, args.max_message_bytes)


if __name__ == "__main__":
    main()
