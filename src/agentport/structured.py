"""Structured output: schemas in, validated objects out.

- `schema_dict(output_schema)`: a pydantic model class or JSON-schema dict -> JSON schema.
- `extract_json(text)`: the first JSON value in free text (fenced block, bare, or the first
  balanced object/array, strings and escapes respected, trailing prose ignored).
- `validate(output_schema, value)`: a model instance / dict, or the validation errors.
- `parse_answer(text, output_schema)`: extract + validate -> `Result[parsed, ProviderError]`
  (`schema_mismatch` carrying the raw text).
- `complete_with_schema(call, messages, config)`: the TRANSLATED loop: schema in the prompt,
  validate, re-prompt with the errors (`config.schema_retries` more tries), then
  `Failure(schema_mismatch)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from returns.result import Failure, Result, Success

from .core import (
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    OutputSchema,
    ProviderError,
)

__all__ = [
    "complete_with_schema",
    "extract_json",
    "parse_answer",
    "schema_dict",
    "schema_instruction",
    "validate",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def schema_dict(output_schema: OutputSchema) -> dict[str, Any]:
    """JSON schema of a pydantic model class, or the dict itself."""
    if isinstance(output_schema, dict):
        return output_schema
    return output_schema.model_json_schema()


def _balanced(text: str, start: int) -> str | None:
    """The balanced `{...}` or `[...]` starting at *start*, honouring strings, or None."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def extract_json(text: str) -> Any | None:
    """The first JSON object or array in *text*, or None when there is none."""
    stripped = text.strip()
    candidates: list[str] = [stripped]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    for i, ch in enumerate(text):
        if ch in "{[":
            block = _balanced(text, i)
            if block is None:
                continue
            try:
                return json.loads(block)
            except ValueError:
                continue
    return None


def validate(output_schema: OutputSchema, value: Any) -> Result[Any, str]:
    """Validate *value*: a model instance for a model class, the value for a JSON schema."""
    if isinstance(output_schema, dict):
        import jsonschema

        validator = jsonschema.Draft202012Validator(output_schema)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            return Failure(
                "; ".join(
                    f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                    for e in errors[:10]
                )
            )
        return Success(value)
    if isinstance(value, output_schema):
        return Success(value)
    try:
        return Success(output_schema.model_validate(value))
    except ValidationError as exc:
        return Failure(
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()
            )
        )


def parse_answer(
    text: str, output_schema: OutputSchema, backend: str = ""
) -> Result[Any, ProviderError]:
    """Extract JSON from *text* and validate it; `schema_mismatch` carries the raw text."""
    value = extract_json(text)
    if value is None:
        return Failure(
            ProviderError(
                ErrorKind.schema_mismatch,
                "no JSON value in the answer",
                backend=backend,
                raw_text=text,
            )
        )
    checked = validate(output_schema, value)
    if isinstance(checked, Failure):
        return Failure(
            ProviderError(
                ErrorKind.schema_mismatch, checked.failure(), backend=backend, raw_text=text
            )
        )
    return Success(checked.unwrap())


def schema_instruction(output_schema: OutputSchema) -> str:
    """The instruction appended to the prompt when a backend cannot enforce the schema."""
    schema = json.dumps(schema_dict(output_schema), ensure_ascii=False)
    return (
        "Answer with ONE JSON value that validates against this JSON schema, and nothing "
        f"else (no prose, no code fence):\n{schema}"
    )


def _dump(parsed: Any) -> str:
    if isinstance(parsed, BaseModel):
        return parsed.model_dump_json()
    return json.dumps(parsed, ensure_ascii=False)


async def complete_with_schema(
    call: Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]],
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    translated: bool = True,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Validate-and-retry around *call*.

    With `translated=True` the schema instruction is appended to the last user message. Each
    invalid answer is followed by a re-prompt quoting the validation errors, at most
    `config.schema_retries` times; then `Failure(schema_mismatch)` with the last raw text.
    The returned response's `content` is the canonical JSON text and `parsed` the object.
    """
    assert config.output_schema is not None
    schema = config.output_schema
    convo = list(messages)
    if translated:
        convo.append(Message.user(schema_instruction(schema)))
    last: ProviderError | None = None
    for _ in range(config.schema_retries + 1):
        result = await call(convo)
        if isinstance(result, Failure):
            return result
        response = result.unwrap()
        parsed = parse_answer(response.content, schema, backend or response.backend)
        if not isinstance(parsed, Failure):
            value = parsed.unwrap()
            return Success(response.model_copy(update={"parsed": value, "content": _dump(value)}))
        last = parsed.failure()
        convo += [
            Message.assistant(response.content),
            Message.user(
                f"That answer does not match the schema: {last.message}. "
                "Reply again with only the corrected JSON."
            ),
        ]
    assert last is not None
    return Failure(last)
