"""Structured output: schemas in, validated objects out.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

- `schema_dict(output_schema)`: a pydantic model class or JSON-schema dict -> JSON schema.
- `find_json(text)` / `extract_json(text)`: the answer's JSON value: the whole text, a fenced
  block, or the first OUTERMOST object/array in prose (never an object nested in a value that
  fails); raw control characters inside strings accepted.
- `validate(output_schema, value, strict=True)`: a model instance / dict, or the errors;
  pydantic models strict by default, like their JSON schema.
- `parse_answer(text, output_schema)`: extract + validate -> `Result[parsed, ProviderError]`
  (`schema_mismatch` carrying the raw text; `truncated at N tokens` for a cut answer).
- `native_schema_gaps(output_schema)`: what the strict subset cannot express (`Any`, boolean
  subschemas, maps, tuples); such a schema is never sent natively.
- `strict_schema(output_schema)` / `restore_strict(value, output_schema)`: the strict subset a
  schema-enforcing backend accepts, and its undoing on the answer (`restore_answer` on a
  whole response).
- `complete_with_schema(call, messages, config, native=...)`: NATIVE when the backend has a
  schema form and the schema fits it, else TRANSLATED (schema in the prompt, with a warning
  when NATIVE was refused); validate, re-prompt with the errors (`config.schema_retries`
  more tries), then `Failure(schema_mismatch)`.
- `match_choice(text, choices)` / `complete_with_choices(call, messages, config)`: the same
  for `CompletionConfig.choices` (the answer must be exactly one of a few strings).
- `complete_constrained(call, messages, config, native_schema=...)`: the one dispatch every
  adapter uses: the schema loop, the choices loop, or a single plain call.
"""

from __future__ import annotations

from ._extract import NOTHING, extract_json, find_json
from ._loop import (
    Call,
    choice_instruction,
    complete_constrained,
    complete_with_choices,
    complete_with_schema,
    match_choice,
    parse_choice,
    restore_answer,
)
from ._strict import native_schema_gaps, restore_strict, strict_schema
from ._validate import parse_answer, schema_dict, schema_instruction, truncated_message, validate

__all__ = [
    "complete_constrained",
    "complete_with_choices",
    "complete_with_schema",
    "extract_json",
    "match_choice",
    "parse_answer",
    "parse_choice",
    "restore_answer",
    "restore_strict",
    "schema_dict",
    "strict_schema",
    "validate",
]
