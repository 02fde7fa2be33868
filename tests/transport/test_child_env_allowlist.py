"""Children see an allow-listed environment: six unrelated secrets planted in the
parent environment reach no agent CLI; an endpoint key reaches only its own backend, and never
a configured `base_url` unless it is that backend's configured key.

Unit level: every CLI spec's `build`, composed exactly as the adapter composes the child's
environment (`spec.extra_env`, the user's `env`, `Invocation.env`, `Invocation.passthrough`,
`inherit_env`). End to end with the real CLIs: tests/contract/test_least_privilege_contract.py.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _fake_clis_util import ALL_TOOLS_ONLY
from agentport.backends import (
    CliCall,
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
from agentport.backends._policy import inherit_env
from agentport.core import CompletionConfig, ProviderError, ToolPolicy
from agentport.transport import child_env
from agentport.transport._env import BASE_ALLOWED, DEPTH_ENV, INHERIT_ENV, env_allowed

SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED0000SECRET",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret",
    "GITHUB_TOKEN": "ghp_planted",
    "SLACK_BOT_TOKEN": "xoxb-planted",
    "HF_TOKEN": "hf_planted",
    "DATABASE_URL": "postgres://u:planted@db/prod",
}
PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/tmp",
    "XDG_CONFIG_HOME": "/home/u/.config",
    "HTTPS_PROXY": "http://proxy:3128",
    "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    **SECRETS,
}
MODULES: dict[str, ModuleType] = {
    "agy": agy, "claude": claude, "codex": codex, "copilot": copilot, "gemini": gemini,
    "gjc": gjc, "goose": goose, "grok": grok, "hermes": hermes, "kiro": kiro,
    "opencode": opencode, "pi": pi, "qwen": qwen, "zcode": zcode,
}  # fmt: skip


def _env(name: str, tmp: Path, options: dict[str, Any], parent: dict[str, str]) -> dict[str, str]:
    """The child's environment as `CliAdapter` builds it."""
    module = MODULES[name]
    call = CliCall(
        executable=f"/bin/{name}", prompt="p", system_prompt=None,
        config=CompletionConfig(tools=ToolPolicy.cli_defaults())
        if name in ALL_TOOLS_ONLY
        else CompletionConfig(),
        schema=None, options=options, run_dir=tmp, cwd=tmp,
    )  # fmt: skip
    inv = module.build(call)
    user = {str(k): str(v) for k, v in dict(options.get("env") or {}).items()}
    return child_env(
        parent,
        {**module.SPEC.extra_env, **user, **inv.env},
        passthrough=inv.passthrough,
        inherit=inherit_env(options),
    )


@pytest.mark.parametrize("endpoint", [False, True], ids=["own-provider", "base_url"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_planted_secret_reaches_any_cli(name: str, endpoint: bool, tmp_path: Path) -> None:
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key": "cfg-key"} if endpoint else {}
    env = _env(name, tmp_path, options, PARENT)
    leaked = {k for k, v in SECRETS.items() if k in env or v in env.values()}
    # copilot's own login is a GitHub token: the one "secret" it needs without an endpoint
    own = {"GITHUB_TOKEN"} if name == "copilot" and not endpoint else set()
    assert leaked == own, f"{name} child sees {sorted(leaked)}"
    for kept in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "XDG_CONFIG_HOME",
                 "HTTPS_PROXY", "SSL_CERT_FILE"):  # fmt: skip
        assert env[kept] == PARENT[kept], f"{name} lost {kept}"
    assert env[DEPTH_ENV] == "1"


# the key variables of every provider a CLI might send to a configured endpoint
KEYS = {
    "OPENAI_API_KEY": "sk-parent-openai",
    "ANTHROPIC_API_KEY": "sk-ant-parent",
    "GEMINI_API_KEY": "parent-gemini",
    "GOOGLE_API_KEY": "parent-google",
    "OPENROUTER_API_KEY": "parent-openrouter",
    "CODEX_API_KEY": "parent-codex",
    "COPILOT_GITHUB_TOKEN": "parent-copilot",
    "GH_TOKEN": "parent-gh",
}


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"kiro", "agy"}))  # no custom endpoint
def test_a_parent_key_never_reaches_a_configured_base_url(name: str, tmp_path: Path) -> None:
    options = {"base_url": "http://127.0.0.1:9/v1"}  # no api_key configured
    env = _env(name, tmp_path, options, {**PARENT, **KEYS})
    sent = sorted(k for k, v in KEYS.items() if v in env.values())
    assert sent == [], f"{name} would send {sent} to the configured base_url"


