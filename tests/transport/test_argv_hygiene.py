"""No caller text becomes a flag: `--yolo`, `-h` and `--version` passed as the
prompt, the system prompt, the model, the tool names and the session id never land in a CLI's
argv as a standalone argument, on every CLI backend. Values travel as `--flag=value`, through
stdin or a file; where a CLI's parser takes the next token as the value whatever it looks like
(pi's hand-written parser, agy's Go-style flags: both checked against their sources), the
separate form is accepted after exactly those flags. And the prompt stays out of argv wherever
the CLI reads stdin (hermes and agy are the documented exceptions: docs/security.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from _fake_clis_util import ALL_TOOLS_ONLY
from agentport.backends import (
    CliCall,
    Invocation,
    agy,
    claude,
    codex,
    copilot,
    gemini,
    gjc,
    goose,
    grok,
    hermes,
    kiro,
    opencode,
    pi,
    qwen,
    zcode,
)
from agentport.core import CompletionConfig, ErrorKind, ProviderError, Sandbox, ToolPolicy

HOSTILE = ("--yolo", "-h", "--version")
MODULES: dict[str, ModuleType] = {
    "agy": agy, "claude": claude, "codex": codex, "copilot": copilot, "gemini": gemini,
    "gjc": gjc, "goose": goose, "grok": grok, "hermes": hermes, "kiro": kiro,
    "opencode": opencode, "pi": pi, "qwen": qwen, "zcode": zcode,
}  # fmt: skip
# flags whose parser consumes the next token as the value unconditionally
GREEDY = {
    "pi": {"--provider", "--model", "--tools", "--system-prompt", "--append-system-prompt"},
    "agy": {"--model", "--conversation", "-p", "--json-schema", "--add-dir", "--print-timeout"},
}
# the prompt is an argument only here (no stdin form that keeps the CLI's contract)
PROMPT_IN_ARGV = {"hermes", "agy", "grok", "zcode"}
# stdin carries a protocol (one JSON command a line), the prompt inside it: none today
STDIN_PROTOCOL: set[str] = set()


def _build(name: str, tmp: Path, text: str, field: str) -> Invocation | ProviderError:
    config = CompletionConfig(
        model=text if field == "model" else None,
        session_id=text if field == "session" else None,
        tools=ToolPolicy(allowed_tools=(text,), sandbox=Sandbox.full)
        if field == "tools"
        else ToolPolicy.cli_defaults()
        if name in ALL_TOOLS_ONLY
        else ToolPolicy(),
    )
    call = CliCall(
        executable=f"/bin/{name}",
        prompt=text if field == "prompt" else "hello",
        system_prompt=text if field == "system" else None,
        config=config,
        schema=None,
        options={},
        run_dir=tmp,
        cwd=tmp,
        session_id=config.session_id,
    )
    try:
        return MODULES[name].build(call)
    except ProviderError as exc:  # a refusal is a pass: nothing was spawned
        return exc


def _standalone(name: str, argv: tuple[str, ...], text: str) -> list[int]:
    """Indexes where *text* stands alone as an argument a parser could read as a flag."""
    cut = argv.index("--") if "--" in argv else len(argv)  # after `--`: positionals only
    hits = []
    for i, arg in enumerate(argv[:cut]):
        if arg == text and not (i > 0 and argv[i - 1] in GREEDY.get(name, set())):
            hits.append(i)
    return hits


@pytest.mark.parametrize("field", ["prompt", "system", "model", "tools", "session"])
@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_caller_text_never_becomes_a_flag(name: str, text: str, field: str, tmp_path: Path) -> None:
    built = _build(name, tmp_path, text, field)
    if isinstance(built, ProviderError):
        refusals = (ErrorKind.unsupported, ErrorKind.invalid_request, ErrorKind.config)
        assert built.kind in refusals, built
        return
    assert _standalone(name, built.argv, text) == [], built.argv


@pytest.mark.parametrize("name", sorted(set(MODULES) - PROMPT_IN_ARGV))
def test_the_prompt_travels_through_stdin(name: str, tmp_path: Path) -> None:
    secret = "private words of the prompt"
    built = _build(name, tmp_path, secret, "prompt")
    assert isinstance(built, Invocation)
    assert not any(secret in arg for arg in built.argv)
    if name in STDIN_PROTOCOL:  # the prompt is a command of the CLI's stdin protocol
        assert built.stdin is not None
        assert json.loads(built.stdin)["message"] == secret
        return
    assert built.stdin == secret.encode()


def test_codex_refuses_a_session_id_that_looks_like_a_flag(tmp_path: Path) -> None:
    built = _build("codex", tmp_path, "--yolo", "session")
    assert isinstance(built, ProviderError)
    assert built.kind is ErrorKind.invalid_request


def test_pi_system_prompt_goes_through_a_file(tmp_path: Path) -> None:
    built = _build("pi", tmp_path, "be terse", "system")
    assert isinstance(built, Invocation)
    path = Path(built.argv[built.argv.index("--append-system-prompt") + 1])
    assert path.read_text() == "be terse"
    assert "be terse" not in built.argv
