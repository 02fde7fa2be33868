"""The validate-and-retry loops every adapter runs around its single model call."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel
from returns.result import Failure, Result, Success

from ..core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    OutputSchema,
    ProviderError,
    Usage,
    usage_of,
    with_usage,
)
from ._extract import NOTHING, find_json
from ._strict import native_schema_gaps, restore_strict
from ._validate import parse_answer, schema_instruction

__all__ = [
    "Call",
    "choice_instruction",
    "complete_constrained",
    "complete_with_choices",
    "complete_with_schema",
    "match_choice",
    "parse_choice",
    "restore_answer",
]

Call = Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]]
"""One model call with the given conversation (what an adapter hands the loops)."""


class _Counted:
    """A `Call` that adds up the usage of every request made through it (answers and
    failures alike), so the loop's result reports all of them, re-asks included."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.spent = Usage()

    async def __call__(self, convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
        result = await self.call(convo)
        self.spent += usage_of(result)
        return result

    def total(
        self, result: Result[CompletionResponse, ProviderError]
    ) -> Result[CompletionResponse, ProviderError]:
        """*result* with the usage of every request made, not only its own."""
        return with_usage(result, self.spent)


def _dump(parsed: Any) -> str:
    if isinstance(parsed, BaseModel):
        return parsed.model_dump_json()
    return json.dumps(parsed, ensure_ascii=False)


def restore_answer(response: CompletionResponse, output_schema: OutputSchema) -> CompletionResponse:
    """*response* with its JSON answer mapped back from the strict subset (`restore_strict`),
    for a backend that was sent `strict_schema(output_schema)`; unchanged when it holds no
    JSON value (validation then says what is wrong)."""
    value = find_json(response.content)
    if value is NOTHING:
        return response
    text = json.dumps(restore_strict(value, output_schema), ensure_ascii=False)
    return response.model_copy(update={"content": text})


def _cut_at(response: CompletionResponse, config: CompletionConfig) -> int | None:
    """The token count where the answer was cut (finish_reason "length"; 0 = unknown)."""
    if response.finish_reason != "length":
        return None
    return response.usage.output_tokens or config.max_tokens or 0


def _fallback_warning(backend: str, gaps: Sequence[str]) -> str:
    more = f" (and {len(gaps) - 1} more)" if len(gaps) > 1 else ""
    return (
        f"{backend or 'the backend'} did not enforce output_schema natively: the strict schema "
        f"subset cannot express {gaps[0]}{more}; the schema went in the prompt and the answer "
        "was validated locally"
    )


async def complete_with_schema(
    call: Call,
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    native: Call | None = None,
    describe_native: bool = False,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Validate-and-retry for `config.output_schema` around one model call.

    *call* sends no schema: the schema instruction is appended to the conversation
    (TRANSLATED). *native*, when the backend has one, sends the backend's own schema form
    (NATIVE); it is used only when `native_schema_gaps` finds nothing the strict subset cannot
    express, otherwise *call* is used and the response carries a warning saying why (the one
    place this rule lives, so it holds for every backend). `describe_native` also puts the
    instruction in the prompt on the NATIVE path (helps small grammar-constrained models).

    Each invalid answer is followed by a re-prompt quoting the validation errors, at most
    `config.schema_retries` times; then `Failure(schema_mismatch)` with the last raw text. An
    answer cut at the token limit (finish_reason "length") before its JSON value was complete
    fails at once: `truncated at N tokens ...` with the raw text (a re-prompt would be cut
    again). The result's usage (the response's, or the error's) adds up every request the
    loop made, re-asks included.
    Pydantic models validate strictly unless `config.schema_strict` is False. The returned
    response's `content` is the canonical JSON text and `parsed` the object.
    """
    assert config.output_schema is not None
    schema = config.output_schema
    send, instruct = call, True
    warnings: tuple[str, ...] = ()
    if native is not None:
        gaps = native_schema_gaps(schema)
        if gaps:
            warnings = (_fallback_warning(backend, gaps),)
        else:
            send, instruct = native, describe_native
    counted = _Counted(send)
    return counted.total(await _schema_loop(counted, messages, config, instruct, warnings, backend))


async def _schema_loop(
    send: Call,
    messages: Sequence[Message],
    config: CompletionConfig,
    instruct: bool,
    warnings: tuple[str, ...],
    backend: str,
) -> Result[CompletionResponse, ProviderError]:
    assert config.output_schema is not None
    schema = config.output_schema
    convo = list(messages)
    if instruct:
        convo.append(Message.user(schema_instruction(schema)))
    last: ProviderError | None = None
    for _ in range(config.schema_retries + 1):
        result = await send(convo)
        if isinstance(result, Failure):
            return result
        response = result.unwrap()
        cut = _cut_at(response, config)
        parsed = parse_answer(
            response.content,
            schema,
            backend or response.backend,
            strict=config.schema_strict,
            cut_at=cut,
        )
        if not isinstance(parsed, Failure):
            value = parsed.unwrap()
            update = {
                "parsed": value,
                "content": _dump(value),
                "warnings": warnings + response.warnings,
            }
            return Success(response.model_copy(update=update))
        last = parsed.failure()
        if last.details.get("truncated"):
            break  # a re-prompt would be cut again
        convo += [
            Message.assistant(response.content),
            Message.user(
                f"That answer does not match the schema: {last.message}. "
                "Reply again with only the corrected JSON."
            ),
        ]
    assert last is not None
    if warnings:  # why the answer was not enforced natively: part of the diagnosis
        last = last.replace(details={**last.details, "warnings": list(warnings)})
    return Failure(last)


def choice_instruction(choices: Sequence[str]) -> str:
    """The instruction appended to the prompt when a backend cannot constrain the answer."""
    listed = "\n".join(choices)
    return f"Answer with exactly one of the following lines and nothing else:\n{listed}"


def match_choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice *text* is, ignoring surrounding whitespace; else the only choice that stands
    in it as a whole word, ignoring case (so "nope" and "I do not know" match neither "no" nor
    "yes", and "Yes, no doubt" is ambiguous); else None."""
    stripped = text.strip()
    if stripped in choices:
        return stripped
    found = [c for c in choices if re.search(rf"(?<!\w){re.escape(c)}(?!\w)", text, re.IGNORECASE)]
    return found[0] if len(found) == 1 else None


def parse_choice(
    text: str, choices: Sequence[str], backend: str = ""
) -> Result[str, ProviderError]:
    """`match_choice` as a Result: `schema_mismatch` carrying the raw text when none matches."""
    choice = match_choice(text, choices)
    if choice is None:
        return Failure(
            ProviderError(
                ErrorKind.schema_mismatch,
                f"the answer is not one of {len(choices)} allowed choices",
                backend=backend,
                raw_text=text,
            )
        )
    return Success(choice)


async def complete_with_choices(
    call: Call,
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    translated: bool = True,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Validate-and-retry for `config.choices`, like `complete_with_schema`.

    The returned response's `content` and `parsed` are the matched choice; after
    `config.schema_retries` re-prompts, `Failure(schema_mismatch)` with the last raw text.
    Usage adds up every request, as there.
    """
    counted = _Counted(call)
    return counted.total(await _choice_loop(counted, messages, config, translated, backend))


async def _choice_loop(
    call: Call,
    messages: Sequence[Message],
    config: CompletionConfig,
    translated: bool,
    backend: str,
) -> Result[CompletionResponse, ProviderError]:
    assert config.choices is not None
    choices = config.choices
    convo = list(messages)
    if translated:
        convo.append(Message.user(choice_instruction(choices)))
    last = ""
    for _ in range(config.schema_retries + 1):
        result = await call(convo)
        if isinstance(result, Failure):
            return result
        response = result.unwrap()
        choice = match_choice(response.content, choices)
        if choice is not None:
            return Success(response.model_copy(update={"parsed": choice, "content": choice}))
        last = response.content
        convo += [
            Message.assistant(last),
            Message.user(
                "That answer is not one of the allowed lines. " + choice_instruction(choices)
            ),
        ]
    return Failure(
        ProviderError(
            ErrorKind.schema_mismatch,
            f"the answer is not one of {len(choices)} allowed choices",
            backend=backend,
            raw_text=last,
        )
    )


async def complete_constrained(
    call: Call,
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    native_schema: Call | None = None,
    describe_native: bool = False,
    choices_native: bool = False,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Route one call by what it constrains: `output_schema` -> `complete_with_schema`
    (*native_schema*: the call that sends the backend's schema form, when it has one),
    `choices` -> `complete_with_choices` (*call* enforces them itself when `choices_native`),
    otherwise a single plain *call*."""
    if config.output_schema is not None:
        return await complete_with_schema(
            call,
            messages,
            config,
            native=native_schema,
            describe_native=describe_native,
            backend=backend,
        )
    if config.choices is not None:
        return await complete_with_choices(
            call, messages, config, translated=not choices_native, backend=backend
        )
    return await call(list(messages))
