"""A mistyped `[llm]` key is a typo, said as one: the user's own file fails with the closest
name ("did you mean"), and a project file's typo is reported as an unknown setting with the
closest name, never as a question of the folder's trust."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentport._trust import UntrustedConfigWarning, filter_untrusted, unknown_setting
from agentport.catalog import CATALOG
from agentport.config import LLMSettings, load_settings
from agentport.core import ProviderError

FIELDS = sorted(LLMSettings.model_fields)
LONG = [f for f in FIELDS if len(f) >= 7]


@st.composite
def _typo(draw: st.DrawFn) -> tuple[str, str]:
    """A field name with one letter dropped, doubled or replaced."""
    name = draw(st.sampled_from(LONG))
    i = draw(st.integers(1, len(name) - 2))
    how = draw(st.sampled_from(["drop", "double", "swap"]))
    letter = draw(st.sampled_from(string.ascii_lowercase))
    typo = {
        "drop": name[:i] + name[i + 1 :],
        "double": name[:i] + name[i] + name[i:],
        "swap": name[:i] + letter + name[i + 1 :],
    }[how]
    return name, typo


@given(_typo())
def test_a_one_letter_typo_names_a_field(pair: tuple[str, str]) -> None:
    _name, typo = pair
    if typo in LLMSettings.model_fields:
        return  # the edit made another real name
    said = unknown_setting(typo, FIELDS)
    assert said.startswith(f"unknown setting {typo!r}; did you mean ")
    kept, dropped = filter_untrusted({typo: "x"}, None, known=FIELDS)
    assert kept == {}
    assert dropped == [f"llm.{typo} (unknown setting{said.split(repr(typo), 1)[1]})"]


def test_the_users_own_typo_fails_with_the_closest_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "config.toml"
    user.write_text('[llm]\nbacknd = "codex"\n', encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(user))
    with pytest.raises(ProviderError) as caught:
        load_settings(cwd=tmp_path)
    assert "unknown setting 'backnd'; did you mean 'backend'?" in caught.value.message


def test_a_project_typo_is_not_reported_as_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentport.toml").write_text('[llm]\nbacknd = "codex"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.warns(UntrustedConfigWarning, match="backnd") as seen:
        settings = load_settings()
    lines = [str(w.message) for w in seen]
    typo = [line for line in lines if "backnd" in line]
    assert typo, lines
    assert "did you mean 'backend'?" in typo[0]
    assert "not trusted" not in typo[0]
    assert settings.llm.backend == "auto"


@given(st.sampled_from(sorted(CATALOG)), st.data())
def test_a_backend_name_is_checked_when_the_settings_load(name: str, data: st.DataObject) -> None:
    """Every catalog name loads as itself; the same name with one letter doubled fails on
    load (so `agentport config` says it, not only the first call), naming the closest."""
    assert LLMSettings(backend=name).backend == name
    i = data.draw(st.integers(0, len(name) - 1))
    typo = name[:i] + name[i] + name[i:]
    if any(typo.replace("-", "_") == known for known in CATALOG):
        return
    with pytest.raises(ValueError, match=f"unknown backend {typo!r}"):
        LLMSettings(backend=typo)
