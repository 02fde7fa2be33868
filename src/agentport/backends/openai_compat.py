"""`openai_compat`: any server that speaks OpenAI Chat Completions over HTTP.

vLLM, llama.cpp's `llama-server`, Ollama, LM Studio, OpenAI itself and gateways in front of
them. Completion only (no `AgentRuntime`).

Endpoint configuration, first found wins for each field:

1. the `[llm.openai_compat]` table (agentport.toml, pyproject, user config, or
   `create_llm_adapter("openai_compat", openai_compat={...})`), validated by `EndpointOptions`;
2. `AGENTPORT_OPENAI_BASE_URL` / `AGENTPORT_OPENAI_API_KEY`;
3. `OPENAI_BASE_URL` / `OPENAI_API_KEY` (what the openai SDK reads);
4. with an API key but no base URL: `https://api.openai.com/v1`. With neither, creating the
   adapter fails with `ErrorKind.config`.

The HTTP response is streamed (`stream = true`, the default) so that agentport enforces its own
timeouts whatever the server does: `startup_timeout_s` until the first streamed line,
`idle_timeout_s` between two lines, `total_timeout_s` for the whole call including schema
re-prompts. With `stream = false` only the connect and total budgets apply (a non-streaming
server sends nothing until the answer is complete).

HTTP errors are classified status first, body text second (`classify_http`): 401/403
auth_required; 429 rate_limited with `Retry-After` (quota exhaustion is not retryable); 400/413
context_length when the text says so, else invalid_request; 404 config; 408 timeout;
5xx server_error (retryable); a dropped connection or a stream cut before its end network
(retryable).
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from returns.result import Failure, Result, Success

from ..config import LLMSettings
from ..core import (
    BackendCapability,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    RawInfo,
    TimeoutWhich,
    Usage,
    check_params,
)
from ..structured import complete_constrained, schema_dict

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ChatStreamAccumulator",
    "EndpointOptions",
    "OpenAICompatAdapter",
    "build_request",
    "classify_http",
    "classify_stream_error",
    "create_adapter",
    "parse_chat_body",
    "parse_retry_after",
]

ENV_BASE_URL = ("AGENTPORT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
ENV_API_KEY = ("AGENTPORT_OPENAI_API_KEY", "OPENAI_API_KEY")
OPENAI_BASE_URL = "https://api.openai.com/v1"


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
        strict_schema: the `strict` flag of the json_schema response format (OpenAI's strict
            mode needs every property required and no additional properties).
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


@dataclass(frozen=True, slots=True)
class _Endpoint:
    base_url: str
    api_key: str | None
    options: EndpointOptions = field(default_factory=EndpointOptions)

    def headers(self) -> dict[str, str]:
        out = {"Accept": "application/json", **self.options.headers}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out


def _env(names: Sequence[str], environ: Mapping[str, str]) -> str | None:
    return next((environ[n] for n in names if environ.get(n)), None)


def load_options(
    table: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    section: str = "openai_compat",
) -> _Endpoint:
    """Validate the options table and fill base URL and key from the environment.

    Raises `ProviderError(config)` with one line naming the field.
    """
    environ = os.environ if environ is None else environ
    try:
        options = EndpointOptions.model_validate(dict(table))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(table)"
        raise ProviderError(
            ErrorKind.config, f"[llm.{section}] {loc}: {err['msg']}", backend=section
        ) from None
    api_key = options.api_key.get_secret_value() if options.api_key else _env(ENV_API_KEY, environ)
    base_url = options.base_url or _env(ENV_BASE_URL, environ)
    if base_url is None:
        if not api_key:
            raise ProviderError(
                ErrorKind.config,
                f"no endpoint configured: set [llm.{section}] base_url (e.g. "
                f"http://127.0.0.1:8080/v1) or {ENV_BASE_URL[0]}, or an API key for OpenAI",
                backend=section,
            )
        base_url = OPENAI_BASE_URL
    else:
        base_url = EndpointOptions(base_url=base_url).base_url or base_url
    return _Endpoint(base_url=base_url, api_key=api_key or None, options=options)


# ---- request building (pure) ----------------------------------------------------------------


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
    body: dict[str, Any] = {"messages": [m.to_dict() for m in messages]}
    model = config.model or options.model
    if model:
        body["model"] = model
    if config.temperature is not None:
        body["temperature"] = config.temperature
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

_CONTEXT = re.compile(
    r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long|"
    r"input is too long|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?(?:context|token)|"
    r"n_ctx|reduce the length",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|usage limit|billing|credit balance",
    re.IGNORECASE,
)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` (seconds or an HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def _error_text(body: str) -> tuple[str, str]:
    """(message, code) from an OpenAI-style error body, or the raw text."""
    try:
        data = json.loads(body)
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
    if status in (401, 403):
        return ProviderError(ErrorKind.auth_required, f"HTTP {status}: {message}", **common)
    if status == 429 or (status == 400 and _QUOTA.search(text)):
        quota = bool(_QUOTA.search(text))
        return ProviderError(
            ErrorKind.rate_limited,
            f"{'quota exhausted' if quota else 'rate limited'}: {message}",
            retryable=not quota,
            retry_after=parse_retry_after(headers),
            **common,
        )
    if status in (400, 413, 422) and _CONTEXT.search(text):
        return ProviderError(ErrorKind.context_length, message, **common)
    if status == 404:
        return ProviderError(
            ErrorKind.config, f"HTTP 404 (check base_url and model): {message}", **common
        )
    if status == 408:
        return ProviderError(ErrorKind.timeout, message, timeout="total", **common)
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
    if _CONTEXT.search(body):
        return classify_http(400, body, backend=backend)
    if _QUOTA.search(body) or re.search(r"rate.?limit", body, re.IGNORECASE):
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


def _empty(finish: str | None, backend: str) -> ProviderError:
    hint = "; raise max_tokens" if finish == "length" else ""
    return ProviderError(
        ErrorKind.bad_output, f"empty answer (finish_reason={finish}){hint}", backend=backend
    )


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
            chunk = json.loads(payload)
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
                backend=self.backend,
                raw=RawInfo(extra={"id": self.response_id} if self.response_id else {}),
            )
        )


# ---- the adapter ----------------------------------------------------------------------------


class OpenAICompatAdapter:
    """`LLMAdapter` over Chat Completions.

    Each call opens its own `httpx.AsyncClient` (so one adapter is usable from any event loop,
    asyncio or trio). `transport` replaces the network, for tests (`httpx.MockTransport`).
    """

    def __init__(
        self,
        capability: BackendCapability,
        endpoint: _Endpoint,
        default_config: CompletionConfig | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._capability = capability
        self._endpoint = endpoint
        self.default_config = default_config or CompletionConfig()
        self._transport = transport

    @property
    def backend(self) -> str:
        return self._capability.name

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        started = time.monotonic()
        config = config or self.default_config
        checked = check_params(self._capability, messages, config)
        if isinstance(checked, Failure):
            return checked
        warnings = checked.unwrap()
        with anyio.move_on_after(config.total_timeout_s) as total:
            result = await self._complete(messages, config)
        if total.cancelled_caught:
            return Failure(
                ProviderError(
                    ErrorKind.timeout,
                    f"no complete answer within total_timeout_s={config.total_timeout_s:g}",
                    backend=self.backend,
                    timeout="total",
                )
            )
        return result.map(
            lambda r: r.model_copy(
                update={
                    "warnings": warnings + r.warnings,
                    "duration_s": time.monotonic() - started,
                }
            )
        )

    async def _complete(
        self, messages: Sequence[Message], config: CompletionConfig
    ) -> Result[CompletionResponse, ProviderError]:
        native = (
            config.output_schema is not None
            and self._endpoint.options.structured_output == "json_schema"
        )
        schema = schema_dict(config.output_schema) if native and config.output_schema else None
        return await complete_constrained(
            lambda convo: self._call(convo, config, schema),
            messages,
            config,
            schema_native=native,
            backend=self.backend,
        )

    async def _call(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        schema: Mapping[str, Any] | None,
    ) -> Result[CompletionResponse, ProviderError]:
        endpoint = self._endpoint
        body = build_request(messages, config, endpoint.options, json_schema=schema)
        url = f"{endpoint.base_url}/chat/completions"
        connect = min(endpoint.options.connect_timeout_s, config.startup_timeout_s)
        # Reads are bounded by the cancel scope below, not by httpx, so the startup and idle
        # budgets are ours whatever the server does between bytes.
        timeout = httpx.Timeout(connect=connect, read=None, write=connect * 6, pool=connect)
        stream = endpoint.options.stream
        phase: TimeoutWhich = "startup"
        budget = config.startup_timeout_s if stream else float("inf")
        scope = anyio.CancelScope(deadline=anyio.current_time() + budget)
        result: Result[CompletionResponse, ProviderError] | None = None
        with scope:
            try:
                async with (
                    httpx.AsyncClient(transport=self._transport, timeout=timeout) as client,
                    client.stream("POST", url, json=body, headers=endpoint.headers()) as resp,
                ):
                    if resp.status_code >= 400:
                        text = (await resp.aread()).decode("utf-8", errors="replace")
                        result = Failure(
                            classify_http(resp.status_code, text, resp.headers, self.backend)
                        )
                    elif not stream:
                        result = self._parse_body(await resp.aread())
                    else:
                        acc = ChatStreamAccumulator(self.backend)
                        async for line in resp.aiter_lines():
                            phase = "idle"
                            scope.deadline = anyio.current_time() + config.idle_timeout_s
                            error = acc.feed(line)
                            if error is not None:
                                result = Failure(error)
                                break
                            if acc.done:
                                break
                        if result is None:
                            result = acc.result()
            except httpx.TimeoutException as exc:
                which: TimeoutWhich = "startup" if isinstance(exc, httpx.ConnectTimeout) else phase
                result = Failure(
                    ProviderError(
                        ErrorKind.timeout, f"{type(exc).__name__} talking to {url}",
                        backend=self.backend, timeout=which,
                    )
                )  # fmt: skip
            except httpx.TransportError as exc:
                result = Failure(self._transport_error(exc, url))
        if result is None:  # only the scope's deadline gets here
            budget_s = config.startup_timeout_s if phase == "startup" else config.idle_timeout_s
            return Failure(
                ProviderError(
                    ErrorKind.timeout,
                    f"no output from {url} for {budget_s:g}s ({phase}_timeout_s)",
                    backend=self.backend,
                    timeout=phase,
                )
            )
        return result

    def _parse_body(self, raw: bytes) -> Result[CompletionResponse, ProviderError]:
        try:
            data = json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", errors="replace")[:200]
            return Failure(
                ProviderError(
                    ErrorKind.bad_output, f"response is not JSON: {text}", backend=self.backend
                )
            )
        return parse_chat_body(data, self.backend)

    def _transport_error(self, exc: httpx.TransportError, url: str) -> ProviderError:
        if isinstance(exc, httpx.ConnectError):
            message = f"cannot connect to {url}: {exc}"
        elif isinstance(exc, httpx.RemoteProtocolError):
            message = f"the server dropped the connection: {exc}"
        else:
            message = f"{type(exc).__name__}: {exc}"
        return ProviderError(ErrorKind.network, message, backend=self.backend)


def create_adapter(capability: BackendCapability, settings: LLMSettings) -> OpenAICompatAdapter:
    """Factory hook: the `[llm.openai_compat]` table plus the environment (module docstring).

    Raises `ProviderError(config)` for a bad table or when no endpoint is configured.
    """
    endpoint = load_options(settings.options(capability.name), section=capability.name)
    if settings.model:  # llm.model beats the table's model for calls that name none
        options = endpoint.options.model_copy(update={"model": settings.model})
        endpoint = _Endpoint(endpoint.base_url, endpoint.api_key, options)
    return OpenAICompatAdapter(capability, endpoint, settings.completion_config())
