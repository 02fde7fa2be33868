"""Text every backend can carry.

A NUL character in a command-line argument is a one-line `invalid_request` naming the
argument (execve(2) takes C strings), on every backend that puts caller text in argv.

Text with a surrogate code point (half of a character: `json.loads('"\\ud83d"')`, a cut
emoji in a model's or a page's JSON) reaches every backend as UTF-8: `Message` makes it
UTF-8-safe at construction (`agentport.core._parts.utf8_text`: a pair written as two code
points becomes its character, a lone one U+FFFD). Before, every CLI backend and
openai_compat raised `UnicodeEncodeError` out of `complete()` instead of returning a Result.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Success

from agentport import Message, create_llm_adapter
from agentport.core import CompletionConfig, ErrorKind, FilePart, ToolPolicy
from agentport.core._parts import utf8_text
from agentport.testing import FakeModelServer
from agentport.transport import check_argv

CLI_BACKENDS = (
    "agy", "claude", "codex", "copilot", "gemini", "gjc", "goose", "grok", "hermes", "kiro",
    "opencode", "pi", "qwen", "zcode",
)  # fmt: skip
PROMPT = "half \ud83d, lone \udcff, a pair written out \ud83d\ude00"
SENT = "half \ufffd, lone \ufffd, a pair written out \U0001f600"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell fakes"),
]


def _surrogate(c: str) -> bool:
    return 0xD800 <= ord(c) <= 0xDFFF


@given(st.text(alphabet=st.characters(codec=None, categories=None)))
def test_utf8_text_always_encodes_and_leaves_clean_text_alone(text: str) -> None:
    out = utf8_text(text)
    out.encode("utf-8")  # never raises
    if not any(map(_surrogate, text)):
        assert out is text


@given(
    st.lists(
        st.one_of(
            st.characters(codec="utf-8"),  # no surrogates
            st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        )
    )
)
def test_each_lone_surrogate_becomes_one_replacement_character(chars: list[str]) -> None:
    text = "".join(chars)
    pairs = any(
        0xD800 <= ord(a) <= 0xDBFF and 0xDC00 <= ord(b) <= 0xDFFF
        for a, b in itertools.pairwise(text)
    )
    assume(not pairs)  # pairs: the next property
    assert utf8_text(text) == "".join("\ufffd" if _surrogate(c) else c for c in text)


@given(st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF))
def test_a_pair_written_as_two_code_points_is_its_character(char: str) -> None:
    high, low = char.encode("utf-16-le")[:2], char.encode("utf-16-le")[2:]
    pair = high.decode("utf-16-le", "surrogatepass") + low.decode("utf-16-le", "surrogatepass")
    assert utf8_text(f"a{pair}b") == f"a{char}b"
    assert utf8_text(pair[0]) == "\ufffd"  # one half alone
    assert utf8_text(pair[1] + pair[0]) == "\ufffd\ufffd"  # halves in the wrong order


def test_messages_and_files_are_utf8_safe_at_construction() -> None:
    assert Message.user(PROMPT).content == SENT
    assert Message.system(PROMPT).content == SENT
    part = FilePart.from_text("n\udcffame.txt", PROMPT)
    assert (part.name, part.text) == ("n\ufffdame.txt", SENT)
    assert Message(role="user", content="plain").content == "plain"


@pytest.mark.parametrize("backend", CLI_BACKENDS)
async def test_every_cli_backend_sends_the_mended_text(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    record = tmp_path / "received"
    exe = tmp_path / backend
    # argv, then stdin up to the line with the prompt (a protocol's stdin stays open)
    exe.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > "{record}"\n'
        f'while IFS= read -r line || [ -n "$line" ]; do\n'
        f'  printf "%s\\n" "$line" >> "{record}"\n'
        f'  case "$line" in *half*) break ;; esac\n'
        f"done\n"
    )
    exe.chmod(0o755)
    llm = create_llm_adapter(backend, retry=False, **{backend: {"executable": str(exe)}})
    config = CompletionConfig(tools=ToolPolicy.cli_defaults())  # every CLI can take it
    result = await llm.complete([Message.user(PROMPT)], config)  # the fake prints nothing
    assert record.exists(), result  # ASYNC240: a test's own tmp file
    received = record.read_bytes().decode("utf-8")  # strict: only UTF-8 was sent
    as_json = json.dumps(SENT)[1:-1]  # where the prompt travels inside a JSON line
    assert SENT in received or as_json in received


async def test_openai_compat_sends_the_mended_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer(default="hi") as server:
        options = {"base_url": server.openai_base_url, "api_key": "k", "model": "m"}
        llm = create_llm_adapter("openai_compat", retry=False, openai_compat=options)
        result = await llm.complete([Message.user(PROMPT)])
        assert isinstance(result, Success)
        assert server.requests[-1].body["messages"][-1]["content"] == SENT


NUL_IN_ARGV = ("agy", "grok", "hermes", "zcode")  # the prompt is an argument (argv hygiene)


@pytest.mark.parametrize("backend", NUL_IN_ARGV)
async def test_a_nul_in_a_prompt_in_argv_is_invalid_request_naming_it(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    ran = tmp_path / "ran"
    exe = tmp_path / backend
    exe.write_text(f'#!/bin/sh\ntouch "{ran}"\n')
    exe.chmod(0o755)
    llm = create_llm_adapter(backend, retry=False, **{backend: {"executable": str(exe)}})
    config = CompletionConfig(tools=ToolPolicy.cli_defaults())
    result = await llm.complete([Message.user("before \x00 after")], config)
    error = result.failure()
    assert error.kind is ErrorKind.invalid_request
    assert "contains a NUL character" in error.message
    assert not error.retryable
    assert not ran.exists()  # never started


def test_check_argv_names_the_argument_with_a_nul_and_lets_clean_argv_through() -> None:
    assert check_argv(["cli", "-p", "fine ünï \U0001f600"]) is None
    error = check_argv(["cli", "-p", "a\x00b"])
    assert error is not None
    assert error.kind is ErrorKind.invalid_request
    assert "argument 2 " in error.message
