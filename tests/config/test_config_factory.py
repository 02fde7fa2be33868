"""`llm.backend` from every config source, the factory, aliases and one-line config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentport import ErrorKind, ProviderError, create_agent_runtime, create_llm_adapter
from agentport.catalog import CATALOG, all_backends, resolve_backend
from agentport.config import load_settings
from agentport.core import Param
from agentport.policies import RetryingAdapter
from agentport.testing import EchoAdapter, EchoRuntime, ScriptedAdapter


@pytest.fixture(autouse=True)
def _trust_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # these tests are about source order, not trust: the project folder is trusted
    # (untrusted project files: tests/test_*trust*.py)
    monkeypatch.setenv("AGENTPORT_TRUSTED_PROJECTS", str(tmp_path))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _backend_of(adapter: object) -> str:
    inner = adapter.inner if isinstance(adapter, RetryingAdapter) else adapter
    return type(inner).__name__


def test_default_backend_is_auto(tmp_path: Path) -> None:
    assert load_settings(tmp_path).llm.backend == "auto"


def test_user_config_file_selects_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = _write(tmp_path / "user.toml", '[llm]\nbackend = "echo"\n')
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(user))
    assert _backend_of(create_llm_adapter(cwd=tmp_path)) == "EchoAdapter"


def test_pyproject_beats_user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AGENTPORT_CONFIG_FILE", str(_write(tmp_path / "u.toml", '[llm]\nbackend = "echo"\n'))
    )
    _write(tmp_path / "pyproject.toml", '[tool.agentport.llm]\nbackend = "scripted"\n')
    assert _backend_of(create_llm_adapter(cwd=tmp_path)) == "ScriptedAdapter"


def test_agentport_toml_beats_pyproject(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.agentport.llm]\nbackend = "scripted"\n')
    _write(tmp_path / "agentport.toml", '[llm]\nbackend = "echo"\n')
    assert _backend_of(create_llm_adapter(cwd=tmp_path)) == "EchoAdapter"


def test_environment_beats_agentport_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "agentport.toml", '[llm]\nbackend = "echo"\n')
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "scripted")
    assert _backend_of(create_llm_adapter(cwd=tmp_path)) == "ScriptedAdapter"


def test_explicit_argument_beats_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_LLM_BACKEND", "scripted")
    assert _backend_of(create_llm_adapter("echo", cwd=tmp_path)) == "EchoAdapter"


def test_sources_merge_key_by_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "agentport.toml", '[llm]\nbackend = "echo"\nidle_timeout_s = 7\n')
    monkeypatch.setenv("AGENTPORT_LLM_MODEL", "m-env")
    llm = load_settings(tmp_path, total_timeout_s=9).llm
    assert (llm.backend, llm.model, llm.idle_timeout_s, llm.total_timeout_s) == (
        "echo",
        "m-env",
        7,
        9,
    )
    assert llm.completion_config().idle_timeout_s == 7


def test_backend_option_tables_reach_the_backend(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", '[llm.scripted]\ndefault = "configured"\n')
    adapter = create_llm_adapter("scripted", cwd=tmp_path, retry=False)
    assert isinstance(adapter, ScriptedAdapter)
    assert adapter.default == "configured"


@pytest.mark.parametrize("name", ["Echo", " echo ", "TEST", "fake", "Script"])
def test_aliases_resolve_case_and_space_insensitively(name: str) -> None:
    assert resolve_backend(name) in {"echo", "scripted"}


def test_unknown_backend_suggests_the_closest_name() -> None:
    with pytest.raises(ProviderError) as info:
        resolve_backend("ecko")
    assert info.value.kind is ErrorKind.config
    assert "did you mean 'echo'?" in str(info.value)
    known = str(info.value).split("known backends: ", 1)[1]
    names = known.split(", ")
    assert names[-1] == "auto"
    assert names[:-1] == sorted(names[:-1])
    assert {"echo", "scripted"} <= set(names)


def test_typo_in_config_file_gets_did_you_mean(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", '[llm]\nbackend = "scriptd"\n')
    with pytest.raises(ProviderError, match="did you mean 'scripted'"):
        create_llm_adapter(cwd=tmp_path)


def test_malformed_agentport_toml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", "[llm\nbackend = ")
    with pytest.raises(ProviderError) as info:
        load_settings(tmp_path)
    message = str(info.value)
    assert info.value.kind is ErrorKind.config
    assert "agentport.toml: invalid TOML" in message
    assert "\n" not in message


def test_wrong_type_names_source_and_field(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", '[llm]\nidle_timeout_s = "soon"\n')
    with pytest.raises(ProviderError) as info:
        load_settings(tmp_path)
    assert str(info.value).startswith("config: agentport.toml: llm.idle_timeout_s: ")
    assert "'soon'" in str(info.value)


def test_wrong_type_in_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_LLM_RETRY_ATTEMPTS", "many")
    with pytest.raises(ProviderError, match=r"environment \(AGENTPORT_LLM_RETRY_ATTEMPTS\)"):
        load_settings(tmp_path)


def test_wrong_type_in_pyproject_names_pyproject(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.agentport.llm]\non_ignored = 'explode'\n")
    with pytest.raises(ProviderError, match=r"pyproject.toml: llm.on_ignored"):
        load_settings(tmp_path)


def test_auto_with_nothing_installed_says_how_to_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    import agentport.factory as factory

    monkeypatch.setattr(factory, "is_installed", lambda capability: False)
    with pytest.raises(ProviderError) as info:
        create_llm_adapter(cwd=tmp_path)
    assert info.value.kind is ErrorKind.config
    assert "AGENTPORT_LLM_BACKEND" in str(info.value)


def test_auto_picks_the_first_available_backend_in_priority_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agentport.factory as factory
    from agentport.core import BackendCapability, BackendKind, ParamSupport

    def entry(name: str, priority: int | None) -> BackendCapability:
        return BackendCapability(
            name=name,
            kind=BackendKind.cli,
            summary="",
            module="m",
            auto_priority=priority,
            params=dict.fromkeys(Param, ParamSupport.IGNORED),
        )

    entries = (entry("zeta", 30), entry("never", None), entry("alpha", 10), entry("mid", 20))
    monkeypatch.setattr(factory, "all_backends", lambda: entries)
    monkeypatch.setattr(factory, "is_installed", lambda c: c.name in {"zeta", "mid", "never"})
    assert factory.resolve_auto() == "mid"
    monkeypatch.setattr(factory, "is_installed", lambda c: True)
    assert factory.resolve_auto() == "alpha"


def test_retry_wrapper_is_applied_by_default(tmp_path: Path) -> None:
    adapter = create_llm_adapter("echo", cwd=tmp_path)
    assert isinstance(adapter, RetryingAdapter)
    assert isinstance(adapter.inner, EchoAdapter)
    assert adapter.policy.attempts == 3
    # one attempt still runs under the policy layer: whole-call deadline, attempt history
    single = create_llm_adapter("echo", cwd=tmp_path, retry_attempts=1)
    assert isinstance(single, RetryingAdapter)
    assert single.policy.attempts == 1
    assert isinstance(create_llm_adapter("echo", cwd=tmp_path, retry=False), EchoAdapter)


def test_runtime_from_factory(tmp_path: Path) -> None:
    assert isinstance(create_agent_runtime("echo", cwd=tmp_path), EchoRuntime)


def test_completion_only_backend_has_no_runtime(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        create_agent_runtime("scripted", cwd=tmp_path)
    assert info.value.kind is ErrorKind.unsupported


def test_catalog_declares_every_param_for_every_backend() -> None:
    for capability in all_backends():
        assert set(capability.params) == set(Param), capability.name
        assert CATALOG[capability.name] is capability


def test_catalog_names_and_aliases_are_unique() -> None:
    seen: list[str] = []
    for capability in all_backends():
        seen += [n.lower() for n in capability.names]
    assert len(seen) == len(set(seen))


def test_installed_real_backends_are_blocked_in_unit_tests(tmp_path: Path) -> None:
    real = [c for c in all_backends() if c.kind.value != "test"]
    if not real:
        pytest.skip("no real backend registered")
    from agentport.factory import is_installed

    for capability in real:
        if not is_installed(capability):
            continue
        with pytest.raises(ProviderError, match="blocked in unit tests"):
            create_llm_adapter(capability.name, cwd=tmp_path)
        return
    pytest.skip("no real backend installed")


def test_guard_blocks_unless_explicitly_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport._guard import ALLOW_ENV, ensure_real_backends_allowed

    with pytest.raises(ProviderError) as info:
        ensure_real_backends_allowed("codex")
    assert info.value.kind is ErrorKind.config
    monkeypatch.setenv(ALLOW_ENV, "1")
    ensure_real_backends_allowed("codex")


def test_missing_extra_is_not_installed_naming_the_extra() -> None:
    from agentport.core import BackendCapability, BackendKind, ParamSupport
    from agentport.factory import _module

    capability = BackendCapability(
        name="needs_extra",
        kind=BackendKind.local,
        summary="",
        module="agentport.nowhere",
        requires_modules=("agentport_module_that_does_not_exist",),
        extra="local",
        params=dict.fromkeys(Param, ParamSupport.IGNORED),
    )
    with pytest.raises(ProviderError) as info:
        _module(capability)
    assert info.value.kind is ErrorKind.not_installed
    assert "pip install 'agentport[local]'" in str(info.value)


def test_non_utf8_agentport_toml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "agentport.toml").write_bytes(b"\xff\xfe[llm]\n")
    with pytest.raises(ProviderError, match=r"agentport.toml: not UTF-8 text"):
        load_settings(tmp_path)


def test_agentport_toml_that_is_a_directory_is_an_error_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "agentport.toml").mkdir()
    with pytest.raises(ProviderError, match=r"agentport.toml: is a folder, not a regular file"):
        load_settings(tmp_path)


def test_explicit_user_config_file_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(
        ProviderError, match=r"AGENTPORT_CONFIG_FILE: .*missing.toml: file not found"
    ):
        load_settings(tmp_path)


def test_unknown_llm_key_is_an_error_naming_it(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", "[llm]\nbogus_key = 1\n")
    with pytest.raises(ProviderError, match=r"agentport.toml: llm: .*unknown setting 'bogus_key'"):
        load_settings(tmp_path)


def test_backend_table_with_a_typo_gets_did_you_mean(tmp_path: Path) -> None:
    _write(tmp_path / "agentport.toml", "[llm.eco]\nx = 1\n")
    with pytest.raises(ProviderError, match=r"table \[llm.eco\]: unknown backend 'eco'; did you"):
        load_settings(tmp_path)
