"""Every backend of the catalog, fed a provider's error text with keys in it, returns a
redacted `ProviderError`; and the forms Temporal writes into workflow history (the
`complete` activity's output payload, the `ApplicationError` of a retryable failure)
carry no key either.

The CLI backends run the real generic adapter against a fake executable that prints the
keys on stderr (and on stdout as non-JSON noise) and exits; acp the same as its agent
command; openai_compat and litellm against the fake model server answering an error body
with the keys; local through its crash classifier."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Result

from agentport import Message, create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    CompletionConfig,
    CompletionResponse,
    ProviderError,
    ToolPolicy,
    _errors,
    register_secret,
)
from agentport.testing import FakeModelServer, HttpFault

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell fakes"),
]

OPENAI_KEY = "sk-proj-Zq8vN3kLpW2xR7tYb4Hc9DfG"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_Zq8vN3kLpW2xR7tYb4Hc9DfG1a2b3c4d5e6f"
CONFIGURED = "Zq8vN3kLpW2xR7tY-configured"  # no shape: masked because it is registered
ENV_VALUE = "Hc9DfGb4Zq8vN3kL-env"  # no shape: masked because its variable's name says key
LEAKS = (OPENAI_KEY.removeprefix("sk-proj-"), AWS_SECRET, GITHUB[4:], CONFIGURED, ENV_VALUE)
# codex's line for a missing key: plain words, which must read as written
PLAIN = "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"
PROVIDER_TEXT = (
    PLAIN,
    f"Error: 401 Unauthorized: Incorrect API key provided: {OPENAI_KEY}",
    f"[default]\naws_secret_access_key = {AWS_SECRET}",
    f"git: https://x-access-token:{GITHUB}@github.com/o/r.git",
    f"using key {CONFIGURED} and {ENV_VALUE}",
)
FIELDS = (
    "message", "backend", "stderr_tail", "raw_text", "details", "attempts", "window",
)  # fmt: skip
DOUBLES = {"scripted", "echo"}  # test doubles: their errors are what the test scripts


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("MY_PROVIDER_API_KEY", ENV_VALUE)
    register_secret(CONFIGURED)
    yield
    _errors._registered.discard(CONFIGURED)  # process-wide: do not mask other tests


def assert_no_key(error: ProviderError) -> None:
    texts = {name: repr(getattr(error, name)) for name in FIELDS}
    texts |= {"str": str(error), "repr": repr(error)}
    for where, text in texts.items():
        for leak in LEAKS:
            assert leak not in text, f"{leak!r} survives in {where}: {text}"


def assert_no_key_in_history(result: Result[CompletionResponse, ProviderError]) -> None:
    """What the `complete` activity hands Temporal, serialized as Temporal does: the output
    payload (a failure as a value) and the failure of a retryable `ApplicationError`."""
    pytest.importorskip("temporalio")
    from temporalio.api.failure.v1 import Failure as FailureProto
    from temporalio.converter import DataConverter
    from temporalio.exceptions import ApplicationError

    from agentport.temporal._data import CompleteOutput, error_to_dict

    converter = DataConverter.default
    error = result.failure()
    written = [p.SerializeToString() for p in converter.payload_converter.to_payloads(
        [CompleteOutput.of(result)]
    )]  # fmt: skip
    proto = FailureProto()
    converter.failure_converter.to_failure(
        ApplicationError(str(error), error_to_dict(error), type=f"agentport.{error.kind.value}"),
        converter.payload_converter,
        proto,
    )
    written.append(proto.SerializeToString())
    history = b"".join(written)
    assert str(error.kind.value).encode() in history  # the error is in there
    for leak in LEAKS:
        assert leak.encode() not in history
        assert json.dumps(leak)[1:-1].encode() not in history  # escaped inside JSON


def _fake_cli(tmp_path: Path, name: str, *, exit_code: int) -> Path:
    exe = tmp_path / name
    said = "\n".join(PROVIDER_TEXT).replace("'", "'\\''")
    exe.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' '{said}' >&2\n"
        # stdout noise on a failure; nothing on a "success" (its empty answer is the error)
        + (f"printf '%s\\n' 'not json: {OPENAI_KEY}'\n" if exit_code else "")
        + f"exit {exit_code}\n"
    )
    exe.chmod(0o755)
    return exe


CLI_BACKENDS = sorted(
    c.name for c in all_backends() if c.kind == "cli" and c.name != "acp"
)  # fmt: skip


@pytest.mark.parametrize("exit_code", [1, 0])
@pytest.mark.parametrize("backend", CLI_BACKENDS)
async def test_every_cli_backend_redacts_a_provider_error(
    backend: str, exit_code: int, tmp_path: Path
) -> None:
    exe = _fake_cli(tmp_path, backend, exit_code=exit_code)
    llm = create_llm_adapter(backend, retry=False, **{backend: {"executable": str(exe)}})
    config = CompletionConfig(tools=ToolPolicy.cli_defaults())  # every CLI runs with it
    result = await llm.complete([Message.user("hi")], config)
    assert isinstance(result, Failure), result
    assert_no_key(result.failure())
    assert_no_key_in_history(result)
    error = result.failure()
    assert PLAIN in error.stderr_tail or PLAIN in error.message  # nothing else was masked


async def test_acp_redacts_its_agent_stderr(tmp_path: Path) -> None:
    exe = _fake_cli(tmp_path, "agent", exit_code=1)
    llm = create_llm_adapter("acp", retry=False, acp={"command": [str(exe)]})
    result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure), result
    assert_no_key(result.failure())
    assert_no_key_in_history(result)


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_openai_compat_redacts_an_error_body(status: int) -> None:
    with FakeModelServer(default="hi") as server:
        server.default = HttpFault(status, "\n".join(PROVIDER_TEXT))
        options = {"base_url": server.openai_base_url, "api_key": CONFIGURED, "model": "m"}
        llm = create_llm_adapter("openai_compat", retry=False, openai_compat=options)
        result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure), result
    assert_no_key(result.failure())
    assert_no_key_in_history(result)


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_litellm_redacts_an_error_body(status: int) -> None:
    pytest.importorskip("litellm")
    with FakeModelServer(default="hi") as server:
        server.default = HttpFault(status, "\n".join(PROVIDER_TEXT))
        options = {
            "model": "openai/m",
            "api_base": server.openai_base_url,
            "api_key": CONFIGURED,
        }
        llm = create_llm_adapter("litellm", retry=False, litellm=options)
        result = await llm.complete([Message.user("hi")])
    assert isinstance(result, Failure), result
    assert_no_key(result.failure())
    assert_no_key_in_history(result)


def test_local_redacts_its_worker_stderr() -> None:
    from agentport.backends._local_client import crash_error

    for code in (1, -11, None):
        error = crash_error(code, "\n".join(PROVIDER_TEXT), "loading /m.gguf")
        assert_no_key(error)
        assert_no_key_in_history(Failure(error))


def test_the_table_covers_every_backend_of_the_catalog() -> None:
    covered = {*CLI_BACKENDS, "acp", "openai_compat", "litellm", "local", *DOUBLES}
    assert {c.name for c in all_backends()} == covered
