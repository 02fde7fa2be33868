"""The subprocess runner against a fake CLI: timeouts, teardown, stdin, stderr, big lines."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from _runner_util import fake_argv, fake_env
from agentport.core import ErrorKind
from agentport.transport import (
    DEPTH_ENV,
    Frame,
    ProcessRequest,
    child_env,
    group_members,
    run_process,
)

pytestmark = pytest.mark.anyio


class Collect:
    def __init__(self, stop_on: str | None = None) -> None:
        self.frames: list[Frame] = []
        self.stop_on = stop_on

    async def __call__(self, frame: Frame) -> bool:
        self.frames.append(frame)
        return bool(self.stop_on and frame.is_json and frame.value.get("type") == self.stop_on)

    @property
    def values(self) -> list[object]:
        return [f.value for f in self.frames if f.is_json]


@pytest.fixture(params=[False, True], ids=["pipe", "file"])
def to_file(request: pytest.FixtureRequest) -> bool:
    """stdout through a pipe, or through a followed file (`stdout_to_file`)."""
    return bool(request.param)


def _lines(tmp: Path, *objs: object, raw: str = "") -> str:
    path = tmp / "out.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs) + raw)
    return str(path)


async def test_exit_code_stderr_tail_and_noise_are_reported(tmp_path: Path, to_file: bool) -> None:
    err = tmp_path / "err.txt"
    err.write_text("boom\n")
    out = _lines(tmp_path, {"type": "a"}, raw="not json\n")
    env = fake_env(stdout=out, stderr=str(err), exit="3")
    collect = Collect()
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, stdout_to_file=to_file), collect
    )
    assert result.error is None
    assert result.exit_code == 3
    assert result.stderr_tail == "boom\n"
    assert collect.values == [{"type": "a"}]
    assert result.noise == ("not json",)
    assert result.noise_count == 1


async def test_stdin_is_closed_so_a_stdin_reader_does_not_hang(tmp_path: Path) -> None:
    # codex reads stdin whenever it is not a TTY (cli-contracts.md, "Close stdin")
    env = fake_env(stdin="read", stdout=_lines(tmp_path, {"ok": 1}))
    result = await run_process(ProcessRequest(fake_argv(), env=env, total_timeout_s=10), Collect())
    assert result.error is None
    assert result.exit_code == 0


async def test_prompt_fed_through_stdin_arrives_whole(tmp_path: Path) -> None:
    record = tmp_path / "rec.json"
    prompt = "x" * 300_000  # larger than a pipe buffer
    env = fake_env(stdin="read", record=str(record))
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, stdin=prompt.encode()), Collect()
    )
    assert result.exit_code == 0
    assert json.loads(record.read_text())["stdin"] == prompt


@pytest.mark.parametrize(
    ("which", "knobs"),
    [
        ("startup", {"startup_timeout_s": 0.5}),
        ("idle", {"idle_timeout_s": 0.5}),
        ("total", {"total_timeout_s": 0.8}),
    ],
)
async def test_each_timeout_is_reported_and_kills_the_whole_group(
    tmp_path: Path, which: str, knobs: dict[str, float], to_file: bool
) -> None:
    out = _lines(tmp_path, {"type": "init"}) if which != "startup" else ""
    env = fake_env(child="1", hang="1", delay="0.1" if which == "total" else "", stdout=out)
    if which == "total":
        out = _lines(tmp_path, *({"n": i} for i in range(100)))
        env = fake_env(child="1", delay="0.05", stdout=out, hang="1")
    started = time.monotonic()
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, grace_s=1.0, stdout_to_file=to_file, **knobs),
        Collect(),
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.timeout
    assert result.error.timeout == which
    assert time.monotonic() - started < 5
    assert result.pid is not None
    assert group_members(result.pid) == []


async def test_lingering_process_after_terminal_event_is_stopped(tmp_path: Path) -> None:
    # codex#41984: a final event, then the process never exits
    env = fake_env(stdout=_lines(tmp_path, {"type": "turn.failed"}), hang="1", child="1")
    collect = Collect(stop_on="turn.failed")
    started = time.monotonic()
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, linger_s=0.2, grace_s=1.0), collect
    )
    assert result.stopped
    assert result.error is None
    assert time.monotonic() - started < 4
    assert result.pid is not None
    assert group_members(result.pid) == []


async def test_grandchild_left_behind_after_a_normal_exit_is_killed(
    tmp_path: Path, to_file: bool
) -> None:
    # the grandchild keeps the stdout pipe open: the leader's exit must end the reading
    env = fake_env(stdout=_lines(tmp_path, {"ok": 1}), child="1")
    collect = Collect()
    request = ProcessRequest(fake_argv(), env=env, grace_s=1.0, stdout_to_file=to_file)
    started = time.monotonic()
    result = await run_process(request, collect)
    assert time.monotonic() - started < 4
    assert result.exit_code == 0
    assert collect.values == [{"ok": 1}]
    assert result.pid is not None
    assert group_members(result.pid) == []


async def test_missing_executable_is_not_installed_within_milliseconds() -> None:
    started = time.monotonic()
    result = await run_process(ProcessRequest(["agentport-no-such-cli"]), Collect())
    assert result.error is not None
    assert result.error.kind is ErrorKind.not_installed
    assert time.monotonic() - started < 1


async def test_over_long_argv_is_refused_before_spawning() -> None:
    result = await run_process(ProcessRequest(["echo", "p" * 200_000]), Collect())
    assert result.error is not None
    assert result.error.kind is ErrorKind.invalid_request
    assert result.pid is None


async def test_twenty_megabyte_line_parses_with_the_default_limit(
    tmp_path: Path, to_file: bool
) -> None:
    text = "z" * (20 * 1024 * 1024)
    env = fake_env(stdout=_lines(tmp_path, {"type": "big", "text": text}))
    collect = Collect()
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, stdout_to_file=to_file), collect
    )
    assert result.error is None
    assert collect.values[0] == {"type": "big", "text": text}


async def test_line_over_the_limit_is_bad_output_and_the_process_is_reaped(
    tmp_path: Path,
) -> None:
    env = fake_env(stdout=_lines(tmp_path, {"text": "q" * 5000}), hang="1")
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, max_line_bytes=1000, grace_s=1.0), Collect()
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.bad_output
    assert result.pid is not None
    assert group_members(result.pid) == []


async def test_stderr_flood_does_not_block_stdout(tmp_path: Path) -> None:
    err = tmp_path / "err.txt"
    err.write_bytes(b"e" * (2 * 1024 * 1024))  # far beyond a 64 KiB pipe
    env = fake_env(stderr=str(err), stdout=_lines(tmp_path, {"ok": 1}))
    result = await run_process(
        ProcessRequest(fake_argv(), env=env, total_timeout_s=10, stderr_tail_bytes=100), Collect()
    )
    assert result.error is None
    assert result.exit_code == 0
    assert 100 <= len(result.stderr_tail) <= 100 + 256 * 1024


async def test_default_cwd_is_a_fresh_empty_temporary_directory(tmp_path: Path) -> None:
    record = tmp_path / "rec.json"
    argv = [sys.executable, "-c", "import os,json;print(json.dumps(os.listdir('.')))"]
    collect = Collect()
    await run_process(ProcessRequest(argv), collect)
    assert collect.values == [[]]
    assert not record.exists()


def test_child_env_strips_nesting_markers_and_counts_depth() -> None:
    env = child_env({"CLAUDECODE": "1", "CODEX_THREAD_ID": "t", "PATH": "/bin"})
    assert "CLAUDECODE" not in env
    assert "CODEX_THREAD_ID" not in env
    assert env[DEPTH_ENV] == "1"
    assert env["PATH"] == "/bin"
    assert child_env(env)[DEPTH_ENV] == "2"


def test_child_env_refuses_runaway_recursion() -> None:
    from agentport.core import ProviderError

    with pytest.raises(ProviderError) as info:
        child_env({DEPTH_ENV: "3"})
    assert info.value.kind is ErrorKind.config
