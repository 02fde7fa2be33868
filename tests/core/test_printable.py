"""One sanitiser for every line printed from outside text: `core.printable` leaves no escape
sequence, no C0/C1 control (but TAB and LF), no CR that overwrites a line and no bidi
control; the command-line tools print only through it (`cli._out.echo`), and the real
`agentport` command shows a server's hostile error body and answer as plain text."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentport.cli
from _extras import needs_mcp
from agentport.core import printable
from agentport.testing import FakeModelServer, HttpFault

BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def unsafe(char: str, *, newlines: bool) -> bool:
    code = ord(char)
    if char == "\t" or (newlines and char == "\n"):
        return False
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or 0xD800 <= code <= 0xDFFF
        or code in BIDI
        or code in (0x2028, 0x2029)
    )


# text with many controls and sequence starts in it, not only what st.text() draws
PIECES = (
    *("\x1b", "\x1b[", "\x1b]", "\x1bP", "\x9b", "\x9d", "\x07", "\x9c", "\x1b\\", "\r"),
    *("\n", "\r\n", "\t", "[", "]", "0", ";", "m", "\u202e", "\u2066", "\x00", "\x7f"),
)
hostile = st.lists(
    st.sampled_from(PIECES) | st.characters(codec=None, categories=None), max_size=40
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(hostile, st.booleans())
def test_the_output_has_no_control_and_printing_it_twice_changes_nothing(
    text: str, newlines: bool
) -> None:
    out = printable(text, newlines=newlines)
    seen = out.replace("\r\n", "\n") if newlines else out  # a CR only as part of CR LF
    assert not [c for c in seen if unsafe(c, newlines=newlines)], repr(out)
    assert printable(out, newlines=newlines) == out


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Zl", "Zp"))))
def test_text_without_controls_is_left_alone(text: str) -> None:
    assert printable(text) == text
    assert printable(text + "\n\tnext", newlines=True) == text + "\n\tnext"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x1b]0;window title\x07b", "ab"),  # OSC: set the window title
        ("a\x1b]52;c;ZXZpbA==\x1b\\b", "ab"),  # OSC 52: write the clipboard, ST-ended
        ("a\x9d8;;http://evil\x9cb", "ab"),  # 8-bit OSC hyperlink
        ("\x1b[31mred\x1b[0m", "red"),  # CSI colour
        ("a\x1b[2J\x1b[Hb", "ab"),  # clear the screen, home the cursor
        ("a\x9b2Jb", "ab"),  # 8-bit CSI
        ("a\x1bP1$qm\x1b\\b", "ab"),  # DCS
        ("a\x1b_apc\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", "abcd"),  # APC, PM, SOS
        ("a\x1bcb\x1b(Bc", "abc"),  # reset, charset selection
        ("real error\rall good", "real error\\rall good"),  # CR overwrites the line
        ("lines\r\nkept\n", "lines\r\nkept\n"),
        ("bell\x07 back\x08 nul\x00", "bell\\u0007 back\\b nul\\u0000"),
        ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override
        ("a\x1b]0;unterminated", "a0;unterminated"),  # the introducer goes, text stays
        ("half \ud83d", "half \\ud83d"),
    ],
)
def test_each_control_form_is_removed_or_shown(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_one_line_escapes_line_ends() -> None:
    assert printable("a\nagentport: fake\r\n", newlines=False) == "a\\nagentport: fake\\r\\n"


def test_a_json_document_stays_valid_and_means_the_same() -> None:
    import json

    doc = json.dumps({"content": "a\x9b31mb \u202e c"}, ensure_ascii=False)
    assert json.loads(printable(doc)) == {"content": "ab \u202e c"}


PRINTERS = {"print", "echo", "secho", "write", "writelines"}


def _printing_calls(path: Path) -> list[str]:
    """Calls in *path* that print without `cli._out.echo`: print(), typer/click echo,
    sys.stdout/sys.stderr writes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id == "print":
            found.append(f"{path.name}:{node.lineno} print()")
        elif isinstance(fn, ast.Attribute) and fn.attr in PRINTERS:
            owner = ast.unparse(fn.value)
            if owner in {"typer", "click", "sys.stdout", "sys.stderr"}:
                found.append(f"{path.name}:{node.lineno} {owner}.{fn.attr}()")
    return found


