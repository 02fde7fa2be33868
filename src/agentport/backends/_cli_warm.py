"""Warm processes for the CLI backends whose spec says how one process serves call after call
(`BackendSpec.warm`: claude's stream-json input). Used by `CliAdapter`; docs/warm.md.

- The pool is per configuration: the long-lived invocation's argv and environment (hashed:
  no key or token is kept in the registry) and the call's `cwd` when it sets one. Calls that
  differ in anything the process was started with (model, system prompt, tools, schema, ...)
  never share a process.
- A call takes an idle process and first starts a fresh conversation on it
  (`WarmTurns.reset`: claude's `/clear`, confirmed by its `conversation_reset` line); a
  process without a `cwd` of the call's works in a folder of its own, emptied before each
  reuse, so no file of an earlier call is there. A process whose reset fails is closed and
  the next idle one (or a new one) taken.
- Then the call's turn (`LiveProcess.turn`). The caller gives the process back only after a
  call that succeeded; any error or a cancellation closes it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from ..core import ErrorKind, ProviderError
from ..core._telemetry import trace_env
from ..transport import (
    Frame,
    OnFrame,
    ProcessRequest,
    ProcessResult,
    WarmPool,
    missing_executable,
    private_tempdir,
)
from ..transport._live import LiveProcess
from ._spec import BackendSpec, Invocation

__all__ = ["finish", "run_turn", "warm_key"]

_RESET_LIMIT_S = 30.0


def warm_key(invocation: Invocation, env: Mapping[str, str], cwd: Path | None) -> str:
    """What a process started with *invocation* depends on, hashed: part of its pool's key."""
    traced = set(trace_env())  # a call's trace context is not part of the configuration
    started_with = {
        "argv": list(invocation.argv),
        "env": {k: v for k, v in env.items() if k not in traced},
        "cwd": str(cwd) if cwd is not None else None,
    }
    text = json.dumps(started_with, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


async def run_turn(
    pool: WarmPool[LiveProcess],
    spec: BackendSpec,
    invocation: Invocation,
    env: Mapping[str, str],
    cwd: Path | None,
    request: ProcessRequest,
    on_frame: OnFrame,
) -> tuple[ProcessResult, LiveProcess | None]:
    """One call's turn on a process of *pool*: an idle one with a fresh conversation, or one
    started with *invocation* in *cwd* (None: a folder of its own). Like `run_process`, never
    raises for expected failures (a CLI that cannot start: `result.error`); the process (or
    None when none started) goes to `finish` after the call is judged. A cancelled turn
    closes its process."""
    live = await _take(pool, spec, request)
    if live is None:
        try:
            live = await _start(invocation, env, cwd, spec.name)
        except ProviderError as exc:
            return ProcessResult(error=exc), None
        pool.started(live)
    try:
        return await live.turn(invocation.stdin or b"", request, on_frame), live
    except BaseException:
        await live.aclose()  # shielded
        raise


async def finish(pool: WarmPool[LiveProcess], live: LiveProcess, succeeded: bool) -> None:
    """Keep *live* for the next call after a call that succeeded, else close it."""
    if succeeded:
        await pool.give(live)
    else:
        await live.aclose()


async def _start(
    invocation: Invocation, env: Mapping[str, str], cwd: Path | None, name: str
) -> LiveProcess:
    argv0 = invocation.argv[0]
    why = missing_executable(argv0, env)
    if why is not None:
        kind = ErrorKind.process_failed if "Permission" in why else ErrorKind.not_installed
        raise ProviderError(kind, f"cannot start {argv0!r}: {why}", retryable=False)
    home = ExitStack()
    folder = cwd or home.enter_context(private_tempdir(f"agentport-{name}-w-"))
    try:
        live = await LiveProcess.start(invocation.argv, env, folder, home)
    except OSError as exc:
        home.close()
        missing = isinstance(exc, FileNotFoundError)
        raise ProviderError(
            ErrorKind.not_installed if missing else ErrorKind.process_failed,
            f"cannot start {argv0!r}: {exc.strerror or exc}",
            retryable=False,
        ) from None
    live.workdir = None if cwd else folder
    return live


async def _take(
    pool: WarmPool[LiveProcess], spec: BackendSpec, request: ProcessRequest
) -> LiveProcess | None:
    while (live := await pool.take()) is not None:
        if live.workdir is not None:
            _empty(live.workdir)
        try:
            if await _reset(live, spec, request):
                return live
        except BaseException:  # cancelled mid-reset: a process half-way is never kept
            await live.aclose()
            raise
        await live.aclose()
    return None


async def _reset(live: LiveProcess, spec: BackendSpec, request: ProcessRequest) -> bool:
    """Start a fresh conversation on *live*: True once the CLI confirmed it."""
    warm = spec.warm
    assert warm is not None
    confirmed = False

    async def on_frame(frame: Frame) -> bool:
        nonlocal confirmed
        if not frame.is_json or not isinstance(frame.value, dict):
            return False
        confirmed = confirmed or warm.reset_done(frame.value)
        event = spec.decode(frame.value)
        return bool(event is not None and event.metadata.get("terminal"))

    limit = min(request.total_timeout_s, _RESET_LIMIT_S)
    limits = replace(
        request,
        startup_timeout_s=limit,
        idle_timeout_s=limit,
        total_timeout_s=limit,
    )
    result: ProcessResult = await live.turn(warm.reset, limits, on_frame)
    return result.error is None and result.stopped and confirmed and live.alive()


def _empty(folder: Path) -> None:
    """Remove everything inside *folder* (an earlier call's files), keeping the folder."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
