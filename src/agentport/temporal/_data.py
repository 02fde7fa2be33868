"""What crosses Temporal's wire for one `complete()` call, and the retry rule per ErrorKind.

Pure (no I/O): usable from workflow code inside the sandbox and testable without a server.
The input is a closed type (`CompleteInput`, see `_inputs`): messages as `{"role",
"content"}` dicts, the call's settings as a `CallConfig` (the `CompletionConfig` fields that
name or narrow, as the caller set them; the worker lowers them to its own with
`CallConfig.narrowed`), the adapter's model as `CallSettings`. The output is JSON data: the
`Result` as either a `CompletionResponse` dump or a `ProviderError` dict.
"""

# No `from __future__ import annotations`: Temporal's converter resolves these dataclasses'
# hints inside the workflow sandbox, whose module table cannot evaluate string annotations.
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, Field
from returns.result import Failure, Result, Success

from ..core import (
    Attempt,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    IgnoredPolicy,
    Message,
    MessageRole,
    Part,
    ProviderError,
    ReasoningEffort,
    ToolPolicy,
    Usage,
)
from ._inputs import BackendName, Closed, Label, ModelName, Seconds

__all__ = [
    "CallConfig",
    "CallSettings",
    "CompleteInput",
    "CompleteOutput",
    "config_from_dict",
    "config_to_dict",
    "error_from_dict",
    "error_to_dict",
    "failure_line",
    "messages_to_dicts",
    "retry_decision",
]


class CallConfig(Closed):
    """The per-call settings a request may make: the `CompletionConfig` fields that name (a
    model, an output schema, choices, a label) or narrow (timeouts, token and turn caps,
    schema retries). No `tools`, `cwd` or `session_id`: a call on a worker runs with no
    tools, in a fresh private folder, as a new session (`narrowed`)."""

    model: ModelName | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: ReasoningEffort | None = None
    output_schema: dict[str, Any] | None = None
    choices: tuple[Annotated[str, Field(max_length=4096)], ...] | None = Field(
        default=None, min_length=1, max_length=10_000
    )
    schema_retries: int = Field(default=2, ge=0)
    schema_strict: bool = True
    max_turns: int | None = Field(default=None, gt=0)
    startup_timeout_s: Seconds | None = None
    idle_timeout_s: Seconds | None = None
    total_timeout_s: Seconds | None = None
    attempt_timeout_s: Seconds | None = None
    web_search: bool = False
    on_ignored: IgnoredPolicy = "warn"
    label: Label | None = None

    @classmethod
    def of(cls, config: CompletionConfig | None) -> "CallConfig":
        """The request for *config* (the fields the caller set). `ProviderError
        (unsupported)` when it asks for what only the worker's configuration decides:
        tools beyond none, a working folder, a session to resume."""
        if config is None:
            return cls()
        asked = config.model_fields_set
        why = [
            name
            for name, ok in (
                ("tools", "tools" not in asked or config.tools == ToolPolicy.none()),
                ("cwd", config.cwd is None),
                ("session_id", config.session_id is None),
                # tools of the caller's process: a worker runs only what it configures
                ("mcp_servers", not config.mcp_servers),
                ("functions", not config.functions),
            )
            if not ok
        ]
        if why:
            raise ProviderError(
                ErrorKind.unsupported,
                f"a call run on a Temporal worker cannot set {', '.join(why)}: it runs with "
                "no tools, in a fresh folder, as a new session (docs/deployment.md)",
            )
        data = config_to_dict(config)
        for name in ("tools", "cwd", "session_id", "mcp_servers", "functions"):
            data.pop(name, None)
        return cls.model_validate(data)

    def narrowed(self, own: CompletionConfig) -> CompletionConfig:
        """The call's `CompletionConfig`: the fields this request set, each timeout and cap
        no larger than the worker's own (*own*: its `[llm]` defaults), `on_ignored="fail"`
        when the worker says so. Everything else (tools: none, cwd: a fresh folder, no
        session) is the worker's default."""
        # None is "not set": a request cannot lift the worker's cap by unsetting it
        fields = {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is not None}
        for name in ("startup_timeout_s", "idle_timeout_s", "total_timeout_s", "attempt_timeout_s",
                     "max_tokens", "max_turns", "schema_retries"):  # fmt: skip
            mine = getattr(own, name)
            if fields.get(name) is not None and mine is not None:
                fields[name] = min(fields[name], mine)
        if own.on_ignored == "fail":
            fields["on_ignored"] = "fail"
        return CompletionConfig.model_validate(fields)


