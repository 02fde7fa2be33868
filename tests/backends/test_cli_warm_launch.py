"""`_cli_warm.Launch`: what a warm CLI process is started with, apart from the call's own run
folder. The same configuration built in two calls' folders is one pool key; a difference in
argv, environment or a written file is another; a started process gets its own copy of the
files, its argv and environment pointing there. And the warm invocations of claude and pi."""

from __future__ import annotations

from pathlib import Path

from _helpers import cli_call
from agentport.backends import CliCall, Invocation
from agentport.backends._cli_warm import Launch
from agentport.backends.claude import SPEC as CLAUDE
from agentport.backends.pi import SPEC as PI
from agentport.core import ImagePart


def _built(run: Path, prompt_file: str = "be terse") -> tuple[Invocation, dict[str, str]]:
    (run / "work").mkdir(parents=True)
    (run / "work" / "scratch.txt").write_text("the call's own files are not the launch's")
    (run / "agent").mkdir()
    (run / "agent" / "system.md").write_text(prompt_file)
    argv = ("cli", "--mode", "rpc", f"--system={run}/agent/system.md")
    env = {"AGENT_DIR": f"{run}/agent", "HOME": "/home/u"}
    return Invocation(argv, env, b"turn\n"), env


def test_one_configuration_in_two_run_folders_is_one_key(tmp_path: Path) -> None:
    one = Launch.of(*_built(tmp_path / "a"), tmp_path / "a", tmp_path / "a" / "work", None)
    two = Launch.of(*_built(tmp_path / "b"), tmp_path / "b", tmp_path / "b" / "work", None)
    assert one.key() == two.key()
    assert [name for name, _ in one.files] == ["agent/system.md"]
    other = Launch.of(
        *_built(tmp_path / "c", "be verbose"), tmp_path / "c", tmp_path / "c" / "work", None
    )
    assert other.key() != one.key()
    with_cwd = Launch.of(*_built(tmp_path / "d"), tmp_path / "d", tmp_path, tmp_path)
    assert with_cwd.key() != one.key()


def test_a_started_process_gets_its_own_copy_of_the_files(tmp_path: Path) -> None:
    launch = Launch.of(*_built(tmp_path / "a"), tmp_path / "a", tmp_path / "a" / "work", None)
    own = tmp_path / "own" / "run"
    argv, env = launch.at(own)
    assert argv[-1] == f"--system={own}/agent/system.md"
    assert env["AGENT_DIR"] == f"{own}/agent"
    assert (own / "agent" / "system.md").read_text() == "be terse"
    assert not (own / "work").exists()
    assert launch.turn == b"turn\n"


def _call(tmp_path: Path, **kw: object) -> CliCall:
    base = {"executable": "/bin/x", "prompt": "hello", "system_prompt": "sys"}
    return cli_call(tmp_path, **(base | {"cwd": tmp_path / "work"} | kw))


def test_the_warm_invocations_carry_the_turn_on_stdin_and_never_the_prompt_in_argv(
    tmp_path: Path,
) -> None:
    for spec in (CLAUDE, PI):
        assert spec.warm is not None
        invocation = spec.warm.build(_call(tmp_path))
        assert not any("hello" in a for a in invocation.argv), spec.name
        assert b"hello" in (invocation.stdin or b""), spec.name
    pi = PI.warm.build(_call(tmp_path)) if PI.warm else None
    assert pi is not None
    assert "-p" not in pi.argv
    assert pi.argv[pi.argv.index("--mode") + 1] == "rpc"
    claude = CLAUDE.warm.build(_call(tmp_path, session_id="s")) if CLAUDE.warm else None
    assert claude is not None
    assert "--input-format=stream-json" in claude.argv
    assert not any(a.startswith("--resume") for a in claude.argv)


def test_pi_runs_a_call_with_images_cold(tmp_path: Path) -> None:
    png = ImagePart(data=b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    assert PI.warm is not None
    assert PI.warm.fits(_call(tmp_path))
    assert not PI.warm.fits(_call(tmp_path, images=(png,)))
