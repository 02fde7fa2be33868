"""Chat Completions wire format for `openai_compat` (pure: no I/O).

The `[llm.openai_compat]` table (`EndpointOptions`), request building (`build_request`),
HTTP and in-stream error classification (`classify_http`, `classify_stream_error`,
`parse_retry_after`) and response parsing (`parse_chat_body`, `ChatStreamAccumulator`).
Private: the public names are re-exported by `agentport.backends.openai_compat`, whose module
docstring gives the configuration order and the classification rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from returns.result import Failure, Result, Success

from ..core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    RawInfo,
    Usage,
    as_quota,
    billing_said,
    bounded,
    wait_from_headers,
)
from ._classify import CONTEXT_WORDS, kind_from_text

__all__ = [
    "ChatStreamAccumulator",
    "EndpointOptions",
    "build_request",
    "chat_message",
    "classify_http",
    "classify_stream_error",
    "parse_chat_body",
    "parse_retry_after",
]


class EndpointOptions(BaseModel):
    """The `[llm.openai_compat]` table.

    Attributes:
        base_url: the API root that `/chat/completions` is appended to, e.g.
            `http://127.0.0.1:8080/v1` (llama-server), `http://127.0.0.1:11434/v1` (Ollama).
        api_key: sent as `Authorization: Bearer <key>`; optional for local servers.
        model: the model id when neither the call nor `llm.model` names one; when no model
            is known the field is left out (llama-server and vLLM then use their loaded model).
        structured_output: `json_schema` sends `response_format` json_schema (NATIVE);
            `prompt` puts the schema in the prompt and validates (TRANSLATED), for servers
            that reject or ignore `response_format`.
        strict_schema: the `strict` flag of the json_schema response format; when true the
            schema is sent normalised to OpenAI's strict subset (`structured.strict_schema`)
            and the answer mapped back (`restore_answer`).
        stream: stream the HTTP response (enables the startup and idle timeouts).
        stream_usage: ask for a usage chunk (`stream_options.include_usage`).
        max_tokens_field: `max_tokens`, or `max_completion_tokens` for OpenAI's newer models.
        headers: extra HTTP headers (e.g. an organisation or gateway header).
        connect_timeout_s: TCP/TLS connect budget in seconds.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    structured_output: Literal["json_schema", "prompt"] = "json_schema"
    strict_schema: bool = False
    stream: bool = True
    stream_usage: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    headers: dict[str, str] = Field(default_factory=dict)
    connect_timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip().rstrip("/")
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:8080/v1, got {v!r}")
        return v


# ---- request building (pure) ----------------------------------------------------------------


def chat_message(message: Message) -> dict[str, Any]:
    """*message* in Chat Completions form: `{"role", "content"}`, the content a list of
    `text` and `image_url` (a base64 data URL) parts when the message has images (OpenAI's
    vision input; LiteLLM takes the same form for every provider)."""
    if not message.images:
        return message.to_dict()
    content: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    content += [{"type": "image_url", "image_url": {"url": i.data_url}} for i in message.images]
    return {"role": message.role.value, "content": content}