class CallSettings(Closed):
    """The `[llm]` settings a request may name for the worker's adapter: the model."""

    model: ModelName | None = None


class MessageData(Closed):
    """One message as a request carries it (`messages_to_dicts`)."""

    role: MessageRole
    content: str
    parts: tuple[Part, ...] = ()


class CompleteInput(Closed):
    """The `complete` activity's input (a closed type: see `_inputs`).

    Attributes:
        backend: backend name, alias or chain the worker serves (a chain runs as one call
            on the chain's queue, see `queue_for`).
        messages: each message as JSON data, in order (`messages_to_dicts`).
        config: the call's settings (`CallConfig.of(CompletionConfig)`).
        settings: the model for the worker's adapter (`CallSettings`); the worker's own
            configuration files decide everything else.
        call_id: the caller's deterministic id of the call (diagnostics, heartbeats).
    """

    backend: BackendName
    messages: list[MessageData] = Field(max_length=10_000)
    config: CallConfig = CallConfig()
    settings: CallSettings = CallSettings()
    call_id: Label = ""

    def parsed_messages(self) -> list[Message]:
        """The messages as `Message`s."""
        return [Message(role=m.role, content=m.content, parts=m.parts) for m in self.messages]


@dataclass(frozen=True)
class CompleteOutput:
    """The `complete` activity's output: the `Result` as data. Exactly one of `ok`
    (`CompletionResponse.model_dump(mode="json")`) and `error` (`error_to_dict`) is set."""

    ok: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @classmethod
    def of(cls, result: Result[CompletionResponse, ProviderError]) -> "CompleteOutput":
        if isinstance(result, Success):
            return cls(ok=result.unwrap().model_dump(mode="json"))
        return cls(error=error_to_dict(result.failure()))

    def to_result(self, output_schema: Any = None) -> Result[CompletionResponse, ProviderError]:
        """The `Result` again. With a pydantic *output_schema* class (the one the caller
        put in its config), `parsed` is validated back into an instance of it; a dict that
        no longer validates is `Failure(schema_mismatch)`."""
        if self.error is not None or self.ok is None:
            return Failure(error_from_dict(self.error or {"kind": "bad_output"}))
        response = CompletionResponse.model_validate(self.ok)
        if (
            isinstance(output_schema, type)
            and issubclass(output_schema, BaseModel)
            and response.parsed is not None
        ):
            try:
                parsed = output_schema.model_validate(response.parsed)
            except ValueError as exc:
                return Failure(
                    ProviderError(
                        ErrorKind.schema_mismatch,
                        f"answer does not match {output_schema.__name__}: {exc}",
                        backend=response.backend,
                        raw_text=response.content,
                    )
                )
            response = response.model_copy(update={"parsed": parsed})
        return Success(response)


