"""The guardian: a tiny stdlib-only program that sits between agentport and an agent CLI so the
CLI's process group never outlives the Python process that started it, even on SIGKILL.

Run as `python -I -S _guardian.py FD HOST_PID -- ARGV...` (the runner does this; never import
it). It leads the new process group (`start_new_session`), spawns ARGV in that same group with
default signal dispositions, and then waits for one of:

- the CLI exits: the guardian exits the same way (same code, or killed by the same signal), so
  the runner sees the CLI's own exit status;
- the host dies: FD (the read end of a pipe whose write end only the host holds) reaches EOF,
  or the guardian's parent pid changes (a 1 s backstop, for a write end leaked by a `fork`):
  the guardian SIGKILLs its whole group, then every descendant it can still find (Linux:
  it is a child subreaper, so grandchildren that left the group and lost their parent are
  re-parented to it and found through /proc), and exits.

SIGTERM / SIGINT / SIGHUP do not stop the guardian: the runner signals the whole group, the
CLI gets the signal itself, and the guardian relays the CLI's exit. SIGKILL of the group kills
it with everything else. Source: prctl(2) (PR_SET_CHILD_SUBREAPER).
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # C module: `signal` costs 40 ms
import os
import select
import sys

_EXEC_FAILED = 127
_POLL_S = 1.0
_PR_SET_CHILD_SUBREAPER = 36


def _subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc / no prctl
        pass


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
    """SIGKILL every descendant (repeatedly: one may fork while we look), then the group,
    this process included. Never returns."""
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


def main(argv: list[str]) -> None:
    death_fd, host_pid, cmd = int(argv[1]), int(argv[2]), argv[4:]
    os.set_inheritable(death_fd, False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    if os.getppid() != host_pid:  # the host died before we got here
        _kill_everything()
    restore = [signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    restore.append(signal.SIGCHLD)
    try:
        child = os.posix_spawnp(cmd[0], cmd, os.environ, setsigdef=restore, setsigmask=())
    except OSError as exc:
        sys.stderr.write(f"agentport guardian: cannot start {cmd[0]!r}: {exc.strerror}\n")
        sys.stderr.flush()
        os._exit(_EXEC_FAILED)
    # Become the subreaper only now: loading ctypes for prctl takes a third of the guardian's
    # start-up (6 of 21 ms), and the CLI starts meanwhile. A descendant orphaned in between
    # would have left the CLI's group and lost its parent within the CLI's first milliseconds,
    # before any agent CLI (Node, Python) has loaded its own code, let alone started a tool.
    _subreaper()
    # keep no copy of the CLI's pipes: their EOF must follow the CLI's exit, not ours
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
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
        while True:  # reap the CLI and any adopted orphans
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid, status = 0, 0
            if pid == 0:
                break
            if pid == child:
                _relay(status)


if __name__ == "__main__":
    main(sys.argv)
