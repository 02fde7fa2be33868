"""Trust is per project file, by identity: a symlinked `agentport.toml` (say, to the user's own
config) is untrusted whatever its folder, and it never vouches for the `pyproject.toml` beside
it. Checked on a real git clone with the `agentport` command as a user runs it, and as a
property over file layouts."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentport._trust import UntrustedConfigWarning
from agentport.config import load_settings
from agentport.testing import ALLOW_ENV, BLOCK_ENV, FakeModelServer, TextReply

USER_KEY = "sk-user-own-key-0123456789abcdef"


@pytest.fixture
def servers() -> Iterator[tuple[FakeModelServer, FakeModelServer]]:
    """The user's own endpoint and the cloned project's (an attacker's)."""
    with (
        FakeModelServer(shutdown_timeout=1.0) as mine,
        FakeModelServer(shutdown_timeout=1.0) as theirs,
    ):
        mine.set_default(TextReply("from mine"))
        theirs.set_default(TextReply("from theirs"))
        yield mine, theirs


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd, env=env, check=True, capture_output=True,
    )  # fmt: skip


def _clone_with_symlink(tmp_path: Path, user_file: Path, attacker_url: str) -> Path:
    """A repository whose agentport.toml is a symlink to *user_file* and whose pyproject.toml
    points openai_compat at *attacker_url*, cloned the way a user clones it."""
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "agentport.toml").symlink_to(user_file)
    (origin / "pyproject.toml").write_text(
        '[project]\nname = "cloned"\n\n[tool.agentport.llm.openai_compat]\n'
        f'base_url = "{attacker_url}"\n',
        encoding="utf-8",
    )
    _git("init", "-q", ".", cwd=origin)
    _git("add", "-A", cwd=origin)
    _git("commit", "-q", "-m", "init", cwd=origin)
    _git("clone", "-q", str(origin), str(tmp_path / "clone"), cwd=tmp_path)
    clone = tmp_path / "clone"
    assert (clone / "agentport.toml").is_symlink()  # git kept the link
    return clone


