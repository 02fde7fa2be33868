"""The guardian: a tiny stdlib-only program that sits between agentport and the agent CLIs so
a CLI's process group never outlives the Python process that started it, even on SIGKILL.
Never import it; the host runs it in one of two modes.

`python -I -S _guardian.py --serve SOCK HOST_PID` (one per host process, `_spawner.py`): it
starts every CLI the host asks for, each in a session of its own (pid = pgid), and reports
its pid and exit status. A request on the stream socket SOCK is an 8-byte big-endian length
carrying the descriptors (SCM_RIGHTS: a status pipe's write end, then stdin (optional),
stdout, stderr), followed by that many bytes of JSON `{"argv", "env", "cwd", "stdin",
"grace"}`. On the status pipe it writes `pid N` (or `err ERRNO` when the exec failed), later
`exit STATUS` (a raw wait status), and closes it.

Each call gets a *call reaper* of its own: a `fork` of the guardian that is a child subreaper
(Linux), spawns the CLI and waits for it. Every process the CLI starts, including those that
leave its group (`setsid`, a daemon's double fork, a detached Node child), stays below the
reaper: an orphan is re-parented to it, not to init. When the CLI exits, the reaper SIGTERMs
every process still below it, SIGKILLs what is left after `grace` seconds, and only then
writes `exit STATUS`: a call that has ended has left nothing running, on every path (the
runner's timeout and cancel end the CLI's group, and so the CLI).

`python -I -S _guardian.py FD HOST_PID -- ARGV...` (one per long-lived process started
outside the runner, `guard_argv`): it leads the new process group (`start_new_session`),
spawns ARGV in that group and exits the way ARGV exits (same code, or killed by the same
signal), so the parent sees the CLI's own exit status.

Either way it watches the host: FD (the read end of a pipe whose write end only the host
holds) or SOCK reaching EOF, or its parent pid changing (a 1 s backstop, for a descriptor
leaked by a `fork`), means the host is gone: it SIGKILLs every descendant it can find (Linux:
/proc; the call reapers and the guardian are child subreapers, so grandchildren that left
their group and lost their parent stay below it), and exits. In the one-process mode the
guardian, a subreaper too, ends every descendant the same way when ARGV exits, before it
relays the exit.

SIGTERM / SIGINT / SIGHUP do not stop the guardian: the runner signals the CLI's group, the CLI
gets the signal itself, and the guardian relays its exit. Sources: prctl(2)
(PR_SET_CHILD_SUBREAPER), unix(7) (SCM_RIGHTS).
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # C module: `signal` costs 40 ms
import os
import select
import sys
from typing import Any

_EXEC_FAILED = 127
_POLL_S = 1.0
_PR_SET_CHILD_SUBREAPER = 36


_GRACE_S = 3.0
_KILL_WAIT_S = 2.0  # after SIGKILL: a process in uninterruptible sleep is left, not waited on


def _subreaper() -> None:
    """Become a child subreaper: an orphan below this process is re-parented to it (prctl(2);
    not inherited across fork, so each call reaper sets it again)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        if not _PRCTL:  # loaded once: a call reaper, a fork, finds it loaded
            import ctypes

            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        _PRCTL[0](_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc / no prctl
        pass


_PRCTL: list[Any] = []


def _descendants(root: int) -> list[int]:
    """Pids below *root* (Linux /proc; elsewhere none)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2 :].split()
        if len(rest) > 1:
            children.setdefault(int(rest[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _kill_everything() -> None:
    """SIGKILL every descendant (repeatedly: one may fork while we look), then the guardian's
    own group (its call reapers), this process included. Never returns."""
    me = os.getpid()
    for _ in range(5):
        rest = _descendants(me)
        for pid in rest:
            try:  # noqa: SIM105 - no contextlib: the guardian imports as little as it can
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not rest:
            break
        while True:  # reap what we adopted so the next scan does not count zombies
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
    os.killpg(0, signal.SIGKILL)
    os._exit(137)  # pragma: no cover - killpg(0) killed us


def _end_descendants(wake_r: int, grace: float) -> None:
    """SIGTERM every process below this one, SIGKILL what is left after *grace* seconds, and
    return once none is left (all reaped), or `_KILL_WAIT_S` after the SIGKILL.

    Once a subreaper has no child it has no descendant: a living descendant's chain of
    parents ends at a child of ours, since every orphan below us is re-parented to us."""
    import time  # built in: costs nothing

    me = os.getpid()
    late = time.monotonic() + grace
    termed: set[int] = set()
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        now = time.monotonic()
        if now > late + _KILL_WAIT_S:
            return  # pragma: no cover - unkillable (D state); the host's own kill remains
        for pid in _descendants(me):
            if now >= late or pid not in termed:
                try:  # noqa: SIM105
                    os.kill(pid, signal.SIGKILL if now >= late else signal.SIGTERM)
                except OSError:
                    pass
                termed.add(pid)
        try:
            ready, _, _ = select.select([wake_r], [], [], 0.02)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            ready = []
        if ready:
            os.read(wake_r, 512)


def _grace(req: Any) -> float:
    value = req.get("grace", _GRACE_S)
    if not isinstance(value, int | float) or not 0 <= value <= 60:
        return _GRACE_S
    return float(value)


def _relay(status: int) -> None:
    """Exit exactly as the CLI did."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:  # noqa: SIM105
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal whose default action is not to terminate
    os._exit(os.waitstatus_to_exitcode(status))


_RESTORE = ("SIGPIPE", "SIGXFSZ", "SIGTERM", "SIGINT", "SIGHUP", "SIGCHLD")


def _prepare(watched: int, host_pid: int) -> tuple[int, int]:
    """Ignore the polite signals, route SIGCHLD to a pipe; return that pipe's two ends."""
    os.set_inheritable(watched, False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    wake = _wake_pipe()
    if os.getppid() != host_pid:  # the host died before we got here
        _kill_everything()
    return wake


def _wake_pipe() -> tuple[int, int]:
    """A pipe SIGCHLD writes to (`set_wakeup_fd`): (read end, write end)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    return wake_r, wake_w


def _reaped() -> Any:
    """(pid, wait status) of each child that has ended (the CLIs and any adopted orphans)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _null_stdio() -> None:
    # keep no copy of the host's or a CLI's pipes: their EOF must follow the CLI's exit
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _exec_child(req: Any, stdio: list[int], failed: int) -> None:
    """In the forked child: a session of its own, the request's cwd and stdio, default signal
    dispositions, then exec; on failure the errno goes to *failed*. Never returns."""
    try:
        os.setsid()
        os.chdir(req["cwd"])
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        for name in _RESTORE:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.execvpe(req["argv"][0], req["argv"], req["env"])
    except OSError as exc:
        os.write(failed, str(exc.errno or 0).encode())
    finally:
        os._exit(_EXEC_FAILED)


def _close(fds: Any) -> None:
    for fd in fds:
        try:  # noqa: SIM105
            os.close(fd)
        except OSError:
            pass


def _tell(fd: int, line: bytes) -> None:
    try:  # noqa: SIM105 - the host may have stopped listening
        os.write(fd, line)
    except OSError:
        pass


def _start(req: Any, status: int, stdio: list[int], children: dict[int, int]) -> None:
    """Start one request; its pid (or the errno of its chdir or exec) goes to *status*.

    `posix_spawnp` runs no Python code in the child (glibc: a vfork-like clone), which makes a
    start ~0.2 ms against ~2.7 ms for `fork` + `_exec_child`. It has no cwd action before
    Python 3.13 and looks PATH up in the caller's environment, so the call reaper (one thread,
    no use for either) takes the request's cwd and PATH for the spawn, then leaves the cwd for
    `/` (never pinning a user's folder). `fork` remains for platforms without
    `POSIX_SPAWN_SETSID`."""
    try:
        os.chdir(req["cwd"])
        path = req["env"].get("PATH")
        if path is None:  # as `execvpe` without PATH: the default search path
            os.unsetenv("PATH")
        else:
            os.putenv("PATH", path)
        pid = os.posix_spawnp(
            req["argv"][0], req["argv"], req["env"],
            file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(stdio)],
            setsid=True, setsigdef=[getattr(signal, name) for name in _RESTORE], setsigmask=(),
        )  # fmt: skip
    except NotImplementedError:  # no POSIX_SPAWN_SETSID here
        _fork_start(req, status, stdio, children)
        return
    except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        # not an OSError: a field of a kind the host never sends (EINVAL)
        _tell(status, b"err %d\n" % ((exc.errno or 0) if isinstance(exc, OSError) else 22))
        _close([status])
    else:
        _tell(status, b"pid %d\n" % pid)
        children[pid] = status
    finally:
        _leave_cwd()
    _close(stdio)


def _leave_cwd() -> None:
    try:  # noqa: SIM105
        os.chdir("/")
    except OSError:  # pragma: no cover - / always exists
        pass


def _fork_start(req: Any, status: int, stdio: list[int], children: dict[int, int]) -> None:
    """`_start` by `fork` and `_exec_child`."""
    failed: list[int] = []
    try:
        failed = list(os.pipe())
        pid = os.fork()
    except OSError as exc:
        _close([*failed, *stdio])
        _tell(status, b"err %d\n" % (exc.errno or 0))
        _close([status])
        return
    failed_r, failed_w = failed
    if pid == 0:  # pragma: no cover - the child execs
        _exec_child(req, stdio, failed_w)
    _close([failed_w, *stdio])
    errno = os.read(failed_r, 32)  # EOF: the exec succeeded (close-on-exec)
    os.close(failed_r)
    if errno:
        os.waitpid(pid, 0)
        _tell(status, b"err " + errno + b"\n")
        _close([status])
    else:
        _tell(status, b"pid %d\n" % pid)
        children[pid] = status


def _start_call(req: Any, status: int, stdio: list[int], closing: list[int]) -> None:
    """Fork the request's call reaper (`_call`); the guardian keeps none of its descriptors.
    *closing*: the guardian's own descriptors, which the reaper closes."""
    try:
        pid = os.fork()
    except OSError as exc:
        _tell(status, b"err %d\n" % (exc.errno or 0))
    else:
        if pid == 0:  # pragma: no cover - runs in the reaper, which exits
            _call(req, status, stdio, closing)
    _close([status, *stdio])


def _call(req: Any, status: int, stdio: list[int], closing: list[int]) -> None:
    """One call's reaper (in a child of the serving guardian): a subreaper that starts the CLI
    (`_start`), waits for it, ends every process still below itself, then reports the exit.
    Never returns.

    It ignores SIGTERM / SIGINT / SIGHUP (inherited) and stays in the guardian's group: the
    runner's signals reach the CLI's group only. If the guardian dies first, the call still
    runs to its end and reports it."""
    try:
        wake_r, _ = _wake_pipe()
        _close(closing)
        _subreaper()
        children: dict[int, int] = {}
        _start(req, status, stdio, children)
        while children:
            try:
                ready, _, _ = select.select([wake_r], [], [], _POLL_S)
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                ready = []
            if ready:
                os.read(wake_r, 512)
            for pid, code in _reaped():  # the CLI, or an orphan adopted and ended
                if children.pop(pid, None) is not None:
                    _end_descendants(wake_r, _grace(req))
                    _tell(status, b"exit %d\n" % code)
    finally:
        os._exit(0)


def _receive(sock: Any) -> Any:
    """The next request: (its JSON bytes, its descriptors), or None at EOF (the host is gone)."""
    import _socket  # C module: `socket` costs enum's import
    import array

    size = 4 * 8
    head, anc, _, _ = sock.recvmsg(8, _socket.CMSG_SPACE(size))
    fds: list[int] = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.extend(array.array("i", data[: len(data) - len(data) % 4]))
    for fd in fds:
        os.set_inheritable(fd, False)
    if len(head) < 8:
        for fd in fds:
            os.close(fd)
        return None
    want = int.from_bytes(head, "big")
    body = bytearray()
    while len(body) < want:
        chunk = sock.recv(min(want - len(body), 1 << 20))
        if not chunk:
            return None
        body += chunk
    return body, fds


def serve(sock_fd: int, host_pid: int) -> None:
    import _socket
    import json

    wake_r, wake_w = _prepare(sock_fd, host_pid)
    sock = _socket.socket(fileno=sock_fd)
    _subreaper()
    _null_stdio()
    while True:
        try:
            ready, _, _ = select.select([sock_fd, wake_r], [], [], _POLL_S)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            ready = []
        if sock_fd in ready:
            got = _receive(sock)
            if got is None:
                _kill_everything()
            body, fds = got
            stdio: list[int] = []
            try:
                req = json.loads(body)
                stdio = fds[1:] if req["stdin"] else [os.open(os.devnull, os.O_RDONLY), *fds[1:]]
                ok = len(stdio) == 3 and isinstance(req["argv"], list) and req["argv"]
            except (OSError, ValueError, KeyError, TypeError):
                ok = False
            if ok:
                _start_call(req, fds[0], stdio, [sock_fd, wake_r, wake_w])
            else:  # not a request the host sends: drop it, keep serving the others
                _close(set(fds) | set(stdio))
        if wake_r in ready:
            os.read(wake_r, 512)
        if os.getppid() != host_pid:
            _kill_everything()
        for _ in _reaped():  # call reapers, and the orphans of one that was killed
            pass


def main(argv: list[str]) -> None:
    if argv[1] == "--serve":
        serve(int(argv[2]), int(argv[3]))
        return
    death_fd, host_pid, cmd = int(argv[1]), int(argv[2]), argv[4:]
    wake_r, _ = _prepare(death_fd, host_pid)
    # A subreaper before the spawn: an orphan of ARGV's first milliseconds (a shell script's
    # `setsid cmd &` exits at once) must already find this process above it. ctypes costs
    # about 6 ms here; the only user, the embedded model's worker, takes seconds to load.
    _subreaper()
    restore = [getattr(signal, name) for name in _RESTORE]
    try:
        child = os.posix_spawnp(cmd[0], cmd, os.environ, setsigdef=restore, setsigmask=())
    except OSError as exc:
        sys.stderr.write(f"agentport guardian: cannot start {cmd[0]!r}: {exc.strerror}\n")
        sys.stderr.flush()
        os._exit(_EXEC_FAILED)
    _null_stdio()
    while True:
        try:
            ready, _, _ = select.select([death_fd, wake_r], [], [], _POLL_S)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            ready = []
        if death_fd in ready and not os.read(death_fd, 1):
            _kill_everything()
        if wake_r in ready:
            os.read(wake_r, 512)
        if os.getppid() != host_pid:
            _kill_everything()
        for pid, status in _reaped():
            if pid == child:
                _end_descendants(wake_r, _GRACE_S)
                _relay(status)


if __name__ == "__main__":
    main(sys.argv)