def test_qwen_sends_only_its_configured_key_to_its_base_url(tmp_path: Path) -> None:
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key": "qwen-own-key"}
    env = _env("qwen", tmp_path, options, {**PARENT, **KEYS})
    assert env["OPENAI_API_KEY"] == "qwen-own-key"


def test_copilot_byok_sees_no_github_token(tmp_path: Path) -> None:
    parent = {**PARENT, **KEYS}
    byok = _env("copilot", tmp_path, {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}, parent)
    assert not {"GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN"} & set(byok)
    own = _env("copilot", tmp_path, {}, parent)  # GitHub login: its token is what it needs
    assert own["GH_TOKEN"] == "parent-gh"
    assert "GITHUB_TOKEN" in own


def test_each_cli_keeps_its_own_provider_key_without_an_endpoint(tmp_path: Path) -> None:
    parent = {**PARENT, **KEYS}
    assert _env("claude", tmp_path, {}, parent)["ANTHROPIC_API_KEY"] == "sk-ant-parent"
    assert _env("codex", tmp_path, {}, parent)["OPENAI_API_KEY"] == "sk-parent-openai"
    assert _env("gemini", tmp_path, {}, parent)["GEMINI_API_KEY"] == "parent-gemini"
    # ... but not another provider's
    assert "OPENAI_API_KEY" not in _env("claude", tmp_path, {}, parent)
    assert "ANTHROPIC_API_KEY" not in _env("gemini", tmp_path, {}, parent)
    assert "ANTHROPIC_API_KEY" not in _env("codex", tmp_path, {}, parent)
    # pi passes the key of the provider it was told to use, only
    pi_env = _env("pi", tmp_path, {"provider": "anthropic"}, parent)
    assert pi_env["ANTHROPIC_API_KEY"] == "sk-ant-parent"
    assert "OPENAI_API_KEY" not in pi_env


def test_user_opt_in_lets_named_variables_through(tmp_path: Path) -> None:
    options = {"inherit_env": ["AWS_*"], "env": {"EXTRA": "x"}}
    env = _env("claude", tmp_path, options, PARENT)
    assert env["AWS_SECRET_ACCESS_KEY"] == "planted-aws-secret"
    assert env["EXTRA"] == "x"
    assert "GITHUB_TOKEN" not in env
    globally = child_env({**PARENT, INHERIT_ENV: "HF_TOKEN, SLACK_*"})
    assert globally["HF_TOKEN"] == "hf_planted"
    assert globally["SLACK_BOT_TOKEN"] == "xoxb-planted"
    assert "AWS_ACCESS_KEY_ID" not in globally


def test_inherit_env_must_be_a_list_of_names() -> None:
    with pytest.raises(ProviderError, match="inherit_env"):
        inherit_env({"inherit_env": "AWS_*"})
    with pytest.raises(ProviderError, match="inherit_env"):
        inherit_env({"inherit_env": ["A=B"]})


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@given(st.dictionaries(NAMES, st.text(max_size=5), max_size=30))
def test_child_env_passes_nothing_outside_the_allow_list(parent: dict[str, str]) -> None:
    parent.pop(DEPTH_ENV, None)
    parent.pop(INHERIT_ENV, None)
    env = child_env(parent)
    for name in env:
        assert name == DEPTH_ENV or env_allowed(name)
    for name in parent:
        if name in BASE_ALLOWED or name.startswith(("LC_", "XDG_")):
            assert env[name] == parent[name]


PATTERNS = st.lists(
    st.one_of(
        NAMES, st.from_regex(r"[A-Z_]{0,4}[*?][A-Z_]{0,4}(\[[A-M]-[N-Z]\])?", fullmatch=True)
    ),
    max_size=4,
)


@given(NAMES, PATTERNS)
def test_env_allowed_is_the_allow_list_or_an_fnmatch_of_extra(name: str, extra: list[str]) -> None:
    """The compiled matcher (one regex per `extra`, cached) says what `fnmatchcase` says."""
    from fnmatch import fnmatchcase

    expected = (
        name in BASE_ALLOWED
        or name.startswith(("LC_", "XDG_"))
        or any(name == p or fnmatchcase(name, p) for p in extra)
    )
    assert env_allowed(name, extra) is expected