def build_request(
    messages: Sequence[Message],
    config: CompletionConfig,
    options: EndpointOptions,
    *,
    json_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body for one call.

    `json_schema` (already a JSON-schema dict) adds `response_format` json_schema.
    """
    body: dict[str, Any] = {"messages": [chat_message(m) for m in messages]}
    model = config.model or options.model
    if model:
        body["model"] = model
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.reasoning_effort is not None:
        body["reasoning_effort"] = config.reasoning_effort
    if config.max_tokens is not None:
        body[options.max_tokens_field] = config.max_tokens
    if json_schema is not None:
        title = json_schema.get("title")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", title if isinstance(title, str) else "") or "answer"
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": name[:64],
                "schema": dict(json_schema),
                "strict": options.strict_schema,
            },
        }
    if options.stream:
        body["stream"] = True
        if options.stream_usage:
            body["stream_options"] = {"include_usage": True}
    return body


# ---- error classification (pure) ------------------------------------------------------------

_USAGE_LIMIT = re.compile(r"usage limit", re.IGNORECASE)


def _quota_words(text: str) -> bool:
    """The body says a usage window or a billing balance is used up (`core._billing`'s table:
    the one list of billing words every backend reads)."""
    return billing_said(text) is not None or _USAGE_LIMIT.search(text) is not None


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` (seconds or an HTTP date);
    None when absent or not a finite wait of at most 31 days (`core._wait.wait_from_headers`,
    the one parser of a wait)."""
    return wait_from_headers(headers, now=now)


def _error_text(body: str) -> tuple[str, str]:
    """(message, code) from an OpenAI-style error body, or the raw text."""
    try:
        data = bounded.loads(body)
    except ValueError:
        return body.strip()[:500] or "(empty body)", ""
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)[:500]
        code = str(err.get("code") or err.get("type") or "")
        return str(message)[:500], code
    return str(err)[:500], ""


def classify_http(
    status: int, body: str, headers: Mapping[str, str] | None = None, backend: str = ""
) -> ProviderError:
    """One HTTP error response -> `ProviderError`; status first, then the body's text."""
    headers = headers or {}
    message, code = _error_text(body)
    text = f"{code} {message}"
    common: dict[str, Any] = {"backend": backend, "status": status}
    if code:
        common["details"] = {"code": code}
    if status in (401, 403):  # a 403 that says the balance is used up: quota_exhausted
        denied = ProviderError(ErrorKind.auth_required, f"HTTP {status}: {message}", **common)
        return as_quota(denied, body=body, headers=headers)
    if status in (402, 429) or (status == 400 and _quota_words(text)):
        quota = status == 402 or _quota_words(text)
        limited = ProviderError(
            ErrorKind.rate_limited,
            f"{'quota exhausted' if quota else 'rate limited'}: {message}",
            retryable=not quota,
            retry_after=parse_retry_after(headers),
            **common,
        )
        # usage_limit_reached / RESOURCE_EXHAUSTED with a reset: quota_exhausted
        return as_quota(limited, body=body, headers=headers)
    if status in (400, 413, 422) and CONTEXT_WORDS.search(text):
        return ProviderError(ErrorKind.context_length, message, **common)
    named = kind_from_text(text)  # the body's own code or words: "model_not_found", ...
    if named in (ErrorKind.model_not_found, ErrorKind.content_filter) and status < 500:
        return ProviderError(named, f"HTTP {status}: {message}", **common)
    if status == 529 or named is ErrorKind.overloaded:
        return ProviderError(
            ErrorKind.overloaded, message, retry_after=parse_retry_after(headers), **common
        )
    if status == 404:
        return ProviderError(
            ErrorKind.config, f"HTTP 404 (check base_url and model): {message}", **common
        )
    if status == 408:
        # the server's own limit, not one of ours (`timeout` names agentport's limits)
        return ProviderError(ErrorKind.timeout, f"HTTP 408: {message}", **common)
    if status >= 500:
        return ProviderError(
            ErrorKind.server_error, message, retry_after=parse_retry_after(headers), **common
        )
    return ProviderError(ErrorKind.invalid_request, message, **common)


def classify_stream_error(payload: Mapping[str, Any], backend: str = "") -> ProviderError:
    """An error object inside a 200 response (streamed or not): its numeric `code` or
    `status` when it has one, else the text; unknown errors are server errors (retryable)."""
    err = payload.get("error")
    inner = err if isinstance(err, Mapping) else {}
    status = next((v for v in (inner.get("code"), inner.get("status")) if isinstance(v, int)), None)
    body = json.dumps(payload)
    if status is not None and status >= 400:
        return classify_http(status, body, backend=backend)
    if CONTEXT_WORDS.search(body):
        return classify_http(400, body, backend=backend)
    if _quota_words(body) or re.search(r"rate.?limit", body, re.IGNORECASE):
        return classify_http(429, body, backend=backend)
    return classify_http(500, body, backend=backend)


