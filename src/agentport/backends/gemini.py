"""Gemini CLI (`gemini --output-format stream-json`), as one `BackendSpec`.

Facts from cli-contracts.md §3 (gemini-cli 0.61.0): a non-TTY stdin alone runs headless (we
feed the prompt there); an untrusted folder exits 55 before any request (we pass
`--skip-trust`); the endpoint is `GOOGLE_GEMINI_BASE_URL` + `GEMINI_API_KEY` with
`security.auth.selectedType = "gemini-api-key"` in `~/.gemini/settings.json`; retries are
`general.maxAttempts` there; the exit code on an API error is the HTTP status mod 256
(500→244, 429→173, 401→145), 1 for transport errors; stream-json ends with a `result` whose
`status` is `success` or `error`; assistant text comes as deltas; usage is in `result.stats`;
there is no schema flag (output_schema is TRANSLATED); like claude it loses the end of a
large output on a pipe, so it writes to a file the runner follows.

Options (`[llm.gemini]`): `base_url`, `api_key`, `approval_mode` (overrides the sandbox
mapping), `extra_args`, plus the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import (
    AgentEvent,
    BackendCapability,
    ErrorKind,
    EventType,
    ProviderError,
    Sandbox,
    Usage,
)
from ._classify import kind_from_status, kind_from_text
from ._cli import CliAdapter, CliRuntime
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_int,
    text_after_last_tool,
)

if TYPE_CHECKING:  # settings arrive from the factory; config sits above backends
    from ..config import LLMSettings

__all__ = ["SPEC", "build", "classify", "create_adapter", "create_runtime", "decode"]

_APPROVAL = {
    Sandbox.read_only: "default",
    Sandbox.workspace_write: "auto_edit",
    Sandbox.full: "yolo",
}
_HEADLESS_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
# Documented exit codes (0 ok, 1 general, 42 input, 53 turn limit) and observed ones (55).
_EXIT_KIND = {
    41: ErrorKind.auth_required,
    42: ErrorKind.invalid_request,
    44: ErrorKind.config,
    52: ErrorKind.config,
    53: ErrorKind.process_failed,
    55: ErrorKind.config,
}
# HTTP status mod 256 as exit code (cli-contracts.md §3)
_STATUS_BY_EXIT = {(s & 0xFF): s for s in (400, 401, 403, 404, 413, 429, 500, 502, 503, 504)}


def build(call: CliCall) -> Invocation:
    """argv: `gemini --output-format stream-json --skip-trust [-m M] [--approval-mode A]`;
    the prompt goes through stdin."""
    opts, config = call.options, call.config
    argv = [call.executable, "--output-format", "stream-json", "--skip-trust"]
    if config.model:
        argv += ["-m", config.model]
    approval = opts.get("approval_mode") or (
        _APPROVAL[config.tools.sandbox] if config.tools.sandbox else None
    )
    if approval:
        argv += ["--approval-mode", str(approval)]
    argv += [str(a) for a in opts.get("extra_args", ())]
    env: dict[str, str] = {}
    if opts.get("base_url"):
        env["GOOGLE_GEMINI_BASE_URL"] = str(opts["base_url"]).rstrip("/")
    if "api_key" in opts:
        env["GEMINI_API_KEY"] = str(opts["api_key"])
    return Invocation(tuple(argv), env, call.prompt.encode("utf-8"))


def _usage(stats: Any) -> Usage:
    s = as_dict(stats)
    return Usage(
        input_tokens=as_int(s.get("input_tokens")),
        output_tokens=as_int(s.get("output_tokens")),
        cached_tokens=as_int(s.get("cached")),
    )


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event (None for the echoed user message)."""
    kind = obj.get("type")
    if kind == "init":
        meta = {"session_id": obj.get("session_id"), "model": obj.get("model")}
        return AgentEvent(type=EventType.init, raw=obj, metadata=meta)
    if kind == "message":
        if obj.get("role") != "assistant":
            return None
        return AgentEvent(type=EventType.text, content=str(obj.get("content", "")), raw=obj)
    if kind == "tool_use":
        meta = {
            "tool": obj.get("tool_name"),
            "id": obj.get("tool_id"),
            "input": obj.get("parameters"),
        }
        return AgentEvent(
            type=EventType.tool_call, content=str(obj.get("tool_name")), raw=obj, metadata=meta
        )
    if kind == "tool_result":
        failed = obj.get("status") != "success"
        content = obj.get("output") or as_dict(obj.get("error")).get("message", "")
        return AgentEvent(
            type=EventType.tool_result, content=str(content), raw=obj, is_error=failed,
            metadata={"id": obj.get("tool_id")},
        )  # fmt: skip
    if kind == "error":
        message = str(obj.get("message", ""))
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, metadata={"warning": message}
        )
    if kind == "result":
        failed = obj.get("status") != "success"
        message = str(as_dict(obj.get("error")).get("message", "")) if failed else ""
        meta = {"usage": _usage(obj.get("stats")), "terminal": True}
        return AgentEvent(
            type=EventType.usage, content=message, raw=obj, is_error=failed, metadata=meta
        )
    return None


def classify(outcome: RunOutcome) -> ProviderError | None:
    """Exit code first (HTTP status mod 256, then the documented codes), then the `result`
    error message, then stderr."""
    tail = outcome.stderr_tail[-4000:]
    result = next((e for e in reversed(outcome.events) if e.metadata.get("terminal")), None)
    if result is not None and not result.is_error and outcome.exit_code in (0, None):
        return None
    if result is not None and not result.is_error and (outcome.exit_code or 0) < 0:
        return None  # we stopped it after its final event
    code = outcome.exit_code
    status = _STATUS_BY_EXIT.get(code) if code is not None and code > 1 else None
    message = (result.content if result is not None else "") or _stderr_error(tail)
    kind = kind_from_status(status)
    if kind is None and code in _EXIT_KIND:
        kind = _EXIT_KIND[code]
        if code == 55:
            message = message or "the working folder is not trusted (exit 55)"
    if kind is None:
        kind = kind_from_text(message) or (
            ErrorKind.process_failed if code not in (0, None) else ErrorKind.bad_output
        )
    return ProviderError(
        kind,
        message or f"gemini failed (exit {code})",
        status=status,
        exit_code=code,
        stderr_tail=tail,
    )


def _stderr_error(tail: str) -> str:
    # `-o json` prints {"error": {"message": ...}} on stderr; stream-json mostly does not.
    for line in reversed(tail.strip().splitlines()):
        line = line.strip()
        if line.startswith('"message"'):
            return line.split(":", 1)[1].strip().strip(",").strip('"')
    lines = tail.strip().splitlines()
    return lines[-1].strip() if lines else ""


SPEC = BackendSpec(
    name="gemini",
    build=build,
    decode=decode,
    classify=classify,
    final_text=text_after_last_tool,
    extra_env=_HEADLESS_ENV,
    stdout_to_file=True,  # on a pipe it cuts an 8 MiB answer short and exits 0
)


def create_adapter(capability: BackendCapability, settings: LLMSettings) -> CliAdapter:
    return CliAdapter(SPEC, capability, settings)


def create_runtime(capability: BackendCapability, settings: LLMSettings) -> CliRuntime:
    return CliRuntime(SPEC, capability, settings)
