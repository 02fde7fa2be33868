"""`agentport.complete_sync`: one blocking call for scripts, every problem a `Failure`."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from returns.result import Failure, Success

import agentport
from agentport import CompletionConfig, ErrorKind, Message, ProviderError, complete_sync


def test_a_prompt_string_comes_back_as_a_success(tmp_path: Path) -> None:
    result = complete_sync("Say hi", backend="echo", cwd=tmp_path)
    assert isinstance(result, Success)
    assert result.unwrap().content == "Say hi"


def test_messages_config_and_settings_are_honoured(tmp_path: Path) -> None:
    messages = [Message.system("be brief"), Message.user("q")]
    result = complete_sync(
        messages, CompletionConfig(label="s"), backend="scripted", cwd=tmp_path, model="m-1"
    )
    response = result.unwrap()
    assert response.model == "m-1"  # the scripted double reports the model it was given


def test_an_unknown_backend_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    result = complete_sync("hi", backend="ecko", cwd=tmp_path)
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is ErrorKind.config
    assert "did you mean 'echo'?" in str(error)


def test_bad_configuration_is_a_failure_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "agentport.toml").write_text('[llm]\nidle_timeout_s = "soon"\n')
    result = complete_sync("hi", backend="echo", cwd=tmp_path)
    assert isinstance(result, Failure)
    assert "agentport.toml" in str(result.failure())


def test_the_factory_itself_raises_setup_problems(tmp_path: Path) -> None:
    # the documented split (docs/errors.md): setup raises, calls return Failure
    with pytest.raises(ProviderError) as info:
        agentport.create_llm_adapter("ecko", cwd=tmp_path)
    assert info.value.kind is ErrorKind.config


def test_calling_it_from_async_code_is_a_programming_error(tmp_path: Path) -> None:
    async def inside() -> None:
        complete_sync("hi", backend="echo", cwd=tmp_path)

    with pytest.raises(RuntimeError):
        anyio.run(inside)
