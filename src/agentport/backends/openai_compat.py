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

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from pydantic import ValidationError
from returns.result import Failure, Result

from ..core import (
    BackendCapability,
    BillingRoute,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Headroom,
    Message,
    OpenedCall,
    ProviderError,
    TimeoutWhich,
    bounded,
    complete_call,
    headroom_from_headers,
    loopback_url,
    with_headroom,
)
from ..structured import complete_constrained, restore_answer, schema_dict, strict_schema
from ..transport import tls_context
from ._openai_wire import (  # re-exported: the public wire helpers
    ChatStreamAccumulator,
    EndpointOptions,
    build_request,
    classify_http,
    classify_stream_error,
    parse_chat_body,
    parse_retry_after,
)
from ._settings import BackendSettings

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


# ---- the adapter ----------------------------------------------------------------------------

ERROR_BODY_LIMIT = 64 * 1024  # bytes of an HTTP error body read; the rest is never buffered


async def _read_at_most(resp: httpx.Response, limit: int) -> bytes:
    """The first *limit* bytes of the body; a hostile server's endless error page stops here."""
    out = bytearray()
    async for chunk in resp.aiter_bytes():
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return bytes(out)


class OpenAICompatAdapter(ClosableAdapter):
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
        return await complete_call(
            self._capability, messages, config, self.default_config, self._opened
        )

    async def _opened(self, call: OpenedCall) -> Result[CompletionResponse, ProviderError]:
        result = await self._complete(call.messages, call.config)
        route = self.billing_route
        return result.map(
            lambda r: r.model_copy(
                update={"usage": r.usage.model_copy(update={"billing_route": route})}
            )
        )

    @property
    def billing_route(self) -> BillingRoute:
        """A server on this machine is `local`; a key sent to another is `api_key`; a remote
        server without a key cannot be told (`unknown`)."""
        if loopback_url(self._endpoint.base_url):
            return BillingRoute.local
        return BillingRoute.api_key if self._endpoint.api_key else BillingRoute.unknown

    async def _complete(
        self, messages: Sequence[Message], config: CompletionConfig
    ) -> Result[CompletionResponse, ProviderError]:
        schema = config.output_schema
        options = self._endpoint.options
        native = schema is not None and options.structured_output == "json_schema"

        async def enforced(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
            assert schema is not None
            if not options.strict_schema:
                return await self._call(convo, config, schema_dict(schema))
            # strict mode: send the normalised subset, map the answer back to the original
            sent = await self._call(convo, config, strict_schema(schema))
            return sent.map(lambda r: restore_answer(r, schema))

        # structured decides whether the native form is used (not when the schema does not fit)
        return await complete_constrained(
            lambda convo: self._call(convo, config, None),
            messages,
            config,
            native_schema=enforced if native else None,
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
        # what left this process: None until the connection is up, True once the server
        # answered with a status; `chunks`: answer chunks that arrived before a failure
        sent: bool | None = False
        headroom: tuple[Headroom, ...] = ()  # the usage windows the response headers describe
        acc = ChatStreamAccumulator(self.backend)
        with scope:
            try:
                async with (
                    httpx.AsyncClient(
                        transport=self._transport, timeout=timeout, verify=tls_context()
                    ) as client,
                    client.stream("POST", url, json=body, headers=endpoint.headers()) as resp,
                ):
                    sent = True
                    headroom = headroom_from_headers(resp.headers)
                    if resp.status_code >= 400:
                        raw = await _read_at_most(resp, ERROR_BODY_LIMIT)
                        text = raw.decode("utf-8", errors="replace")
                        result = Failure(
                            classify_http(resp.status_code, text, resp.headers, self.backend)
                        )
                    elif not stream:
                        result = self._parse_body(await resp.aread())
                    else:
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
                sent = sent or _maybe_sent(exc)
                which: TimeoutWhich = "startup" if isinstance(exc, httpx.ConnectTimeout) else phase
                result = Failure(
                    ProviderError(
                        ErrorKind.timeout, f"{type(exc).__name__} talking to {url}",
                        backend=self.backend, timeout=which,
                    )
                )  # fmt: skip
            except httpx.TransportError as exc:
                sent = sent or _maybe_sent(exc)
                result = Failure(self._transport_error(exc, url))
        if result is None:  # only the scope's deadline gets here
            budget_s = config.startup_timeout_s if phase == "startup" else config.idle_timeout_s
            result = Failure(
                ProviderError(
                    ErrorKind.timeout,
                    f"no output from {url} for {budget_s:g}s ({phase}_timeout_s)",
                    backend=self.backend,
                    timeout=phase,
                )
            )
            sent = sent or None  # the deadline may have cut the connect or the upload
        result = result.alt(lambda error: error.sent(sent, mid_stream=acc.chunks > 0))
        return with_headroom(result, headroom) if headroom else result

    def _parse_body(self, raw: bytes) -> Result[CompletionResponse, ProviderError]:
        try:
            data = bounded.loads(raw)
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


def _maybe_sent(exc: httpx.TransportError) -> bool | None:
    """False when the connection never opened (httpx's connect and pool errors), else None:
    the request may have been written before the transport failed."""
    never = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
    return False if isinstance(exc, never) else None


def create_adapter(capability: BackendCapability, settings: BackendSettings) -> OpenAICompatAdapter:
    """Factory hook: the `[llm.openai_compat]` table plus the environment (module docstring).

    Raises `ProviderError(config)` for a bad table or when no endpoint is configured.
    """
    environ: Mapping[str, str] | None = None
    if settings.endpoint_from_project:
        # the user's environment key never follows an endpoint a project file chose
        environ = {k: v for k, v in os.environ.items() if k not in ENV_API_KEY}
    endpoint = load_options(dict(settings.options), environ, section=capability.name)
    if settings.defaults.model:  # llm.model beats the table's model for calls that name none
        options = endpoint.options.model_copy(update={"model": settings.defaults.model})
        endpoint = _Endpoint(endpoint.base_url, endpoint.api_key, options)
    return OpenAICompatAdapter(capability, endpoint, settings.defaults)
