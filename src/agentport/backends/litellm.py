"""`litellm`: completion through LiteLLM (`pip install 'agentport[litellm]'`).

LiteLLM routes a model string (`openai/gpt-4o-mini`, `anthropic/claude-...`,
`ollama_chat/llama3`, `openai/<name>` with `api_base` for any OpenAI-compatible server) to the
provider. Completion only (no `AgentRuntime`). The extra's requirement excludes 1.82.7 and
1.82.8, the releases that carried a credential stealer (March 2026).

Options, `[llm.litellm]` (validated by `LiteLLMOptions`): `model`, `api_base`, `api_key`,
`structured_output`, `stream`. Provider keys may also come from the environment variables
LiteLLM itself reads (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, ...).

agentport owns retries (LiteLLM's own are turned off) and timeouts: the stream is read under
agentport's startup / idle / total budgets, because LiteLLM drops per-request timeouts for some
providers when streaming. LiteLLM is asyncio-only: under trio each call runs in a worker thread
with its own asyncio loop. Its exceptions are classified by class (`classify_exception`).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError
from returns.result import Failure, Result, Success

from ..core import (
    BackendCapability,
    BillingRoute,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    CostState,
    ErrorKind,
    Message,
    OpenedCall,
    ProviderError,
    RawInfo,
    TimeoutWhich,
    Usage,
    as_quota,
    complete_call,
    loopback_url,
    wait_from_headers,
)
from ..structured import complete_constrained, schema_dict
from ._openai_wire import chat_message
from ._settings import BackendSettings

# LiteLLM fetches a model price list over the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
try:
    import litellm
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the litellm backend needs LiteLLM: pip install 'agentport[litellm]'"
    ) from exc

__all__ = ["LiteLLMAdapter", "LiteLLMOptions", "classify_exception", "create_adapter"]

litellm.telemetry = False
litellm.suppress_debug_info = True

# Class name -> kind, most specific first along the exception's MRO. Names, not classes, so
# the table is plain data and survives LiteLLM moving classes between modules.
_BY_CLASS: dict[str, ErrorKind] = {
    "ContextWindowExceededError": ErrorKind.context_length,
    "AuthenticationError": ErrorKind.auth_required,
    "PermissionDeniedError": ErrorKind.auth_required,
    "PaymentRequiredError": ErrorKind.rate_limited,
    "BudgetExceededError": ErrorKind.rate_limited,
    "RateLimitError": ErrorKind.rate_limited,
    "NotFoundError": ErrorKind.config,
    "ModelNotMappedError": ErrorKind.config,
    "LiteLLMUnknownProvider": ErrorKind.config,
    "UnsupportedParamsError": ErrorKind.invalid_request,
    "ContentPolicyViolationError": ErrorKind.content_filter,
    "BadRequestError": ErrorKind.invalid_request,
    "UnprocessableEntityError": ErrorKind.invalid_request,
    "InvalidRequestError": ErrorKind.invalid_request,
    "Timeout": ErrorKind.timeout,
    "APITimeoutError": ErrorKind.timeout,
    "APIConnectionError": ErrorKind.network,
    "ServiceUnavailableError": ErrorKind.server_error,
    "BadGatewayError": ErrorKind.server_error,
    "InternalServerError": ErrorKind.server_error,
}
_NOT_RETRYABLE = frozenset({"PaymentRequiredError", "BudgetExceededError"})


def _retry_after(exc: BaseException) -> float | None:
    """The wait the provider's response asked for (`core._wait.wait_from_headers`: the one
    parser of a wait, `retry-after-ms` or `Retry-After`)."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    response = getattr(exc, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", None)
    return wait_from_headers(headers) if headers else None


