"""Cassettes: a real CLI run recorded once, replayed as a fake CLI executable in tests.

A `Cassette` holds what a CLI did in one run: the argv it was called with, the bytes it
printed on stdout and stderr, its exit code, the stdin it was given, and the model requests
it made (from `FakeModelServer`, when the run was pointed at one). On disk it is the layout
of agentport's transcript fixtures: `<case>.stdout`, `<case>.stderr`, `<case>.meta.json`
(argv, exit code, version, stdin, and `binary`: the recorded CLI's path, link chain, sha256
and version) and `<case>.requests.jsonl`, so a recorded run and the
fixtures of tests/fixtures/cli load alike.

Record through the adapter, the way a user's code calls the CLI:

```python
recorder = CassetteRecorder(tmp_path / "rec", real_executable="/usr/local/bin/codex")
llm = create_llm_adapter("codex", codex={"executable": str(recorder.executable), ...})
await llm.complete([Message.user("Say hi")])
recorder.cassette(server).save(fixtures, "say-hi")  # server: the FakeModelServer used
```

Replay without the CLI, its account or the network:

```python
exe = Cassette.load(fixtures, "say-hi").install(tmp_path / "bin", "codex")
llm = create_llm_adapter("codex", codex={"executable": str(exe)})
```

The installed executable reads its stdin to EOF, prints the recorded stderr and stdout
(`delay_s` between stdout lines) and exits with the recorded code. Each call is appended
to `<executable>.calls.jsonl` (argv and stdin; `cassette_calls(exe)` reads them) so a test
can compare the argv its code built with the recorded one (`Cassette.flags`); `strict=True`
makes the fake exit 2 at once when the flags differ (a CLI upgrade or an adapter change that
alters the command line).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import BinaryInfo
from ..transport import atomic_write, identify
from ._fake_replies import RecordedRequest
from ._fake_server import FakeModelServer

__all__ = ["Cassette", "CassetteRecorder", "cassette_calls"]


@dataclass(frozen=True)
class Cassette:
    """One recorded CLI run (module docstring).

    Attributes:
        cli: the CLI's name (`codex`, ...).
        argv: the command line as called, program first.
        stdout / stderr: the bytes printed.
        exit_code: the exit status (a negative number: killed by that signal).
        stdin: what the CLI was given on stdin, or None.
        requests: the model requests it made, as `FakeModelServer` recorded them (dicts).
        version: the CLI's version, when known (a recorder fills it from the binary's
            package).
        binary: the executable that answered, as `agentport.core.BinaryInfo` fields (path,
            chain, real_path, sha256, version), when recorded.
    """

    cli: str
    argv: tuple[str, ...]
    stdout: bytes
    stderr: bytes = b""
    exit_code: int = 0
    stdin: str | None = None
    requests: tuple[dict[str, Any], ...] = ()
    version: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    binary: dict[str, Any] | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        """The argv's options (`-x`, `--long`, `--long=` without its value), in order: the
        shape of the command line, whatever the prompt, paths and ids were."""
        return _flags(self.argv[1:])

    @classmethod
    def load(cls, folder: Path | str, case: str) -> Cassette:
        """Read `<folder>/<case>.*`. Raises `FileNotFoundError` naming the missing file and
        `ValueError` naming a malformed one."""
        base = Path(folder) / case
        meta_path = base.with_name(f"{case}.meta.json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{meta_path}: not JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("argv"), list):
            raise ValueError(f"{meta_path}: needs an object with an 'argv' list")
        stdout = base.with_name(f"{case}.stdout").read_bytes()
        err_path = base.with_name(f"{case}.stderr")
        req_path = base.with_name(f"{case}.requests.jsonl")
        requests: list[dict[str, Any]] = []
        if req_path.exists():
            for number, line in enumerate(req_path.read_text("utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        requests.append(json.loads(line))
                    except json.JSONDecodeError:
                        raise ValueError(f"{req_path}:{number}: not JSON") from None
        return cls(
            cli=str(meta.get("cli") or case),
            argv=tuple(str(a) for a in meta["argv"]),
            stdout=stdout,
            stderr=err_path.read_bytes() if err_path.exists() else b"",
            exit_code=int(meta.get("exit_code") or 0),
            stdin=meta.get("stdin"),
            requests=tuple(requests),
            version=meta.get("version"),
            meta=meta,
            binary=meta.get("binary") if isinstance(meta.get("binary"), dict) else None,
        )

    def save(self, folder: Path | str, case: str) -> None:
        """Write `<folder>/<case>.*` (each file atomically; the meta file last, so a
        cassette that loads is complete)."""
        base = Path(folder)
        atomic_write(base / f"{case}.stdout", self.stdout)
        atomic_write(base / f"{case}.stderr", self.stderr)
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.requests)
        atomic_write(base / f"{case}.requests.jsonl", lines.encode("utf-8"))
        meta = {
            **self.meta,
            "cli": self.cli,
            "case": case,
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "stdin": self.stdin,
            "version": self.version,
            "binary": self.binary,
            "model_requests": len(self.requests),
        }
        atomic_write(base / f"{case}.meta.json", json.dumps(meta, indent=2).encode() + b"\n")

    @property
    def command(self) -> tuple[str, ...]:
        """The subcommand words before the first option (`("debug", "models")`, `("exec",)`)."""
        return _command(self.argv[1:])

    def install(
        self,
        bin_dir: Path | str,
        name: str | None = None,
        *,
        strict: bool = False,
        delay_s: float = 0.0,
        others: Sequence[Cassette] = (),
    ) -> Path:
        """Write an executable `<bin_dir>/<name>` (default: the CLI's name) that replays this
        run (module docstring); returns its path. Its calls go to `<path>.calls.jsonl`.

        *others*: auxiliary runs of the same CLI (`codex debug models`, read before a
        restricted run): a call with one of their subcommands (`command`) replays that run
        instead. A run still going when it was torn down (a negative exit code: killed by a
        signal) prints its output, then waits to be killed again."""
        folder = Path(bin_dir)
        folder.mkdir(parents=True, exist_ok=True)
        exe = folder / (name or self.cli)

        def run(cassette: Cassette) -> dict[str, Any]:
            return {
                "command": list(cassette.command),
                "stdout": cassette.stdout.decode("latin-1"),
                "stderr": cassette.stderr.decode("latin-1"),
                "exit_code": cassette.exit_code,
                "flags": list(cassette.flags) if strict else None,
            }

        data = {
            "runs": [run(c) for c in others if c.command] + [run(self)],
            "delay_s": delay_s,
            "calls": str(exe) + ".calls.jsonl",
        }
        atomic_write(exe.with_name(exe.name + ".cassette.json"), json.dumps(data).encode())
        script = f"#!{sys.executable}\n{_REPLAY}"
        atomic_write(exe, script.encode("utf-8"))
        exe.chmod(0o755)
        return exe


def _command(args: Sequence[str]) -> tuple[str, ...]:
    words: list[str] = []
    for arg in args:
        if arg.startswith("-") or "/" in arg or " " in arg:
            break
        words.append(arg)
    return tuple(words)


def _flags(args: Sequence[str]) -> tuple[str, ...]:
    return tuple(a.split("=", 1)[0] for a in args if a.startswith("-") and a not in ("-", "--"))


def cassette_calls(executable: Path | str) -> list[dict[str, Any]]:
    """The calls an installed cassette executable received (argv, stdin), oldest first."""
    path = Path(str(executable) + ".calls.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


# The replaying program: standard library only, so it runs under any interpreter.
_REPLAY = r"""
import json, os, sys, time
data = json.load(open(__file__ + ".cassette.json", encoding="utf-8"))
stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
with open(data["calls"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps({"argv": sys.argv, "stdin": stdin}) + "\n")
words = []
for arg in sys.argv[1:]:
    if arg.startswith("-") or "/" in arg or " " in arg:
        break
    words.append(arg)
runs = data["runs"]
run = next((r for r in runs[:-1] if r["command"] == words), runs[-1])
if run["flags"] is not None:
    args = [a for a in sys.argv[1:] if a.startswith("-") and a not in ("-", "--")]
    got = [a.split("=", 1)[0] for a in args]
    if got != run["flags"]:
        sys.stderr.write("cassette: argv flags %r, recorded %r\n" % (got, run["flags"]))
        sys.exit(2)
sys.stderr.buffer.write(run["stderr"].encode("latin-1"))
sys.stderr.flush()
for line in run["stdout"].encode("latin-1").splitlines(keepends=True):
    sys.stdout.buffer.write(line)
    sys.stdout.flush()
    if data["delay_s"]:
        time.sleep(data["delay_s"])
if run["exit_code"] < 0:  # still running when it was torn down: wait to be killed
    time.sleep(3600)
sys.exit(run["exit_code"])
"""


class CassetteRecorder:
    """Records the real CLI at *real_executable* while it runs for a test: `executable` is a
    program that runs the real one with the same argv, stdin and environment, passes its
    output through unchanged, and keeps a copy. `cassette(server)` returns the last run,
    with the model requests *server* recorded."""

    def __init__(self, folder: Path | str, real_executable: Path | str, cli: str = "") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.real = str(real_executable)
        self.cli = cli or Path(self.real).name
        self.executable = self.folder / self.cli
        config = {"real": self.real, "out": str(self.folder / "runs")}
        atomic_write(self.folder / f"{self.cli}.recorder.json", json.dumps(config).encode())
        atomic_write(self.executable, f"#!{sys.executable}\n{_RECORD}".encode())
        self.executable.chmod(0o755)

    def runs(self, server: FakeModelServer | None = None) -> list[Cassette]:
        """Every recorded run, oldest first (auxiliary ones such as `codex debug models`
        included); the last holds the model requests *server* recorded."""
        requests = tuple(_request(r) for r in server.model_requests) if server else ()
        binary = _binary(self.real)
        folders = sorted((self.folder / "runs").glob("*/meta.json"))
        found = []
        for number, meta_path in enumerate(folders, 1):
            run = meta_path.parent
            meta = json.loads(meta_path.read_text("utf-8"))
            found.append(
                Cassette(
                    cli=self.cli,
                    argv=(self.cli, *meta["argv"][1:]),
                    stdout=(run / "stdout").read_bytes(),
                    stderr=(run / "stderr").read_bytes(),
                    exit_code=int(meta["exit_code"]),
                    stdin=meta["stdin"],
                    requests=requests if number == len(folders) else (),
                    version=None if binary is None else binary.version,
                    binary=None if binary is None else binary.model_dump(mode="json"),
                )
            )
        return found

    def cassette(self, server: FakeModelServer | None = None) -> Cassette:
        """The last recorded run. Raises `FileNotFoundError` when nothing ran."""
        runs = self.runs(server)
        if not runs:
            raise FileNotFoundError(f"{self.folder / 'runs'}: no run was recorded")
        return runs[-1]


def _binary(real: str) -> BinaryInfo | None:
    """The real CLI as it is on disk now (found on PATH like the recorder finds it), or None
    when it cannot be read."""
    try:
        return identify(shutil.which(real) or real)[0]
    except OSError:
        return None


def _request(req: RecordedRequest) -> dict[str, Any]:
    """A recorded model request as the transcript fixtures keep it (headers redacted)."""
    return {
        "seq": req.seq,
        "method": req.method,
        "path": req.path,
        "query": req.query,
        "kind": req.api.value,
        "headers": req.redacted_headers(),
        "model": req.model,
        "stream": req.stream,
        "body": req.body,
    }


# The recording program: the real CLI under it, output passed through and kept.
_RECORD = r"""
import json, os, signal, subprocess, sys, threading
config = json.load(open(os.path.splitext(__file__)[0] + ".recorder.json", encoding="utf-8"))
out = os.path.join(config["out"], "%017.6f-%d" % (__import__("time").time(), os.getpid()))
os.makedirs(out, exist_ok=True)
stdin = b"" if sys.stdin is None else sys.stdin.buffer.read()
child = subprocess.Popen([config["real"], *sys.argv[1:]], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda s, f: child.send_signal(s))
def pump(src, dst, path):
    with open(path, "wb") as keep:
        for chunk in iter(lambda: src.read1(65536), b""):
            keep.write(chunk)
            dst.write(chunk)
            dst.flush()
threads = [
    threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, out + "/stdout")),
    threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer, out + "/stderr")),
]
for t in threads:
    t.start()
try:
    child.stdin.write(stdin)
    child.stdin.close()
except BrokenPipeError:
    pass
code = child.wait()
for t in threads:
    t.join()
with open(out + "/meta.json", "w", encoding="utf-8") as fh:
    json.dump({"argv": sys.argv, "exit_code": code,
               "stdin": stdin.decode("utf-8", "replace") if stdin else None}, fh)
sys.exit(code if code >= 0 else 128 - code)
"""
