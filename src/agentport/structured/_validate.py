"""Validating an answer against the caller's schema (pure)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from returns.result import Failure, Result, Success

from ..core import ErrorKind, OutputSchema, ProviderError
from ._extract import NOTHING, find_json

__all__ = ["parse_answer", "schema_dict", "schema_instruction", "truncated_message", "validate"]


def schema_dict(output_schema: OutputSchema) -> dict[str, Any]:
    """JSON schema of a pydantic model class, or the dict itself."""
    if isinstance(output_schema, dict):
        return output_schema
    return output_schema.model_json_schema()


def _validate_model(output_schema: Any, value: Any, strict: bool) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON data (a caller's own objects): Python mode
        return output_schema.model_validate(value, strict=strict)
    # JSON mode, as the answer arrived: strict still takes "2020-01-01" for a datetime and
    # "red" for an enum, like the model's JSON schema does, but never "4" for an int.
    return output_schema.model_validate_json(text, strict=strict)


def validate(output_schema: OutputSchema, value: Any, *, strict: bool = True) -> Result[Any, str]:
    """Validate *value*: a model instance for a model class, the value for a JSON schema.

    A model class is validated in pydantic's strict JSON mode by default, so it accepts what
    its own JSON schema accepts (`{"count": "4"}` fails for `count: int`, as with the dict);
    `strict=False` opts in to pydantic's lax coercion. Failure: one line, up to ten
    `path: message` parts joined by "; ".
    """
    if isinstance(output_schema, dict):
        import jsonschema

        cls = jsonschema.validators.validator_for(
            output_schema, default=jsonschema.Draft202012Validator
        )
        try:
            errors = sorted(
                cls(output_schema).iter_errors(value), key=lambda e: list(e.absolute_path)
            )
        except Exception as exc:  # an unresolvable $ref etc.: the schema, not the answer
            return Failure(f"the schema cannot be applied: {type(exc).__name__}: {exc}")
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
        return Success(_validate_model(output_schema, value, strict))
    except ValidationError as exc:
        return Failure(
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()[:10]
            )
        )


def truncated_message(cut_at: int) -> str:
    """`truncated at N tokens` (N = 0: the count is unknown)."""
    return f"truncated at {cut_at} tokens" if cut_at > 0 else "truncated at max_tokens"


def parse_answer(
    text: str,
    output_schema: OutputSchema,
    backend: str = "",
    *,
    strict: bool = True,
    cut_at: int | None = None,
) -> Result[Any, ProviderError]:
    """Extract the answer's JSON value (`find_json`) and validate it (`validate`); the
    outermost value is the answer, never an object nested in it.

    `Failure(schema_mismatch)` carries the raw text. *cut_at* (the answer stopped at the token
    limit, finish_reason "length"; the count, or 0 when unknown): when the cut left no complete
    JSON value, the failure says so, `truncated at N tokens (max_tokens; raise it): ...`, with
    `details["truncated"] = True`; a complete value is validated as usual.
    """
    value = find_json(text)
    details: dict[str, Any] = {}
    if value is NOTHING:
        problem = "no JSON value in the answer"
        if cut_at is not None:  # the cut broke the value (a complete one is validated as is)
            problem = f"{truncated_message(cut_at)} (max_tokens; raise it): {problem}"
            details = {"truncated": True, "output_tokens": cut_at}
    else:
        checked = validate(output_schema, value, strict=strict)
        if not isinstance(checked, Failure):
            return Success(checked.unwrap())
        problem = checked.failure()
    return Failure(
        ProviderError(
            ErrorKind.schema_mismatch, problem, backend=backend, raw_text=text, details=details
        )
    )


def schema_instruction(output_schema: OutputSchema) -> str:
    """The instruction appended to the prompt when a backend cannot enforce the schema."""
    schema = json.dumps(schema_dict(output_schema), ensure_ascii=False)
    return (
        "Answer with ONE JSON value that validates against this JSON schema, and nothing "
        f"else (no prose, no code fence):\n{schema}"
    )
