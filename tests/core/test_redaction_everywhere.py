"""Secrets never leave agentport: errors, warnings, raw text, details, `complete --json`,
stderr, research reports, resume caches and logs are redacted."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import agentport.factory
from _deep_research_util import PASS, scope
from agentport.cli import app
from agentport.core import (
    CompletionResponse,
    ErrorKind,
    ProviderError,
    _errors,
    redact,
    register_secret,
)
from agentport.testing import FakeModelServer, HttpFault, ScriptedAdapter, TextReply

runner = CliRunner()

ENV_KEY = "sk-planted-user-key-7f3a9c2e1b"
ENV_TOKEN = "Zq8vN3kLpW2xR7tY"  # no recognisable shape: only its variable's name gives it away

SHAPES = {
    "openai": "sk-proj-{}",
    "anthropic": "sk-ant-api03-{}",
    "github": "ghp_{}",
    "github oauth": "gho_{}",
    "github fine-grained": "github_pat_11{}",
    "slack": "xoxb-{}",
    "hugging face": "hf_{}",
    "google": "AIza{}",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
    "bearer": "Bearer {}",
}
body = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=24)
prose = st.text(max_size=80)
separator = st.sampled_from([" ", "\n", "\t", '"', "'", "(", ": ", "=", ",", "<", "> "])


@settings(max_examples=300, deadline=None)
@given(
    prefix=prose,
    suffix=prose,
    secret=st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        min_size=8,
        max_size=40,
    ),
)
def test_a_registered_secret_inside_any_text_never_survives(
    prefix: str, suffix: str, secret: str
) -> None:
    register_secret(secret)
    try:
        out = redact(prefix + secret + suffix)
    finally:  # a registered secret is process-wide: do not mask other tests' output
        _errors._registered.discard(secret)
    assert secret not in out


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(SHAPES)), token=body, left=prose, right=prose, sep=separator)
def test_a_token_of_a_known_shape_never_survives(
    kind: str, token: str, left: str, right: str, sep: str
) -> None:
    assume(token not in left + right)
    secret = SHAPES[kind].format(token, token)
    out = redact(left + sep + secret + sep + right)
    assert token not in out


@settings(max_examples=500, deadline=None)
@given(
    st.text(max_size=200)
    | st.builds(
        "".join,
        st.lists(
            st.sampled_from(
                [
                    "sk-",
                    "abcdefgh12",
                    "token=",
                    "://",
                    "u:p@",
                    "Bearer ",
                    " ",
                    "ghp_",
                    "*",
                    "=",
                    "xoxb-",
                    "eyJabcdefgh",
                    ".",
                    "AKIA",
                    "ABCDEFGHIJKLMNOP",
                    ENV_TOKEN,
                    "hf_",
                    "\n",
                ]
            ),
            max_size=12,
        ),
    )
)
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_aws_key_id_and_url_credentials_are_masked() -> None:
    out = redact("id AKIAIOSFODNN7EXAMPLE at https://alice:s3cr3t-pass@db.example.com/x")
    assert "IOSFODNN7EXAMPLE" not in out
    assert "s3cr3t-pass" not in out
    assert "alice" not in out
    assert "db.example.com/x" in out


def test_ordinary_words_are_left_alone() -> None:
    text = "the desk-management task-runner uses a token bucket; see https://example.com/a:b"
    assert redact(text) == text


def test_secret_named_environment_values_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to mask without mangling prose
    assert redact(f"x{ENV_TOKEN}y abc") == "x***y abc"


def test_environment_changes_are_seen_by_the_next_redaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the scan of the environment is kept until the environment changes: set, changed, unset
    monkeypatch.delenv("MY_SERVICE_TOKEN", raising=False)
    assert redact(f"x {ENV_TOKEN} y") == f"x {ENV_TOKEN} y"
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)
    assert ENV_TOKEN not in redact(f"x {ENV_TOKEN} y")
    other = ENV_TOKEN[::-1]
    monkeypatch.setenv("MY_SERVICE_TOKEN", other)
    assert redact(f"x {ENV_TOKEN} y") == f"x {ENV_TOKEN} y"
    assert other not in redact(f"x {other} y")
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    assert redact(f"x {other} y") == f"x {other} y"


def test_provider_error_redacts_raw_text_stderr_and_nested_details(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    error = ProviderError(
        ErrorKind.schema_mismatch,
        f"bad {ENV_KEY}",
        raw_text=f"the key is {ENV_KEY}",
        stderr_tail=f"auth {ENV_KEY}",
        details={"body": {"echo": [f"k={ENV_KEY}", {"deep": ENV_KEY}]}, ENV_KEY: 1},
    )
    dumped = repr(vars(error)) + str(error)
    assert ENV_KEY not in dumped


def test_response_warnings_and_raw_extra_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    response = CompletionResponse(
        content="ok", warnings=(f"stderr: {ENV_KEY}",), raw={"extra": {"s": [ENV_KEY]}}
    )
    assert ENV_KEY not in response.model_dump_json()


# ---- end to end: plant the key, grep every byte agentport writes -----------------------------


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(shutdown_timeout=1.0) as srv:
        yield srv


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _assert_clean(*blobs: str | bytes, folder: Path | None = None) -> None:
    texts = [b.decode("utf-8", "replace") if isinstance(b, bytes) else b for b in blobs]
    if folder is not None and folder.exists():
        texts += [p.read_text("utf-8", "replace") for p in folder.rglob("*") if p.is_file()]
    for text in texts:
        assert ENV_KEY not in text
        assert ENV_TOKEN not in text


def _user_endpoint(url: str) -> None:
    Path(os.environ["AGENTPORT_CONFIG_FILE"]).write_text(
        f'[llm.openai_compat]\nbase_url = "{url}"\nmodel = "fake-model"\n', encoding="utf-8"
    )


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_complete_never_prints_an_echoed_key(
    server: FakeModelServer, planted: Path, as_json: bool
) -> None:
    _user_endpoint(server.openai_base_url)
    server.reply(TextReply(f"You sent {ENV_KEY} and {ENV_TOKEN}."))
    args = ["complete", "hi", "-b", "openai_compat"] + (["--json"] if as_json else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "You sent" in result.stdout  # the answer itself arrived
    assert server.requests[0].header("authorization") == f"Bearer {ENV_KEY}"
    _assert_clean(result.stdout, result.stderr, folder=planted)


def test_complete_error_never_prints_an_echoed_key(server: FakeModelServer, planted: Path) -> None:
    _user_endpoint(server.openai_base_url)
    server.set_default(HttpFault(401, f"invalid api key {ENV_KEY} (token {ENV_TOKEN})"))
    result = runner.invoke(app, ["complete", "hi", "-b", "openai_compat", "--json"])
    assert result.exit_code == 1
    assert "invalid api key" in result.stderr
    _assert_clean(result.stdout, result.stderr, folder=planted)


def _echoing_model() -> ScriptedAdapter:
    leak = f"{ENV_KEY} {ENV_TOKEN}"
    llm = ScriptedAdapter()
    llm.add(scope(3), label="scope")
    llm.add({"results": [{"url": "[1]", "title": leak, "relevance": "high"}]}, label="search")
    claim = {"claim": f"The key is {leak}.", "quote": "the key", "importance": "central"}
    llm.add({"sourceQuality": "primary", "claims": [claim]}, label="extract")
    llm.add(PASS, label="verify")
    finding = {
        "claim": f"The key is {leak}.",
        "confidence": "medium",
        "sources": ["corpus://leak.md/0"],
        "evidence": leak,
    }
    synthesis = {"summary": f"done {leak}", "findings": [finding], "caveats": leak}
    llm.add(synthesis | {"openQuestions": [leak]}, label="synthesis")
    return llm


@pytest.mark.parametrize("as_json", [False, True], ids=["markdown", "json"])
def test_research_report_cache_and_output_never_hold_the_key(
    planted: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    docs = planted / "docs"
    docs.mkdir()
    (docs / "leak.md").write_text(f"# Leak\n\nthe key is {ENV_KEY} {ENV_TOKEN}\n", "utf-8")
    model = _echoing_model()

    def create(backend: str | None = None, **_: Any) -> ScriptedAdapter:
        return model

    monkeypatch.setattr(agentport.factory, "create_llm_adapter", create)
    out = planted / "report.out"
    args = ["research", "key?", "-b", "scripted", "--corpus", str(docs), "--out", str(out), "-q"]
    result = runner.invoke(app, args + (["--json"] if as_json else []))
    assert result.exit_code in (0, 1), result.output
    assert out.exists()
    if as_json:
        json.loads(out.read_text("utf-8"))  # redaction kept the report valid JSON
    assert "***" in out.read_text("utf-8")
    _assert_clean(result.stdout, result.stderr, out.read_bytes(), folder=planted / "cache")


def test_deeprefine_trace_and_logs_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentport.workflows.deeprefine._workflow import dump_trace

    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    data = dump_trace({"interaction_history": [{"answer": f"key {ENV_KEY}"}]})
    assert ENV_KEY.encode() not in data
    json.loads(data)