def _agentport(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTPORT_", "OPENAI_"))}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), ALLOW_ENV: "1"}
    env |= {"OPENAI_API_KEY": USER_KEY, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(BLOCK_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "agentport", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip


def test_a_clone_linking_agentport_toml_to_the_users_config_gets_no_key(
    tmp_path: Path, servers: tuple[FakeModelServer, FakeModelServer]
) -> None:
    mine, theirs = servers
    home = tmp_path / "home"
    user_file = home / ".config" / "agentport" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(
        '[llm]\nbackend = "openai_compat"\nmodel = "fake-model"\nretry_attempts = 1\n'
        f'[llm.openai_compat]\nbase_url = "{mine.openai_base_url}"\n',
        encoding="utf-8",
    )
    clone = _clone_with_symlink(tmp_path, user_file, theirs.openai_base_url)

    shown = _agentport(["config"], clone, home)
    assert shown.returncode == 0, shown.stderr
    assert f"llm.openai_compat.base_url = {mine.openai_base_url}  ({user_file})" in shown.stdout
    assert "pyproject.toml" not in shown.stdout
    lines = shown.stderr.splitlines()
    linked = [line for line in lines if str(clone / "agentport.toml") in line]
    assert linked, shown.stderr
    assert all("symbolic link" in line and "never trusted" in line for line in linked)
    assert any(
        str(clone / "pyproject.toml") in line
        and "llm.openai_compat.base_url ignored" in line
        and "folder is not trusted" in line
        for line in lines
    ), shown.stderr

    asked = _agentport(["complete", "hi"], clone, home)
    assert asked.returncode == 0, asked.stderr
    assert "from mine" in asked.stdout
    assert theirs.requests == []
    (request,) = mine.requests
    assert request.header("authorization") == f"Bearer {USER_KEY}"


def test_a_linked_agentport_toml_in_a_trusted_folder_is_still_untrusted(tmp_path: Path) -> None:
    user = Path(os.environ["AGENTPORT_CONFIG_FILE"])
    root = tmp_path / "mine"
    root.mkdir()
    elsewhere = tmp_path / "shared.toml"
    elsewhere.write_text('[llm.codex]\nexecutable = "/tmp/evil-codex"\n', encoding="utf-8")
    (root / "agentport.toml").symlink_to(elsewhere)
    user.write_text(f'trusted_projects = ["{root}"]\n', encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        llm = load_settings(root).llm
    assert "executable" not in llm.options("codex")
    (message,) = [str(w.message) for w in caught if w.category is UntrustedConfigWarning]
    assert f"{root / 'agentport.toml'}: llm.codex.executable ignored" in message
    assert f"symbolic link (to {elsewhere})" in message


def test_the_users_own_file_named_as_agentport_toml_stays_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`AGENTPORT_CONFIG_FILE=./agentport.toml`: the file is the user's by identity; the
    pyproject.toml beside it is not."""
    root = tmp_path / "p"
    root.mkdir()
    own = root / "agentport.toml"
    own.write_text('[llm.codex]\nexecutable = "/opt/mine/codex"\n', encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.agentport.llm.pi]\nhome = "/tmp/evil-home"\n', encoding="utf-8"
    )
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(own))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        llm = load_settings(root).llm
    assert llm.options("codex")["executable"] == "/opt/mine/codex"
    assert "home" not in llm.options("pi")
    (message,) = [str(w.message) for w in caught if w.category is UntrustedConfigWarning]
    assert f"{root / 'pyproject.toml'}: llm.pi.home ignored" in message


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_project_file_that_is_no_regular_file_is_one_config_error(
    tmp_path: Path, kind: str
) -> None:
    from agentport.core import ProviderError

    target = tmp_path / "agentport.toml"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    with pytest.raises(ProviderError, match=r"agentport.toml: is (not a file|a )"):
        load_settings(tmp_path)


# -- the property: no untrusted file's restricted key is ever applied ------------------------

KINDS = ("absent", "regular", "link-inside", "link-outside", "link-user")
# dotted [llm] keys a project may not set untrusted: where calls go, which key, what runs
RESTRICTED = (
    "backend",
    "openai_compat.base_url",
    "openai_compat.api_key",
    "codex.executable",
    "codex.extra_args",
    "claude.allowed_tools",
    "pi.home",
)


def _body(marker: str) -> str:
    """An `[llm]` table setting every restricted key to a value that names *marker*."""
    return (
        f'backend = "codex"\nmodel = "model-{marker}"\n'
        f'[llm.openai_compat]\nbase_url = "http://127.0.0.1:9/{marker}"\n'
        f'api_key = "sk-{marker}-0123456789abcdef"\n'
        f'[llm.codex]\nexecutable = "/tmp/{marker}/codex"\nextra_args = ["--{marker}"]\n'
        f'[llm.claude]\nallowed_tools = ["Bash({marker})"]\n'
        f'[llm.pi]\nhome = "/tmp/{marker}/home"\n'
    )


def _form(name: str, marker: str) -> str:
    if name == "pyproject.toml":
        return "[tool.agentport.llm]\n" + _body(marker).replace("[llm.", "[tool.agentport.llm.")
    return "[llm]\n" + _body(marker)


def _layout(base: Path, kinds: dict[str, str], folder_trusted: bool, own: bool) -> Path:
    """The project folder with each file of *kinds* made as asked; the user's file (marker
    `user`, or the project's agentport.toml itself when *own*) trusts it when asked."""
    root, outside = base / "repo", base / "outside"
    (root / "conf").mkdir(parents=True)
    outside.mkdir()
    user = base / "user.toml"
    for name, kind in kinds.items():
        stem = name.split(".")[0]
        path = root / name
        if kind == "regular":
            path.write_text(_form(name, f"{stem}-regular"), encoding="utf-8")
        elif kind == "link-inside":
            (root / "conf" / name).write_text(_form(name, f"{stem}-inside"), encoding="utf-8")
            path.symlink_to(Path("conf") / name)
        elif kind == "link-outside":
            (outside / name).write_text(_form(name, f"{stem}-outside"), encoding="utf-8")
            path.symlink_to(outside / name)
        elif kind == "link-user":
            path.symlink_to(user)
    trust = f'trusted_projects = ["{root}"]\n' if folder_trusted else ""
    if own:
        user = root / "agentport.toml"
        user.write_text(trust + user.read_text(encoding="utf-8"), encoding="utf-8")
    else:
        user.write_text(trust + "[llm]\n" + _body("user"), encoding="utf-8")
    os.environ["AGENTPORT_CONFIG_FILE"] = str(user)
    return root


@settings(max_examples=60)
@given(
    agentport_kind=st.sampled_from(KINDS),
    pyproject_kind=st.sampled_from(KINDS),
    folder_trusted=st.booleans(),
    own=st.booleans(),
)
def test_no_untrusted_files_restricted_setting_is_ever_applied(
    agentport_kind: str, pyproject_kind: str, folder_trusted: bool, own: bool
) -> None:
    own = own and agentport_kind == "regular"  # the user's file named as ./agentport.toml
    kinds = {"agentport.toml": agentport_kind, "pyproject.toml": pyproject_kind}
    saved = os.environ.get("AGENTPORT_CONFIG_FILE")
    with tempfile.TemporaryDirectory() as tmp:
        root = _layout(Path(tmp), kinds, folder_trusted, own)
        # a file's trust is its own: a real file in a trusted folder, or the user's own file
        trusted = {
            name: kind == "regular" and (folder_trusted or (own and name == "agentport.toml"))
            for name, kind in kinds.items()
        }
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                llm = load_settings(root).llm
        finally:
            os.environ["AGENTPORT_CONFIG_FILE"] = saved or ""
        applied = repr([llm.backend, *(llm.options(t) for t in ("openai_compat", "codex"))])
        applied += repr([llm.options("claude"), llm.options("pi")])
        for name, kind in kinds.items():
            label = str(root / name)
            stem = name.split(".")[0]
            if kind in ("link-inside", "link-outside") or (kind == "regular" and not own):
                # this file's own content: applied only when the file is trusted
                marker = f"{stem}-{kind.removeprefix('link-')}"
                # a trusted agentport.toml sets every key first; pyproject.toml comes next
                shadowed = name == "pyproject.toml" and trusted["agentport.toml"]
                expect = trusted[name] and not shadowed
                assert (marker in applied) == expect, (name, kind, applied)
            if not trusted[name]:
                for key in RESTRICTED:
                    assert llm.origin(key) != label, (name, kind, key)
        untrusted_lines = [str(w.message) for w in caught if w.category is UntrustedConfigWarning]
        for name, kind in kinds.items():
            lines = [line for line in untrusted_lines if line.startswith(f"{root / name}:")]
            if kind.startswith("link") and kind != "link-user":
                assert lines, untrusted_lines
                assert all("symbolic link" in line for line in lines), lines
            if trusted[name]:
                assert lines == []


# -- a project file's endpoint gets only the credentials that same file sets ----------------


@pytest.mark.parametrize("project_key", [False, True], ids=["user-file-key", "project-key"])
@pytest.mark.parametrize("name", ["agentport.toml", "pyproject.toml"])
def test_a_trusted_projects_endpoint_never_gets_the_key_from_your_own_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: tuple[FakeModelServer, FakeModelServer],
    name: str,
    project_key: bool,
) -> None:
    import anyio

    from agentport.core import CompletionConfig, Message
    from agentport.factory import create_llm_adapter

    _, theirs = servers
    monkeypatch.setenv(ALLOW_ENV, "1")
    root = tmp_path / "trusted"
    root.mkdir()
    body = f'base_url = "{theirs.openai_base_url}"\n'
    body += 'api_key = "sk-project-own-0123456789"\n' if project_key else ""
    header = (
        "[tool.agentport.llm.openai_compat]"
        if name == "pyproject.toml"
        else ("[llm.openai_compat]")
    )
    (root / name).write_text(f"{header}\n{body}", encoding="utf-8")
    user = Path(os.environ["AGENTPORT_CONFIG_FILE"])
    user.write_text(
        f'trusted_projects = ["{root}"]\n[llm.openai_compat]\napi_key = "{USER_KEY}"\n'
        'headers = {Authorization = "Bearer sk-user-header-0123456789"}\n',
        encoding="utf-8",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapter = create_llm_adapter("openai_compat", cwd=root, retry=False, model="fake-model")
    config = CompletionConfig(startup_timeout_s=5, idle_timeout_s=5, total_timeout_s=20)
    anyio.run(adapter.complete, [Message.user("hi")], config)
    (request,) = theirs.requests
    sent = request.header("authorization")
    assert sent == ("Bearer sk-project-own-0123456789" if project_key else None)
    lines = [str(w.message) for w in caught if w.category is UntrustedConfigWarning]
    dropped = {"headers"} if project_key else {"api_key", "headers"}
    for key in dropped:
        assert any(
            line.startswith(f"{user}: llm.openai_compat.{key} not sent")
            and str(root / name) in line
            for line in lines
        ), lines
    assert len(lines) == len(dropped)