def messages_to_dicts(
    messages: Sequence[Message] | Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """*messages* (`Message`s or their dicts, validated) as JSON data: `{"role", "content"}`,
    plus `parts` (images as base64) when a message has any. Temporal limits a payload's size
    (2 MB by default): a workflow passing large images should pass references instead."""
    out: list[dict[str, Any]] = []
    for item in messages:
        message = item if isinstance(item, Message) else Message.model_validate(item)
        data: dict[str, Any] = dict(message.to_dict())
        if message.parts:
            data["parts"] = [part.model_dump(mode="json") for part in message.parts]
        out.append(data)
    return out


def config_to_dict(config: CompletionConfig | None) -> dict[str, Any]:
    """The fields of *config* the caller set, as JSON data. A pydantic `output_schema` class
    travels as its JSON schema (`CompleteOutput.to_result` validates `parsed` back into it)."""
    if config is None:
        return {}
    if config.on_permission is not None:  # a function of this process: no JSON form
        raise ValueError(
            "CompletionConfig.on_permission cannot travel to a Temporal worker (a function "
            "of this process); set the hook in the worker's own code"
        )
    data = config.model_dump(
        mode="json", exclude_unset=True, exclude={"output_schema", "on_permission"}
    )
    schema = config.output_schema
    if "output_schema" in config.model_fields_set:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            data["output_schema"] = schema.model_json_schema()
        else:
            data["output_schema"] = schema
    return data


def config_from_dict(data: dict[str, Any]) -> CompletionConfig:
    """`config_to_dict`'s inverse (the same fields set)."""
    return CompletionConfig.model_validate(data)


def error_to_dict(error: ProviderError) -> dict[str, Any]:
    """Every attribute of *error* as JSON data (already redacted by `ProviderError`)."""
    return {
        "kind": error.kind.value,
        "message": error.message,
        "backend": error.backend,
        "retryable": error.retryable,
        "retry_after": error.retry_after,
        "timeout": error.timeout,
        "exit_code": error.exit_code,
        "status": error.status,
        "stderr_tail": error.stderr_tail,
        "raw_text": error.raw_text,
        "details": dict(error.details),
        "attempts": [
            {
                "kind": a.kind.value,
                "duration_s": a.duration_s,
                "exit_code": a.exit_code,
                "backend": a.backend,
                "timeout": a.timeout,
            }
            for a in error.attempts
        ],
        "retry_at": error.retry_at.isoformat() if error.retry_at is not None else None,
        "window": error.window,
        "request_sent": error.request_sent,
        "mid_stream": error.mid_stream,
        "usage": error.usage.model_dump(mode="json"),
    }


def error_from_dict(data: dict[str, Any]) -> ProviderError:
    """`error_to_dict`'s inverse; unknown keys are ignored, a missing kind is `bad_output`."""
    retry_at = data.get("retry_at")
    return ProviderError(
        ErrorKind(data.get("kind") or "bad_output"),
        str(data.get("message") or "no message"),
        backend=str(data.get("backend") or ""),
        retryable=data.get("retryable"),
        retry_after=data.get("retry_after"),
        timeout=data.get("timeout"),
        exit_code=data.get("exit_code"),
        status=data.get("status"),
        stderr_tail=str(data.get("stderr_tail") or ""),
        raw_text=data.get("raw_text"),
        details=data.get("details") or {},
        attempts=[
            Attempt(
                kind=ErrorKind(a["kind"]),
                duration_s=float(a.get("duration_s", 0.0)),
                exit_code=a.get("exit_code"),
                backend=str(a.get("backend") or ""),
                timeout=a.get("timeout"),
            )
            for a in data.get("attempts") or ()
        ],
        retry_at=datetime.fromisoformat(retry_at) if retry_at else None,
        window=data.get("window"),
        request_sent=data.get("request_sent"),
        mid_stream=bool(data.get("mid_stream")),
        usage=Usage.model_validate(data.get("usage") or {}),
    )


def retry_decision(error: ProviderError, now: datetime) -> tuple[bool, timedelta | None]:
    """`(retry, delay)`: how Temporal treats *error* (the rule of the `complete` activity):

    - `(False, None)`: a value, never retried: every kind whose `retryable` is False
      (not_installed, auth_required, budget_exhausted, context_length, invalid_request,
      bad_output, schema_mismatch, process_failed, unsupported, config, and a timeout of
      the whole call's deadline), and `quota_exhausted` without a known reset time (a
      failover chain decides, not a blind wait);
    - `(True, timedelta)`: retried no sooner than that: `retry_after` seconds of a rate limit,
      or until `retry_at` of an exhausted usage window (`quota_exhausted`), rounded up to
      whole seconds;
    - `(True, None)`: retried after the retry policy's own back-off (a retryable error that gave
      no time: server_error, network, an attempt timeout, a rate limit without
      retry_after).

    *now* is an aware datetime (the activity's clock; `retry_at` is aware).
    """
    if error.kind is ErrorKind.quota_exhausted:
        if error.retry_at is None:
            return False, None
        wait = (error.retry_at - now).total_seconds()
        return True, timedelta(seconds=max(1, math.ceil(wait)))
    if not error.retryable:
        return False, None
    if error.retry_after is not None:
        return True, timedelta(seconds=max(0.0, float(error.retry_after)))
    return True, None


def failure_line(exc: BaseException) -> str:
    """One line naming what really failed in a Temporal failure chain: its innermost cause
    (an activity's own error under "Activity task failed", a question's under "Child
    Workflow execution failed"), with the error's type when the text alone does not say it."""
    deepest = exc
    while deepest.__cause__ is not None:
        deepest = deepest.__cause__
    said = getattr(deepest, "message", None)  # a Temporal failure's own text, untyped
    text = str(said if isinstance(said, str) else deepest).strip() or type(deepest).__name__
    text = text.splitlines()[0]
    kind = getattr(deepest, "type", None)  # an ApplicationError's original exception class
    if not isinstance(kind, str) or not kind or kind.startswith("agentport.") or kind in text:
        return text
    return f"{kind}: {text}"