# ---- response parsing (pure) ----------------------------------------------------------------


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        cached_tokens=int(cached or 0),
    )


#: a Chat Completions answer the provider's filter cut short, kept with this warning
FILTERED_WARNING = (
    "the answer was cut by the provider's content filter (finish_reason content_filter)"
)


def _empty(finish: str | None, backend: str) -> ProviderError:
    if finish == "content_filter":
        return ProviderError(
            ErrorKind.content_filter,
            "the provider's content filter blocked the answer (finish_reason content_filter)",
            backend=backend,
            retryable=False,
            details={"finish_reason": finish},
        )
    hint = "; raise max_tokens" if finish == "length" else ""
    return ProviderError(
        ErrorKind.bad_output, f"empty answer (finish_reason={finish}){hint}", backend=backend
    )


def _filtered(finish: str | None) -> tuple[str, ...]:
    return (FILTERED_WARNING,) if finish == "content_filter" else ()


def parse_chat_body(data: Any, backend: str = "") -> Result[CompletionResponse, ProviderError]:
    """A non-streamed Chat Completions body -> `CompletionResponse` (content, model, usage,
    finish_reason); `bad_output` when it has no answer."""
    if isinstance(data, dict) and "error" in data and not data.get("choices"):
        return Failure(classify_stream_error(data, backend))
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return Failure(
            ProviderError(ErrorKind.bad_output, "no choices in the response", backend=backend)
        )
    first = choices[0]
    message = first.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    finish = first.get("finish_reason")
    if not content:
        return Failure(_empty(finish, backend))
    return Success(
        CompletionResponse(
            content=str(content),
            model=data.get("model"),
            usage=_usage(data.get("usage")),
            finish_reason=finish,
            warnings=_filtered(finish),
            backend=backend,
            raw=RawInfo(extra={"id": data.get("id")} if data.get("id") else {}),
        )
    )


class ChatStreamAccumulator:
    """Folds the lines of a streamed Chat Completions response (server-sent events) into one
    answer. Feed every line; `feed` returns a `ProviderError` for an in-stream error event."""

    def __init__(self, backend: str = "") -> None:
        self.backend = backend
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.response_id: str | None = None
        self.usage = Usage()
        self.saw_done = False
        self.chunks = 0

    @property
    def done(self) -> bool:
        return self.saw_done

    def feed(self, line: str) -> ProviderError | None:
        line = line.strip()
        if not line.startswith("data:"):
            return None  # blank separators, `event:`/`id:` fields and `:` keep-alive comments
        payload = line[5:].strip()
        if payload == "[DONE]":
            self.saw_done = True
            return None
        try:
            chunk = bounded.loads(payload)
        except ValueError:
            return ProviderError(
                ErrorKind.bad_output, f"undecodable stream chunk: {payload[:200]}",
                backend=self.backend,
            )  # fmt: skip
        if not isinstance(chunk, dict):
            return None
        if "error" in chunk:
            return classify_stream_error(chunk, self.backend)
        self.chunks += 1
        self.model = chunk.get("model") or self.model
        self.response_id = chunk.get("id") or self.response_id
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict) and delta.get("content"):
                self.parts.append(str(delta["content"]))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return None

    def result(self) -> Result[CompletionResponse, ProviderError]:
        """The answer, or `network` (retryable) when the stream ended before its end."""
        if not self.saw_done and self.finish_reason is None:
            return Failure(
                ProviderError(
                    ErrorKind.network,
                    f"the stream ended before the answer was complete ({self.chunks} chunks)",
                    backend=self.backend,
                    raw_text="".join(self.parts) or None,
                )
            )
        content = "".join(self.parts)
        if not content:
            return Failure(_empty(self.finish_reason, self.backend))
        return Success(
            CompletionResponse(
                content=content,
                model=self.model,
                usage=self.usage,
                finish_reason=self.finish_reason,
                warnings=_filtered(self.finish_reason),
                backend=self.backend,
                raw=RawInfo(extra={"id": self.response_id} if self.response_id else {}),
            )
        )
