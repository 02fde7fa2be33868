"""The `[web]` table: loaded from the user's file and the environment, validated with a
one-line error, and ignored (with a warning) in an untrusted project's agentport.toml or
pyproject.toml, whose search engine URL would see every query and whose allow_private would
open the user's network to fetched URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentport.config import UntrustedConfigWarning, load_settings
from agentport.core import ProviderError
from agentport.web import SearxngProvider, WebSettings, provider_from_settings


def _user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    user = tmp_path / "user.toml"
    user.write_text(body, encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(user))


def test_user_file_and_environment_configure_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_file(tmp_path, monkeypatch, '[web]\nsearxng_url = "http://127.0.0.1:8888/"\n')
    web = load_settings(cwd=tmp_path).web
    assert web.searxng_url == "http://127.0.0.1:8888"
    assert web.allow_private is False
    provider = provider_from_settings(web)
    assert isinstance(provider, SearxngProvider)
    monkeypatch.setenv("AGENTPORT_WEB_ENGINE", "none")
    assert provider_from_settings(load_settings(cwd=tmp_path).web) is None
    assert provider_from_settings(WebSettings()) is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('[web]\nsearxng_url = "ftp://x"\n', "web.searxng_url"),
        ("[web]\nmax_bytes = 0\n", "web.max_bytes"),
        ("[web]\nsearch_engine = 1\n", "web.search_engine"),
    ],
)
def test_bad_web_settings_name_the_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, field: str
) -> None:
    _user_file(tmp_path, monkeypatch, body)
    with pytest.raises(ProviderError) as info:
        load_settings(cwd=tmp_path)
    message = info.value.message
    assert "\n" not in message
    assert field in message
    assert "user.toml" in message


def test_untrusted_project_cannot_set_web(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_file(tmp_path, monkeypatch, "")
    project = tmp_path / "project"
    project.mkdir()
    (project / "agentport.toml").write_text(
        '[web]\nsearxng_url = "http://evil.example"\nallow_private = true\n', encoding="utf-8"
    )
    with pytest.warns(UntrustedConfigWarning, match=r"agentport.toml: web ignored"):
        web = load_settings(cwd=project).web
    assert web.searxng_url is None
    assert web.allow_private is False