def test_the_command_line_tools_print_only_through_echo() -> None:
    folder = Path(agentport.cli.__file__).parent
    found = [
        c for p in sorted(folder.glob("*.py")) if p.name != "_out.py" for c in _printing_calls(p)
    ]
    assert found == []


HOSTILE = "bad key\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\rall good\x1b[2K\u202e"


def _agentport(
    tmp_path: Path, server: FakeModelServer, *args: str
) -> subprocess.CompletedProcess[bytes]:
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env |= {
        "AGENTPORT_ALLOW_REAL_BACKENDS": "1",
        "AGENTPORT_CONFIG_FILE": str(config),
        "AGENTPORT_OPENAI_BASE_URL": server.openai_base_url,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    argv = [sys.executable, "-m", "agentport", "complete", "hi", "-b", "openai_compat", *args]
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=60, check=False)


def _no_control(data: bytes) -> None:
    text = data.decode("utf-8")
    assert not [c for c in text if unsafe(c, newlines=True)], repr(text)
    assert "\r" not in text


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX bytes on stderr")
def test_the_real_cli_prints_a_hostile_error_body_as_plain_text(tmp_path: Path) -> None:
    with FakeModelServer() as server:
        server.default = HttpFault(400, HOSTILE)
        done = _agentport(tmp_path, server)
    assert done.returncode == 1, done.stderr
    _no_control(done.stderr)
    line = done.stderr.decode("utf-8")
    assert line.startswith("agentport: ")
    assert "bad key" in line
    assert "\\rall good" in line  # the CR shown, not obeyed: the real error stays on screen
    assert "pwned" not in line  # the sequences went whole
    assert "ZXZpbA==" not in line


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX bytes on stdout")
@pytest.mark.parametrize("as_json", [False, True])
def test_the_real_cli_prints_a_hostile_answer_as_plain_text(tmp_path: Path, as_json: bool) -> None:
    with FakeModelServer(default=f"answer: {HOSTILE}") as server:
        done = _agentport(tmp_path, server, *(["--json"] if as_json else []))
    assert done.returncode == 0, done.stderr
    _no_control(done.stdout)
    out = done.stdout.decode("utf-8")
    if as_json:
        import json

        assert json.loads(out)["content"].startswith("answer: bad key")
    assert "answer: bad key" in out


@pytest.mark.anyio
@needs_mcp
async def test_mcp_tool_errors_and_log_records_are_terminal_safe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from agentport.core import ErrorKind, ProviderError
    from agentport.mcp._errors import guarded

    @guarded
    async def crashes() -> None:
        raise RuntimeError(f"boom {HOSTILE} sk-proj-Zq8vN3kLpW2xR7tYb4Hc9DfG")

    @guarded
    async def fails() -> None:
        raise ProviderError(ErrorKind.network, f"down {HOSTILE}")

    for tool in (crashes, fails):
        with pytest.raises(ToolError) as raised:
            await tool()
        assert not [c for c in str(raised.value) if unsafe(c, newlines=False)]
        assert "bad key" in str(raised.value)
    logged = "\n".join(caplog.text.splitlines())
    assert "boom bad key" in logged  # the crash was logged, with its traceback
    assert not [c for c in logged if unsafe(c, newlines=True)], repr(logged)
    assert "Zq8vN3kLpW2xR7tYb4Hc9DfG" not in logged


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX bytes on stdout")
def test_the_real_deeprefine_lists_a_hostile_history_row_as_plain_text(tmp_path: Path) -> None:
    from _deeprefine_util import write_tiny

    write_tiny(tmp_path)  # a project: graphify-out/graph.json
    script = "from agentport.cli._deeprefine import console; console()"

    def deeprefine(*args: str) -> subprocess.CompletedProcess[bytes]:
        argv = [sys.executable, "-c", script, *args]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=60, check=False)

    # a history row as a cloned repo may ship it
    assert deeprefine("history", "add", "--query", f"why {HOSTILE}").returncode == 0
    listed = deeprefine("history", "list")
    assert listed.returncode == 0, listed.stderr
    _no_control(listed.stdout)
    assert b"why bad key\\rall good" in listed.stdout
