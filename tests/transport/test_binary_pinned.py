"""The CLI binary a batch runs is pinned per process: replaced bytes or a retargeted link
between two calls is `binary_changed`, a `touch` is re-verified, and every answer names the
binary that gave it. Driven through the factory with real executable scripts on disk."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from _runner_util import FIXTURES
from agentport import create_llm_adapter
from agentport.core import ErrorKind, Message
from agentport.transport._binary import forget_binaries, link_chain

pytestmark = pytest.mark.anyio

FAKE_CLI = FIXTURES / "fake_cli.py"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    forget_binaries()
    yield
    forget_binaries()


def _script(path: Path, build: str) -> Path:
    """A real executable: a shell script running the fake CLI (*build* varies its bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(f'#!/bin/sh\n# build {build}\nexec "{sys.executable}" "{FAKE_CLI}" "$@"\n')
    tmp.chmod(0o755)
    os.replace(tmp, path)  # what a package manager's upgrade does: a new file, renamed in
    return path


def _package(folder: Path, version: str) -> None:
    (folder / "package.json").write_text(json.dumps({"name": "fake-cli", "version": version}))


def _llm(tmp: Path, exe: Path, **options: Any) -> Any:
    env = {
        "FAKE_CLI_STDOUT": str(FIXTURES / "claude" / "ok-stream-json.stdout"),
        "FAKE_CLI_STDIN": "read",
    }
    settings = {"executable": str(exe), "env": env, "grace_s": 1.0, **options}
    return create_llm_adapter("claude", retry=False, claude=settings)


async def _ask(llm: Any) -> Any:
    return await llm.complete([Message.user("Say hi")])


async def test_each_answer_names_the_binary_path_hash_and_version(tmp_path: Path) -> None:
    pkg = tmp_path / "lib" / "fake-cli"
    real = _script(pkg / "bin" / "cli", "1")
    _package(pkg, "1.2.3")
    link = tmp_path / "bin" / "claude"
    link.parent.mkdir()
    link.symlink_to(Path("..") / real.relative_to(tmp_path))
    llm = _llm(tmp_path, link)
    for _ in range(3):
        result = await _ask(llm)
        assert isinstance(result, Success), result
        binary = result.unwrap().binary
        assert binary is not None
        assert binary.path == str(link)
        assert binary.chain == (str(link), str(real))
        assert binary.real_path == str(real)
        assert binary.sha256 == hashlib.sha256(real.read_bytes()).hexdigest()
        assert binary.version == "1.2.3"


async def test_replaced_bytes_between_calls_is_binary_changed(tmp_path: Path) -> None:
    exe = _script(tmp_path / "bin" / "claude", "1")
    llm = _llm(tmp_path, exe)
    assert isinstance(await _ask(llm), Success)
    assert isinstance(await _ask(llm), Success)
    _script(exe, "2")  # upgraded under the running batch
    for _ in range(2):  # and it stays refused: no silent switch on the next call either
        result = await _ask(llm)
        assert isinstance(result, Failure), result
        error = result.failure()
        assert error.kind is ErrorKind.binary_changed
        assert not error.retryable
        assert error.request_sent is False
        assert error.details["before"]["sha256"] != error.details["after"]["sha256"]
        assert "other bytes" in error.message


async def test_a_retargeted_symlink_is_binary_changed(tmp_path: Path) -> None:
    one = _script(tmp_path / "v1" / "cli", "1")
    two = _script(tmp_path / "v2" / "cli", "2")
    link = tmp_path / "bin" / "claude"
    link.parent.mkdir()
    link.symlink_to(one)
    llm = _llm(tmp_path, link)
    assert isinstance(await _ask(llm), Success)
    tmp_link = link.with_name("claude.new")
    tmp_link.symlink_to(two)
    os.replace(tmp_link, link)  # `ln -sfn`: the link now points at another build
    result = await _ask(llm)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert error.kind is ErrorKind.binary_changed
    assert error.details["after"]["real_path"] == str(two)
    assert "another file" in error.message


async def test_a_touch_with_the_same_bytes_is_reverified_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    exe = _script(tmp_path / "bin" / "claude", "1")
    llm = _llm(tmp_path, exe)
    first = await _ask(llm)
    assert isinstance(first, Success)
    stamp = os.stat(exe)
    os.utime(exe, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 5_000_000_000))
    _script(exe, "1")  # the same bytes, reinstalled: a new inode too
    again = await _ask(llm)
    assert isinstance(again, Success), again
    assert again.unwrap().binary == first.unwrap().binary


async def test_reverify_opt_in_accepts_the_new_binary_and_names_it(tmp_path: Path) -> None:
    exe = _script(tmp_path / "bin" / "claude", "1")
    llm = _llm(tmp_path, exe, on_binary_change="reverify")
    first = await _ask(llm)
    _script(exe, "2")
    second = await _ask(llm)
    assert isinstance(first, Success)
    assert isinstance(second, Success), second
    before, after = first.unwrap().binary, second.unwrap().binary
    assert before is not None
    assert after is not None
    assert after.sha256 == hashlib.sha256(exe.read_bytes()).hexdigest() != before.sha256


async def test_a_bad_on_binary_change_is_a_config_error_naming_the_option(
    tmp_path: Path,
) -> None:
    exe = _script(tmp_path / "bin" / "claude", "1")
    result = await _ask(_llm(tmp_path, exe, on_binary_change="ignore"))
    assert isinstance(result, Failure)
    assert result.failure().kind is ErrorKind.config
    assert "[llm.claude] on_binary_change" in result.failure().message


async def test_a_failed_call_names_the_binary_too(tmp_path: Path) -> None:
    exe = _script(tmp_path / "bin" / "claude", "1")
    env = {"FAKE_CLI_STDOUT": str(FIXTURES / "claude" / "http401.stdout"), "FAKE_CLI_EXIT": "1"}
    llm = create_llm_adapter("claude", retry=False, claude={"executable": str(exe), "env": env})
    result = await _ask(llm)
    assert isinstance(result, Failure)
    assert result.failure().details["binary"]["real_path"] == str(exe)


def test_link_chain_refuses_a_loop_and_a_dangling_link(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError, match="symbolic links"):
        link_chain(tmp_path / "a")
    (tmp_path / "c").symlink_to(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        link_chain(tmp_path / "c")


async def test_a_launcher_with_the_same_bytes_in_an_upgraded_package_is_binary_changed(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "lib" / "fake-cli"
    exe = _script(pkg / "bin" / "claude", "launcher")
    _package(pkg, "1.0.0")
    llm = _llm(tmp_path, exe)
    assert isinstance(await _ask(llm), Success)
    _package(pkg, "1.1.0")  # npm replaced the package: the launcher's bytes did not change
    _script(exe, "launcher")
    result = await _ask(llm)
    assert isinstance(result, Failure), result
    assert result.failure().kind is ErrorKind.binary_changed
    assert "another package version" in result.failure().message
    assert result.failure().details["after"]["version"] == "1.1.0"
