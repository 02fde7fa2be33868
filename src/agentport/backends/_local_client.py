"""The caller's side of the embedded backend's model worker (`_local_worker.py`): one child
process per model file and settings, started on first use, kept warm (one model load per
worker), and replaced by a fresh one after it dies.

Why a child process: llama.cpp is native code. In the caller's process an illegal instruction
(a build for CPU features this machine advertises but cannot run), a corrupt model file or an
out-of-memory kill took the caller down with it (SIGSEGV, exit 139), and interpreter exit
could crash in llama.cpp's finalisers. In the worker, each of these ends one call with
`ErrorKind.process_failed`, whose message names the cause and the fix.

Blocking API, for a thread (`anyio.to_thread`): `ModelWorker.request` holds the worker's lock
for one request. The worker dies with this process: its stdin closes (and it polls its parent
pid), and an atexit hook closes every worker.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..core import CompletionConfig, CompletionResponse, ErrorKind, ProviderError, RawInfo, Usage
from ..transport import guard_argv
from ._spec import json_line

__all__ = [
    "REBUILD_HINT",
    "ModelWorker",
    "crash_error",
    "pick_choice",
    "scored_response",
    "worker_for",
]

_WORKER = Path(__file__).with_name("_local_worker.py")
_TAIL_BYTES = 16 * 1024
_START_S = 120.0  # importing llama_cpp on a slow, loaded machine
_STOP_GRACE_S = 10.0  # after a cancel or the deadline, before the worker is killed
_POLL_S = 0.05
_EXIT_WAIT_S = 3.0
REBUILD_HINT = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install --force-reinstall '
    "--no-cache-dir --no-deps llama-cpp-python"
)


def crash_error(returncode: int | None, tail: str, doing: str) -> ProviderError:
    """The one-line `process_failed` for a worker that died with *returncode* (negative: the
    signal) while *doing* ("loading /path/model.gguf", "generating"); *tail* is its stderr."""
    last = next((ln.strip() for ln in reversed(tail.splitlines()) if ln.strip()), "")
    code = returncode if returncode is not None else 0
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if name == "SIGILL":
            why = (
                "this llama.cpp build uses CPU instructions this machine cannot run; "
                f"rebuild it portable: {REBUILD_HINT}"
            )
        elif name in ("SIGSEGV", "SIGBUS"):
            why = (
                "a native crash in llama.cpp: a build for CPU features this machine cannot "
                "run, or a corrupt model file; `agentport doctor` tells which; rebuild "
                f"portable with: {REBUILD_HINT}"
            )
        elif name == "SIGKILL":
            why = "killed (out of memory, or by another process); lower [llm.local] n_ctx"
        elif name == "SIGABRT":
            why = "llama.cpp aborted (often an unsupported or corrupt model file)"
        else:
            why = "killed by a signal"
        message = f"the local model worker died of {name} while {doing}: {why}"
    else:
        detail = f": {last[:300]}" if last else ""
        message = f"the local model worker exited with code {code} while {doing}{detail}"
        if "llama_cpp" in tail and ("ImportError" in tail or "OSError" in tail):
            message += f" (reinstall llama-cpp-python: {REBUILD_HINT})"
    return ProviderError(
        ErrorKind.process_failed,
        message,
        backend="local",
        retryable=False,
        exit_code=returncode,
        stderr_tail=tail[-4000:],
    )


def pick_choice(
    choices: Sequence[str], logprobs: Sequence[float], temperature: float | None
) -> str:
    """The choice a scored answer gives: the likeliest (ties: the first listed) when
    *temperature* is None or 0, else one drawn with probability softmax(logprob / T)."""
    if len(logprobs) != len(choices) or not choices:
        raise ValueError("one log-likelihood per choice is needed")
    if not temperature:
        return choices[max(range(len(choices)), key=lambda i: (logprobs[i], -i))]
    peak = max(logprobs)
    weights = [math.exp((lp - peak) / temperature) for lp in logprobs]
    return random.choices(list(choices), weights=weights, k=1)[0]


def _read_replies(stream: IO[bytes], replies: queue.Queue[dict[str, Any] | None]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for raw in stream:
            with contextlib.suppress(ValueError):
                message = json.loads(raw)
                if isinstance(message, dict):
                    replies.put(message)
    replies.put(None)  # end of stdout: the worker is gone


def _read_tail(stream: IO[bytes], tail: deque[bytes]) -> None:
    size = 0
    with contextlib.suppress(OSError, ValueError):
        while block := stream.read1(4096):  # type: ignore[attr-defined]
            tail.append(block)
            size += len(block)
            while size > _TAIL_BYTES and len(tail) > 1:
                size -= len(tail.popleft())


class ModelWorker:
    """One worker process for one model file and settings (*spec*: the worker's `load` table).

    `request` is blocking and serialised by `lock`; `stats` counts what happened (for tests
    and benchmarks: starts, the worker's pid, its model loads)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = dict(spec)
        self.lock = threading.Lock()
        self.info: dict[str, Any] | None = None  # the worker's answer to `load`
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._tail: deque[bytes] = deque()
        self._ids = 0
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        """The running worker's own pid (it runs under the runner's guardian), or None."""
        proc = self._proc
        return self._pid if proc is not None and proc.poll() is None else None

    def tail(self) -> str:
        return b"".join(self._tail).decode("utf-8", "replace")

    def _spawn(self, deadline: float) -> None:
        env = dict(os.environ)
        env.pop("PYTHONSTARTUP", None)
        # under the runner's guardian, like every process agentport starts: the worker's group
        # dies with this process even on SIGKILL (the worker also exits at stdin's EOF)
        argv, fds = guard_argv([sys.executable, "-X", "faulthandler", str(_WORKER)])
        proc = subprocess.Popen(
            argv,
            pass_fds=fds,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # Ctrl-C in a terminal reaches the caller, which stops it
        )
        assert proc.stdout is not None
        assert proc.stderr is not None
        self._proc, self._replies, self._tail, self.info = proc, queue.Queue(), deque(), None
        self.starts += 1
        for target, args in (
            (_read_replies, (proc.stdout, self._replies)),
            (_read_tail, (proc.stderr, self._tail)),
        ):
            threading.Thread(target=target, args=args, daemon=True).start()
        ready = self._wait(None, min(deadline, time.monotonic() + _START_S), None, "starting")
        if not ready.get("ready"):
            raise self._died("starting")
        self._pid = int(ready.get("pid") or proc.pid)

    def _alive(self, deadline: float) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._spawn(deadline)

    def ensure_loaded(self, deadline: float, stop: threading.Event | None) -> dict[str, Any]:
        """The worker's answer to `load` (`{"ok": true, "plain": ..., "load_s": ...}`, or a
        failure answer): the worker is started and the model loaded when needed. Call with
        `lock` held. Raises `ProviderError` like `request`."""
        self._alive(deadline)
        if self.info is None:
            doing = f"loading {self.spec.get('model_path')}"
            answer = self._send({"op": "load", "model": self.spec}, deadline, stop, doing)
            if not answer.get("ok"):
                return answer
            self.info = answer
        return self.info

    def request(
        self, message: dict[str, Any], deadline: float, stop: threading.Event | None, doing: str
    ) -> dict[str, Any]:
        """Send *message* (a worker op), return its answer. Call with `lock` held.

        Raises `ProviderError`: `process_failed` when the worker dies (see `crash_error`),
        `timeout` when it does not answer by *deadline* plus a grace and is killed."""
        self._alive(deadline)
        if stop is not None and stop.is_set():
            return {"ok": False, "error": "cancelled", "message": "cancelled"}
        return self._send(message, deadline, stop, doing)

    def _send(
        self, message: dict[str, Any], deadline: float, stop: threading.Event | None, doing: str
    ) -> dict[str, Any]:
        self._ids += 1
        ident = self._ids
        self._write({**message, "id": ident})
        return self._wait(ident, deadline, stop, doing)

    def _write(self, message: dict[str, Any]) -> None:
        proc = self._proc
        assert proc is not None
        assert proc.stdin is not None
        try:
            proc.stdin.write(json_line(message))
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it died: its stdout's end says so

    def _wait(
        self, ident: int | None, deadline: float, stop: threading.Event | None, doing: str
    ) -> dict[str, Any]:
        cancelled_at: float | None = None
        while True:
            try:
                reply = self._replies.get(timeout=_POLL_S)
            except queue.Empty:
                now = time.monotonic()
                if cancelled_at is None and stop is not None and stop.is_set():
                    self._write({"op": "cancel", "id": ident})
                    cancelled_at = now
                late = now > deadline + _STOP_GRACE_S
                if late or (cancelled_at is not None and now > cancelled_at + _STOP_GRACE_S):
                    self.kill()
                    raise ProviderError(
                        ErrorKind.timeout,
                        f"the local model worker did not answer while {doing}; it was killed",
                        backend="local",
                        timeout="total",
                    ) from None
                continue
            if reply is None:
                raise self._died(doing)
            if ident is None or reply.get("id") == ident:
                return reply

    def _died(self, doing: str) -> ProviderError:
        proc = self._proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=_EXIT_WAIT_S)
        time.sleep(_POLL_S)  # the stderr reader's last block
        error = crash_error(code, self.tail(), doing)
        self._proc, self.info = None, None
        return error

    def kill(self) -> None:
        proc, self._proc, self.info = self._proc, None, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_EXIT_WAIT_S)

    def close(self) -> None:
        """Close stdin (the worker exits at once), then kill what is left."""
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self._proc, self.info = None, None


