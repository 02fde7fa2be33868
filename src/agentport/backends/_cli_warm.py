"""Warm processes for the CLI backends whose spec says how one process serves call after call
(`BackendSpec.warm`: claude's stream-json input, pi's rpc mode, codex's app-server). Used by
`CliAdapter`; docs/warm.md.

- The pool is per configuration (`Launch.key`): the long-lived invocation's argv and
  environment, the files the build wrote into the call's run folder (hashed: no key or token
  is kept in the registry) and the call's `cwd` when it sets one. Calls that differ in
  anything the process was started with (model, system prompt, tools, schema, ...) never
  share a process; a started process gets its own copy of the files.
- A call takes an idle process and first starts a fresh conversation on it
  (`WarmTurns.reset`: claude's `/clear`, confirmed by its `conversation_reset` line; pi's
  `new_session`; codex's app-server needs none: each turn opens a thread). A process without
  a `cwd` of the call's works in a folder of its own, emptied before each reuse, so no file
  of an earlier call is there. A process whose reset fails is closed and the next idle one
  (or a new one) taken.
- Then the call's turn (`LiveProcess.turn`). The caller gives the process back only after a
  call that succeeded; any error or a cancellation closes it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from ..core import ProviderError
from ..transport import (
    Frame,
    LiveProcess,
    OnFrame,
    ProcessRequest,
    ProcessResult,
    WarmPool,
    cannot_start,
    empty_folder,
    missing_executable,
    private_tempdir,
    total_timeout,
)
from ._spec import BackendSpec, Invocation

__all__ = ["Launch", "finish", "run_turn"]

_RESET_LIMIT_S = 30.0
_RUN = "\x00run\x00"  # the call's run folder, in a launch's argv and environment


@dataclass(frozen=True, slots=True)
class Launch:
    """What a warm process for a call is started with, apart from the call's own run folder:
    argv and environment with that folder as a placeholder, the files the spec's build wrote
    into it (a system prompt file, a provider config, a preload: pi), the call's `cwd` (None:
    the process works in a folder of its own), and the call's turn (its stdin)."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, bytes], ...]
    cwd: Path | None
    turn: bytes

    @classmethod
    def of(
        cls,
        invocation: Invocation,
        env: Mapping[str, str],
        run_dir: Path,
        call_cwd: Path,
        cwd: Path | None,
    ) -> Launch:
        folder = str(run_dir)
        files = tuple(
            (str(path.relative_to(run_dir)), path.read_bytes())
            for path in sorted(run_dir.rglob("*"))
            if path.is_file() and call_cwd not in path.parents
        )
        return cls(
            argv=tuple(a.replace(folder, _RUN) for a in invocation.argv),
            env=tuple(sorted((k, v.replace(folder, _RUN)) for k, v in env.items())),
            files=files,
            cwd=cwd,
            turn=invocation.stdin or b"",
        )

    def key(self) -> str:
        """What a started process depends on, hashed (no key or token kept in a registry)."""
        digest = hashlib.sha256()
        parts = {"argv": self.argv, "env": self.env, "cwd": str(self.cwd) if self.cwd else None}
        digest.update(json.dumps(parts).encode())
        for name, data in self.files:
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def at(self, run: Path) -> tuple[list[str], dict[str, str]]:
        """argv and environment with the files written into *run*."""
        for name, data in self.files:
            (run / name).parent.mkdir(parents=True, exist_ok=True)
            (run / name).write_bytes(data)
        folder = str(run)
        return [a.replace(_RUN, folder) for a in self.argv], {
            k: v.replace(_RUN, folder) for k, v in self.env
        }