def classify_exception(exc: BaseException, backend: str = "litellm") -> ProviderError | None:
    """A LiteLLM (or openai SDK) exception -> `ProviderError`; None for anything else
    (a bug, which the caller re-raises)."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    modules = {cls.__module__.split(".")[0] for cls in type(exc).__mro__}
    if not modules & {"litellm", "openai"}:
        return None
    name = next((n for n in names if n in _BY_CLASS), None)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    message = str(getattr(exc, "message", None) or exc).replace("\n", " ")[:500]
    kind = _BY_CLASS[name] if name else None
    causes = _cause_names(exc)
    if "APIConnectionError" in causes and "APITimeoutError" not in causes:
        # LiteLLM reports a connection that failed as InternalServerError with status 500
        # (measured with 1.83 against a closed port): no server answered, it is the network
        never = {"ConnectError", "ConnectTimeout", "ConnectionRefusedError"} & causes
        return ProviderError(
            ErrorKind.network, message, backend=backend, request_sent=False if never else None,
            details={"exception": type(exc).__name__},
        )  # fmt: skip
    if kind is None:
        kind = (
            ErrorKind.server_error if status is None or status >= 500
            else ErrorKind.auth_required if status in (401, 403)
            else ErrorKind.rate_limited if status == 429
            else ErrorKind.invalid_request
        )  # fmt: skip
    retryable: bool | None = None
    if name in _NOT_RETRYABLE:
        retryable = False
    error = ProviderError(
        kind,
        message,
        backend=backend,
        retryable=retryable,
        retry_after=_retry_after(exc) if kind is ErrorKind.rate_limited else None,
        timeout="total" if kind is ErrorKind.timeout else None,
        status=status,
        details={"exception": type(exc).__name__},
    )
    # an exhausted window with its reset: the provider's body, else the text
    body = getattr(exc, "body", None)
    return as_quota(error, body=body if isinstance(body, dict | str) else message)


def _cause_names(exc: BaseException) -> set[str]:
    """The class names of *exc* and the exceptions it was raised from (a bounded walk)."""
    names: set[str] = set()
    seen: BaseException | None = exc
    for _ in range(12):
        if seen is None:
            break
        names.update(cls.__name__ for cls in type(seen).__mro__)
        seen = seen.__cause__ or seen.__context__
    return names


class LiteLLMOptions(BaseModel):
    """The `[llm.litellm]` table.

    Attributes:
        model: LiteLLM model string (`provider/model`) when neither the call nor `llm.model`
            names one.
        api_base: the provider endpoint (e.g. an OpenAI-compatible server's `/v1` URL).
        api_key: the provider key (else LiteLLM reads the provider's environment variable).
        structured_output: `json_schema` passes `response_format` json_schema (NATIVE);
            `prompt` puts the schema in the prompt and validates (TRANSLATED).
        stream: stream the response (enables agentport's startup and idle timeouts).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    api_base: str | None = None
    api_key: SecretStr | None = None
    structured_output: Literal["json_schema", "prompt"] = "json_schema"
    stream: bool = True


def load_options(table: Mapping[str, Any]) -> LiteLLMOptions:
    """Validate `[llm.litellm]`; `ProviderError(config)` naming the field."""
    try:
        return LiteLLMOptions.model_validate(dict(table))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(table)"
        raise ProviderError(
            ErrorKind.config, f"[llm.litellm] {loc}: {err['msg']}", backend="litellm"
        ) from None


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _usage(obj: Any) -> Usage | None:
    if obj is None:
        return None
    return Usage(
        input_tokens=int(_get(obj, "prompt_tokens") or 0),
        output_tokens=int(_get(obj, "completion_tokens") or 0),
    )


def _priced(model: object, usage: Usage, local: bool, keyed: bool) -> Usage:
    """*usage* priced from LiteLLM's own model price list (the copy bundled with it) when the
    list knows *model*: on a key when one was given (else the route is the receipt's
    `unknown`); a model it does not know on an endpoint on this machine (*local*) is your
    own server, priced at 0 by the receipt; anything else stays `unpriced`."""
    name = str(model or "")
    if name in litellm.model_cost or name.split("/", 1)[-1] in litellm.model_cost:
        try:
            prompt, completion = litellm.cost_per_token(
                model=name,
                prompt_tokens=usage.input_tokens,
                completion_tokens=usage.output_tokens,
            )
        except Exception:  # a price the list cannot give is no price
            pass
        else:
            update: dict[str, object] = {
                "cost_usd": float(prompt) + float(completion),
                "cost_state": CostState.priced,
            }
            if keyed:
                update["billing_route"] = BillingRoute.api_key
            return usage.model_copy(update=update)
    if local:
        return usage.model_copy(update={"billing_route": BillingRoute.local})
    return usage


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LiteLLMAdapter(ClosableAdapter):
    """`LLMAdapter` over `litellm.acompletion`."""

    def __init__(
        self,
        capability: BackendCapability,
        options: LiteLLMOptions,
        default_config: CompletionConfig | None = None,
    ) -> None:
        self._capability = capability
        self._options = options
        self.default_config = default_config or CompletionConfig()

    @property
    def backend(self) -> str:
        return self._capability.name

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return await complete_call(
            self._capability, messages, config, self.default_config, self._opened
        )

    async def _opened(self, call: OpenedCall) -> Result[CompletionResponse, ProviderError]:
        if not (call.config.model or self._options.model):
            return Failure(
                ProviderError(
                    ErrorKind.config,
                    "no model: set llm.model or [llm.litellm] model to a LiteLLM model string "
                    "such as openai/gpt-4o-mini",
                    backend=self.backend,
                )
            )
        return await self._complete(call.messages, call.config)

    async def _complete(
        self, messages: Sequence[Message], config: CompletionConfig
    ) -> Result[CompletionResponse, ProviderError]:
        schema = config.output_schema
        native = schema is not None and self._options.structured_output == "json_schema"
        # structured decides whether the native form is used (not when the schema does not fit)
        return await complete_constrained(
            lambda convo: self._call(convo, config, None),
            messages,
            config,
            native_schema=(
                (lambda convo: self._call(convo, config, schema_dict(schema)))
                if native and schema is not None
                else None
            ),
            backend=self.backend,
        )

    async def _call(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        schema: Mapping[str, Any] | None,
    ) -> Result[CompletionResponse, ProviderError]:
        kwargs = self._kwargs(messages, config, schema)
        if _on_asyncio():
            result = await self._acall(kwargs, config)
        else:
            # LiteLLM needs asyncio: give it a loop of its own in a worker thread. On cancel
            # the thread is abandoned and ends at LiteLLM's own timeout (the total budget).
            result = await anyio.to_thread.run_sync(
                lambda: asyncio.run(self._acall(kwargs, config)), abandon_on_cancel=True
            )
        base = self._options.api_base
        local, keyed = bool(base and loopback_url(base)), self._options.api_key is not None
        return result.map(
            lambda r: r.model_copy(
                update={"usage": _priced(kwargs.get("model"), r.usage, local, keyed)}
            )
        )

    def _kwargs(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        schema: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        options = self._options
        kwargs: dict[str, Any] = {
            "model": config.model or options.model,
            "messages": [chat_message(m) for m in messages],
            "stream": options.stream,
            "timeout": config.total_timeout_s,
            "num_retries": 0,  # the one retry policy lives outside adapters
        }
        if options.stream:
            kwargs["stream_options"] = {"include_usage": True}
        if options.api_base:
            kwargs["api_base"] = options.api_base
        if options.api_key:
            kwargs["api_key"] = options.api_key.get_secret_value()
        if config.temperature is not None:
            kwargs["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            kwargs["reasoning_effort"] = config.reasoning_effort
        if config.max_tokens is not None:
            kwargs["max_tokens"] = config.max_tokens
        if schema is not None:
            title = schema.get("title")
            name = re.sub(r"[^A-Za-z0-9_-]", "_", title if isinstance(title, str) else "")
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name[:64] or "answer", "schema": dict(schema)},
            }
        return kwargs

    async def _acall(
        self, kwargs: dict[str, Any], config: CompletionConfig
    ) -> Result[CompletionResponse, ProviderError]:
        phase: TimeoutWhich = "startup"
        budget = config.startup_timeout_s if kwargs["stream"] else float("inf")
        scope = anyio.CancelScope(deadline=anyio.current_time() + budget)
        result: Result[CompletionResponse, ProviderError] | None = None
        sent: bool | None = None  # True once litellm returned: the provider answered
        with scope:
            try:
                response = await litellm.acompletion(**kwargs)
                sent = True
                if not kwargs["stream"]:
                    result = self._from_response(response)
                else:
                    parts: list[str] = []
                    finish: str | None = None
                    model: str | None = None
                    usage: Usage | None = None
                    async for chunk in response:
                        phase = "idle"
                        scope.deadline = anyio.current_time() + config.idle_timeout_s
                        model = _get(chunk, "model") or model
                        usage = _usage(_get(chunk, "usage")) or usage
                        for choice in _get(chunk, "choices") or ():
                            delta = _get(choice, "delta")
                            text = _get(delta, "content") if delta is not None else None
                            if text:
                                parts.append(str(text))
                            finish = _get(choice, "finish_reason") or finish
                    if finish is None:
                        result = Failure(
                            ProviderError(
                                ErrorKind.network,
                                "the stream ended before the answer was complete",
                                backend=self.backend,
                                raw_text="".join(parts) or None,
                            )
                        )
                    else:
                        result = self._response("".join(parts), model, usage, finish)
            except Exception as exc:
                error = classify_exception(exc, self.backend)
                if error is None:
                    raise
                result = Failure(error)
        if result is None:
            which = config.startup_timeout_s if phase == "startup" else config.idle_timeout_s
            result = Failure(
                ProviderError(
                    ErrorKind.timeout,
                    f"no output for {which:g}s ({phase}_timeout_s)",
                    backend=self.backend,
                    timeout=phase,
                )
            )
        # a chunk arrived (phase idle): the failure came mid-stream
        return result.alt(lambda error: error.sent(sent, mid_stream=phase == "idle"))

    def _from_response(self, response: Any) -> Result[CompletionResponse, ProviderError]:
        choices = _get(response, "choices") or []
        if not choices:
            return Failure(ProviderError(ErrorKind.bad_output, "no choices", backend=self.backend))
        message = _get(choices[0], "message")
        return self._response(
            str(_get(message, "content") or ""),
            _get(response, "model"),
            _usage(_get(response, "usage")),
            _get(choices[0], "finish_reason"),
        )

    def _response(
        self, content: str, model: str | None, usage: Usage | None, finish: str | None
    ) -> Result[CompletionResponse, ProviderError]:
        if not content:
            return Failure(
                ProviderError(
                    ErrorKind.bad_output,
                    f"empty answer (finish_reason={finish})",
                    backend=self.backend,
                )
            )
        return Success(
            CompletionResponse(
                content=content,
                model=model,
                usage=usage or Usage(),
                finish_reason=finish,
                backend=self.backend,
                raw=RawInfo(),
            )
        )


def create_adapter(capability: BackendCapability, settings: BackendSettings) -> LiteLLMAdapter:
    """Factory hook: `[llm.litellm]` validated (`ProviderError(config)` on a bad table)."""
    options = load_options(dict(settings.options))
    if settings.endpoint_from_project and not options.api_key:
        # LiteLLM would read the provider's key from the environment and send it to an
        # endpoint a project file chose; a placeholder key stops that.
        options = options.model_copy(update={"api_key": SecretStr("agentport-no-key")})
    if settings.defaults.model:  # llm.model beats the table's model for calls that name none
        options = options.model_copy(update={"model": settings.defaults.model})
    return LiteLLMAdapter(capability, options, settings.defaults)
