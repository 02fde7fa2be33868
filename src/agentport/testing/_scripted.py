"""Test doubles that satisfy `LLMAdapter` without any I/O: `ScriptedAdapter`, `FunctionAdapter`."""

from __future__ import annotations

import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeAlias

import anyio
from pydantic import BaseModel
from returns.result import Failure, Result, Success

from ..catalog import get_capability
from ..core import (
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    ProviderError,
    Usage,
    complete_call,
    plan_call,
    planned,
)
from ..structured import parse_answer, parse_choice, validate

__all__ = ["Call", "FunctionAdapter", "Reply", "Rule", "ScriptedAdapter", "UnmatchedCallError"]

Reply: TypeAlias = (
    "str | BaseModel | dict[str, Any] | list[Any] | ProviderError | Callable[[Call], Any]"
)


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded call: its messages, config, label and the joined prompt text."""

    messages: tuple[Message, ...]
    config: CompletionConfig

    @property
    def label(self) -> str | None:
        return self.config.label

    @property
    def prompt(self) -> str:
        return "\n\n".join(m.content for m in self.messages)


class UnmatchedCallError(AssertionError):
    """A `ScriptedAdapter` call matched no rule and no default was given."""


@dataclass(slots=True)
class Rule:
    """Match a call, then reply.

    A rule matches when every given matcher matches: `label` (equal to `config.label`),
    `contains` (substring of the prompt), `pattern` (regex searched in the prompt), `when`
    (predicate on the `Call`). `replies` are used in order; the last one repeats. `times`
    caps how often the rule matches; `delay_s` sleeps before replying.
    """

    replies: Sequence[Any]
    label: str | None = None
    contains: str | None = None
    pattern: re.Pattern[str] | None = None
    when: Callable[[Call], bool] | None = None
    delay_s: float = 0.0
    times: int | None = None
    used: int = field(default=0)

    def matches(self, call: Call) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.label is not None and call.label != self.label:
            return False
        if self.contains is not None and self.contains not in call.prompt:
            return False
        if self.pattern is not None and not self.pattern.search(call.prompt):
            return False
        return self.when is None or self.when(call)

    def next_reply(self) -> Any:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply


def _words(text: str) -> int:
    return len(text.split())


def _to_json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False)


async def _resolve(reply: Any, call: Call) -> Any:
    while callable(reply) and not isinstance(reply, type | ProviderError):
        reply = reply(call)
        if inspect.isawaitable(reply):
            reply = await reply
    return reply


async def _respond(
    backend: str, reply: Any, call: Call, started: float, warnings: tuple[str, ...]
) -> Result[CompletionResponse, ProviderError]:
    reply = await _resolve(reply, call)
    if isinstance(reply, ProviderError):
        return Failure(reply.with_backend(backend))
    schema = call.config.output_schema
    parsed: Any = None
    if isinstance(reply, str):
        content = reply
        if schema is not None:
            result = parse_answer(content, schema, backend, strict=call.config.schema_strict)
            if isinstance(result, Failure):
                return result
            parsed = result.unwrap()
        elif call.config.choices is not None:
            choice = parse_choice(content, call.config.choices, backend)
            if isinstance(choice, Failure):
                return choice
            content = parsed = choice.unwrap()
    elif isinstance(reply, BaseModel | dict | list):
        content = _to_json(reply)
        if schema is not None:
            checked = validate(
                schema,
                reply.model_dump() if isinstance(reply, BaseModel) else reply,
                strict=call.config.schema_strict,
            )
            if isinstance(checked, Failure):
                return Failure(
                    ProviderError(
                        ErrorKind.schema_mismatch,
                        checked.failure(),
                        backend=backend,
                        raw_text=content,
                    )
                )
            parsed = checked.unwrap()
    else:
        raise TypeError(f"unsupported scripted reply: {reply!r}")
    return Success(
        CompletionResponse(
            content=content,
            parsed=parsed,
            model=call.config.model or backend,
            usage=Usage(input_tokens=_words(call.prompt), output_tokens=_words(content)),
            finish_reason="stop",
            warnings=warnings,
            backend=backend,
            duration_s=time.monotonic() - started,
        )
    )


class ScriptedAdapter(ClosableAdapter):
    """An `LLMAdapter` that answers from rules; records every call in `calls`.

    ```python
    llm = ScriptedAdapter().add("Paris", contains="capital of France")
    llm.add(ProviderError(ErrorKind.rate_limited, "slow down", retry_after=1), label="verify")
    ```

    Replies: text (parsed when the call has an `output_schema`), a model / dict / list
    (validated against the schema, serialised as content), a `ProviderError` (returned as
    `Failure`), or a callable `(Call) -> reply` (may be async). A call that matches no rule
    raises `UnmatchedCallError` unless `default` is given. Each call's config is merged over
    `default_config` (as every adapter merges over the configured settings), so `calls` record
    what a backend would receive.
    """

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        default: Any = None,
        backend: str = "scripted",
        default_config: CompletionConfig | None = None,
    ) -> None:
        self.rules: list[Rule] = list(rules)
        self.default = default
        self.default_config = default_config or CompletionConfig()
        self.calls: list[Call] = []
        self._backend = backend
        self._capability = get_capability("scripted")

    @property
    def backend(self) -> str:
        return self._backend

    def add(
        self,
        *replies: Any,
        label: str | None = None,
        contains: str | None = None,
        pattern: str | re.Pattern[str] | None = None,
        when: Callable[[Call], bool] | None = None,
        delay_s: float = 0.0,
        times: int | None = None,
    ) -> Self:
        """Append a rule (see `Rule`); returns self for chaining."""
        if not replies:
            raise ValueError("a rule needs at least one reply")
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.rules.append(
            Rule(replies, label, contains, compiled, when, delay_s=delay_s, times=times)
        )
        return self

    def calls_with(self, label: str) -> list[Call]:
        return [c for c in self.calls if c.label == label]

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        # the call is recorded before its opening checks it (a refused call is recorded too),
        # so the plan is made here and handed to the opening, which merges nothing again
        plan = plan_call(messages, config, self.default_config)
        call = Call(tuple(messages), plan.config)
        self.calls.append(call)
        with planned(plan):
            return await complete_call(
                self._capability,
                messages,
                plan.config,
                self.default_config,
                lambda opened: self._reply(call),
                bounded=False,  # `delay_s` sleeps past a deadline as a slow backend would
            )

    async def _reply(self, call: Call) -> Result[CompletionResponse, ProviderError]:
        # rules match the call as the caller made it (not the files-inlined messages)
        rule = next((r for r in self.rules if r.matches(call)), None)
        if rule is None:
            if self.default is None:
                raise UnmatchedCallError(
                    f"no scripted rule matches call label={call.label!r} "
                    f"prompt={call.prompt[:200]!r}"
                )
            reply, delay = self.default, 0.0
        else:
            reply, delay = rule.next_reply(), rule.delay_s
        if delay:
            await anyio.sleep(delay)
        # the opening adds the call's warnings and the duration from its start
        return await _respond(self._backend, reply, call, time.monotonic(), ())


class FunctionAdapter(ClosableAdapter):
    """An `LLMAdapter` backed by a function `(messages, config) -> reply` (sync or async).

    The reply is handled like a `ScriptedAdapter` reply.
    """

    def __init__(
        self,
        function: Callable[[list[Message], CompletionConfig], Any | Awaitable[Any]],
        *,
        backend: str = "function",
    ) -> None:
        self.function = function
        self._backend = backend
        self.calls: list[Call] = []

    @property
    def backend(self) -> str:
        return self._backend

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        started = time.monotonic()
        config = config or CompletionConfig()
        call = Call(tuple(messages), config)
        self.calls.append(call)
        reply = self.function(list(messages), config)
        if inspect.isawaitable(reply):
            reply = await reply
        return await _respond(self._backend, reply, call, started, ())