async def run_turn(
    pool: WarmPool[LiveProcess],
    spec: BackendSpec,
    launch: Launch,
    request: ProcessRequest,
    on_frame: OnFrame,
) -> tuple[ProcessResult, LiveProcess | None]:
    """One call's turn on a process of *pool*: an idle one with a fresh conversation, or one
    started with *launch*. Like `run_process`, never raises for expected failures (a CLI that
    cannot start: `result.error`); the process (or None when none started) goes to `finish`
    after the call is judged. A cancelled turn closes its process. The reset counts against
    the request's `total_timeout_s`: the turn gets what is left of it."""
    deadline = request.ends().end  # the call plan's deadline
    live = await _take(pool, spec, request, deadline)
    if live is None and time.monotonic() < deadline:
        try:
            live = await _start(launch, spec)
        except ProviderError as exc:
            return ProcessResult(error=exc), None
        pool.started(live)
    left = deadline - time.monotonic()
    if live is None or left <= 0:  # resets used the budget up (a process taken is fine)
        if live is not None:
            await pool.give(live)
        return ProcessResult(error=total_timeout(request.total_timeout_s)), None
    try:
        return await live.turn(launch.turn, replace(request, total_timeout_s=left), on_frame), live
    except BaseException:
        await live.aclose()  # shielded
        raise


async def finish(pool: WarmPool[LiveProcess], live: LiveProcess, succeeded: bool) -> None:
    """Keep *live* for the next call after a call that succeeded, else close it."""
    if succeeded:
        await pool.give(live)
    else:
        await live.aclose()


async def _start(launch: Launch, spec: BackendSpec) -> LiveProcess:
    """A process of its own: its files in `run/` and, without the call's `cwd`, its working
    folder `work/` of a private folder that lives as long as the process. The spec's
    `WarmTurns.hello` is its first input."""
    assert spec.warm is not None
    argv0 = launch.argv[0]
    home = ExitStack()
    try:
        folder = home.enter_context(private_tempdir(f"agentport-{spec.name}-w-"))
        argv, env = launch.at(folder / "run")
        why = missing_executable(argv0, env)
        if why is not None:
            raise cannot_start(argv0, why)
        work = launch.cwd or folder / "work"
        work.mkdir(exist_ok=True)
        live = await LiveProcess.start(argv, env, work, home, spec.warm.hello)
    except OSError as exc:
        home.close()
        raise cannot_start(argv0, exc) from None
    except BaseException:
        home.close()
        raise
    live.workdir = None if launch.cwd else work
    return live


async def _take(
    pool: WarmPool[LiveProcess], spec: BackendSpec, request: ProcessRequest, deadline: float
) -> LiveProcess | None:
    """An idle process of *pool* with a fresh conversation, or None; each one whose reset
    fails (or is cancelled half-way) is closed."""
    while time.monotonic() < deadline and (live := await pool.take()) is not None:
        if live.workdir is not None:
            empty_folder(live.workdir)
        fresh = False
        try:
            fresh = await _reset(live, spec, request, deadline)
        finally:
            if not fresh:
                await live.aclose()  # shielded
        if fresh:
            return live
    return None


async def _reset(
    live: LiveProcess, spec: BackendSpec, request: ProcessRequest, deadline: float
) -> bool:
    """Start a fresh conversation on *live*, within 30 s and *deadline*: True once the CLI
    confirmed it."""
    warm = spec.warm
    assert warm is not None
    if warm.reset is None:  # every turn opens a conversation of its own
        return live.alive()
    confirmed = False

    async def on_frame(frame: Frame) -> bool:
        nonlocal confirmed
        if not frame.is_json or not isinstance(frame.value, dict):
            return False
        confirmed = confirmed or warm.reset_done(frame.value)
        return warm.reset_end(frame.value)

    limit = max(0.0, min(deadline - time.monotonic(), _RESET_LIMIT_S))
    limits = replace(
        request,
        startup_timeout_s=limit,
        idle_timeout_s=limit,
        total_timeout_s=limit,
    )
    result: ProcessResult = await live.turn(warm.reset, limits, on_frame)
    return result.error is None and result.stopped and confirmed and live.alive()
