"""Core contracts: messages, config, capabilities, errors, IGNORED-parameter policy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from returns.result import Failure, Success

from agentport.core import (
    BackendCapability,
    BackendKind,
    CompletionConfig,
    ErrorKind,
    Message,
    MessageRole,
    Param,
    ParamSupport,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
    check_params,
    normalize_name,
    redact,
    split_system,
)


def _capability(**overrides: ParamSupport) -> BackendCapability:
    params = {p: ParamSupport.NATIVE for p in Param} | {Param(k): v for k, v in overrides.items()}
    return BackendCapability(
        name="demo", kind=BackendKind.test, summary="demo", module="x", params=params
    )


def test_message_roles_and_dict_shape() -> None:
    assert Message.user("hi").to_dict() == {"role": "user", "content": "hi"}
    assert Message.system("s").role is MessageRole.system
    with pytest.raises(ValidationError):
        Message(role="tool", content="x")  # type: ignore[arg-type]


def test_split_system_joins_system_messages_and_keeps_order() -> None:
    system, rest = split_system(
        [Message.system("a"), Message.user("u1"), Message.system("b"), Message.assistant("x")]
    )
    assert system == "a\n\nb"
    assert [m.content for m in rest] == ["u1", "x"]
    assert split_system([Message.user("u")])[0] is None


def test_capability_must_declare_every_param() -> None:
    params = {p: ParamSupport.NATIVE for p in Param if p is not Param.web_search}
    with pytest.raises(ValidationError, match="web_search"):
        BackendCapability(name="x", kind=BackendKind.cli, summary="", module="m", params=params)


def test_capability_name_must_be_canonical() -> None:
    params = {p: ParamSupport.NATIVE for p in Param}
    with pytest.raises(ValidationError, match="not canonical"):
        BackendCapability(
            name="Claude Code", kind=BackendKind.cli, summary="", module="m", params=params
        )


def test_capability_dumps_plain_json() -> None:
    dumped = _capability(model=ParamSupport.IGNORED).model_dump(mode="json")
    assert dumped["params"]["model"] == "ignored"


def test_capability_params_are_read_only() -> None:
    cap = _capability()
    with pytest.raises(TypeError):
        cap.params[Param.model] = ParamSupport.IGNORED  # type: ignore[index]


@given(st.text(alphabet=" -_AbCz", max_size=20))
def test_normalize_name_is_idempotent(name: str) -> None:
    assert normalize_name(normalize_name(name)) == normalize_name(name)


def test_params_set_reports_only_what_the_call_sets() -> None:
    # least privilege by default: no tools, read-only
    assert CompletionConfig().params_set() == {Param.tool_restriction, Param.sandbox}
    assert CompletionConfig(tools=ToolPolicy.cli_defaults()).params_set() == frozenset()
    config = CompletionConfig(
        temperature=0.2,
        tools=ToolPolicy(allowed_tools=(), sandbox=Sandbox.read_only),
        web_search=True,
        session_id="s",
    )
    assert config.params_set([Message.system("x")]) == {
        Param.system_prompt,
        Param.temperature,
        Param.tool_restriction,
        Param.sandbox,
        Param.web_search,
        Param.session_resume,
    }


def test_config_rejects_out_of_range_values() -> None:
    with pytest.raises(ValidationError):
        CompletionConfig(temperature=3)
    with pytest.raises(ValidationError):
        CompletionConfig(idle_timeout_s=0)


def test_ignored_param_warns_by_default() -> None:
    cap = _capability(temperature=ParamSupport.IGNORED)
    result = check_params(cap, [Message.user("q")], CompletionConfig(temperature=0.1))
    assert isinstance(result, Success)
    assert result.unwrap() == ("demo ignores temperature",)


def test_ignored_param_fails_under_fail_policy() -> None:
    cap = _capability(temperature=ParamSupport.IGNORED, max_tokens=ParamSupport.IGNORED)
    result = check_params(
        cap, [Message.user("q")], CompletionConfig(temperature=0.1, on_ignored="fail")
    )
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind is ErrorKind.unsupported
    assert "temperature" in error.message
    assert "max_tokens" not in error.message


def test_translated_param_is_not_a_warning() -> None:
    cap = _capability(output_schema=ParamSupport.TRANSLATED)
    config = CompletionConfig(output_schema={"type": "object"}, on_ignored="fail")
    assert check_params(cap, [Message.user("q")], config) == Success(())


def test_retryable_defaults_follow_kind() -> None:
    assert ProviderError(ErrorKind.rate_limited, "x").retryable
    assert ProviderError(ErrorKind.server_error, "x").retryable
    assert not ProviderError(ErrorKind.auth_required, "x").retryable
    assert not ProviderError(ErrorKind.rate_limited, "x", retryable=False).retryable


def test_provider_error_str_names_backend_kind_and_facts() -> None:
    error = ProviderError(ErrorKind.timeout, "no output", backend="codex", timeout="idle")
    assert str(error) == "codex: timeout: no output (idle timeout)"
    error = ProviderError(ErrorKind.rate_limited, "slow", status=429, retry_after=2)
    assert str(error) == "rate_limited: slow (HTTP 429, retry after 2s)"


def test_provider_error_redacts_secrets_in_message_stderr_and_details() -> None:
    error = ProviderError(
        ErrorKind.auth_required,
        "bad key sk-abcdefghijklmnop123",
        stderr_tail="Authorization: Bearer abcdefghijklmnop",
        details={"url": "http://x?api_key=supersecret"},
    )
    assert "abcdefghijklmnop" not in error.message
    assert "abcdefghijklmnop" not in error.stderr_tail
    assert "supersecret" not in error.details["url"]


@given(st.text(max_size=60))
def test_redact_is_idempotent(text: str) -> None:
    assert redact(redact(text)) == redact(text)


def test_usage_adds_up_and_keeps_unknown_cost_unknown() -> None:
    total = Usage(input_tokens=1, output_tokens=2) + Usage(input_tokens=3, cached_tokens=1)
    assert (total.input_tokens, total.output_tokens, total.cached_tokens) == (4, 2, 1)
    assert total.cost_usd is None
    assert (Usage(cost_usd=0.5) + Usage()).cost_usd == 0.5


@pytest.mark.parametrize(
    "messages",
    [[], [Message.user("")], [Message.system("only a system prompt")], [Message.user("  \n")]],
)
def test_a_call_with_nothing_to_answer_is_invalid_request(messages: list[Message]) -> None:
    # Regression: `complete([])` was sent to the server and came back as Success.
    result = check_params(_capability(), messages, CompletionConfig())
    assert result.failure().kind is ErrorKind.invalid_request