def scored_response(
    backend: str,
    choices: Sequence[str],
    answer: Mapping[str, Any],
    config: CompletionConfig,
    worker: ModelWorker,
    info: Mapping[str, Any],
) -> CompletionResponse:
    """The answer of a scored choice (the worker's `score` reply *answer*): the likeliest
    (or, with a temperature, one drawn from the likelihoods), with every choice's
    log-likelihood in `raw.extra["choice_logprobs"]`."""
    logprobs = [float(x) for x in answer.get("logprobs") or []]
    content = pick_choice(choices, logprobs, config.temperature)
    path = Path(worker.spec["model_path"])
    return CompletionResponse(
        content=content,
        model=path.name,
        usage=Usage(input_tokens=int(answer.get("n_tokens") or 0), output_tokens=1),
        finish_reason="stop",
        backend=backend,
        raw=RawInfo(
            extra={
                "model_path": str(path),
                "load_s": info.get("load_s"),
                "worker_pid": worker.pid,
                "model_loads": answer.get("loads"),
                "choice_logprobs": dict(zip(choices, logprobs, strict=True)),
            }
        ),
    )


_WORKERS: dict[str, ModelWorker] = {}
_WORKERS_LOCK = threading.Lock()


def worker_for(spec: Mapping[str, Any]) -> ModelWorker:
    """The process's worker for *spec* (model file and load settings), made on first use."""
    key = json.dumps(dict(spec), sort_keys=True, default=str)
    with _WORKERS_LOCK:
        worker = _WORKERS.get(key)
        if worker is None:
            worker = _WORKERS[key] = ModelWorker(spec)
        return worker


@atexit.register
def _close_workers() -> None:
    with _WORKERS_LOCK:
        workers = list(_WORKERS.values())
        _WORKERS.clear()
    for worker in workers:
        with contextlib.suppress(Exception):  # exit path: never raise from atexit
            worker.close()


def _forget_workers() -> None:  # in a forked child: the parent's workers are not ours
    _WORKERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)
