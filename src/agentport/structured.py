"""Structured output: schemas in, validated objects out.

- `schema_dict(output_schema)`: a pydantic model class or JSON-schema dict -> JSON schema.
- `extract_json(text)`: the first JSON value in free text (fenced block, bare, or the first
  balanced object/array, strings and escapes respected, trailing prose ignored).
- `validate(output_schema, value)`: a model instance / dict, or the validation errors.
- `parse_answer(text, output_schema)`: extract + validate -> `Result[parsed, ProviderError]`
  (`schema_mismatch` carrying the raw text).
- `strict_schema(output_schema)` / `restore_strict(value, output_schema)`: the strict subset a
  schema-enforcing backend accepts, and its undoing on the answer.
- `complete_with_schema(call, messages, config)`: the TRANSLATED loop: schema in the prompt,
  validate, re-prompt with the errors (`config.schema_retries` more tries), then
  `Failure(schema_mismatch)`.
- `match_choice(text, choices)` / `complete_with_choices(call, messages, config)`: the same
  for `CompletionConfig.choices` (the answer must be exactly one of a few strings).
- `complete_constrained(call, messages, config)`: the one dispatch every adapter uses: the
  schema loop, the choices loop, or a single plain call.
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
    "choice_instruction",
    "complete_constrained",
    "complete_with_choices",
    "complete_with_schema",
    "extract_json",
    "match_choice",
    "parse_answer",
    "parse_choice",
    "restore_strict",
    "schema_dict",
    "schema_instruction",
    "strict_schema",
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
    call: Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]],
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    translated: bool = True,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Validate-and-retry for `config.choices`, like `complete_with_schema`.

    The returned response's `content` and `parsed` are the matched choice; after
    `config.schema_retries` re-prompts, `Failure(schema_mismatch)` with the last raw text.
    """
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
    call: Callable[[list[Message]], Awaitable[Result[CompletionResponse, ProviderError]]],
    messages: Sequence[Message],
    config: CompletionConfig,
    *,
    schema_native: bool = False,
    choices_native: bool = False,
    backend: str = "",
) -> Result[CompletionResponse, ProviderError]:
    """Route one call by what it constrains: `output_schema` -> `complete_with_schema`,
    `choices` -> `complete_with_choices` (each with its instruction in the prompt unless the
    backend enforces it natively), otherwise a single plain *call*."""
    if config.output_schema is not None:
        return await complete_with_schema(
            call, messages, config, translated=not schema_native, backend=backend
        )
    if config.choices is not None:
        return await complete_with_choices(
            call, messages, config, translated=not choices_native, backend=backend
        )
    return await call(list(messages))


# --- strict subset (OpenAI-style `strict: true` json_schema, used by codex `--output-schema`) ---

# Keywords the strict subset rejects or ignores; they are stripped from what the backend sees
# and still enforced locally, because `validate` runs against the ORIGINAL schema.
_STRICT_UNSUPPORTED = frozenset(
    {
        "format", "pattern", "minLength", "maxLength", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
        "uniqueItems", "minProperties", "maxProperties", "patternProperties", "propertyNames",
        "unevaluatedProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
        "default", "examples", "if", "then", "else", "not", "dependentRequired",
        "dependentSchemas", "$schema", "$id", "$comment", "readOnly", "writeOnly",
        "deprecated", "contentEncoding", "contentMediaType", "discriminator",
    }
)  # fmt: skip
_MAP_ITEM = "key/value pairs"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return schema
    if isinstance(kind, str) and "$ref" not in schema and "anyOf" not in schema:
        out = dict(schema, type=[kind, "null"])
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    if "anyOf" in schema and "$ref" not in schema:
        branches = schema["anyOf"]
        if any(b.get("type") == "null" for b in branches if isinstance(b, dict)):
            return schema
        return dict(schema, anyOf=[*branches, {"type": "null"}])
    return {"anyOf": [schema, {"type": "null"}]}


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _STRICT_UNSUPPORTED:
            continue
        if key in ("properties", "$defs", "definitions"):
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "prefixItems") or (
            key == "additionalProperties" and isinstance(value, dict)
        ):
            out[key] = _strict(value)
        else:
            out[key] = value
    if "oneOf" in out:  # the strict subset knows anyOf only; for validation they agree here
        out["anyOf"] = out.pop("oneOf")
    if "allOf" in out and len(out["allOf"]) == 1 and isinstance(out["allOf"][0], dict):
        merged = {**out.pop("allOf")[0], **out}
        out = merged
    is_object = out.get("type") == "object" or "properties" in out
    if is_object:
        extra = out.get("additionalProperties")
        if isinstance(extra, dict) and not out.get("properties"):
            # An open map has no strict form: ask for [{key, value}] and restore afterwards.
            return {
                "type": "array",
                "description": out.get("description", _MAP_ITEM),
                "items": {
                    "type": "object",
                    "properties": {"key": {"type": "string"}, "value": extra},
                    "required": ["key", "value"],
                    "additionalProperties": False,
                },
            }
        props: dict[str, Any] = out.get("properties", {})
        required = set(out.get("required", ()))
        out["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False
        out["type"] = "object"
    return out


def strict_schema(output_schema: OutputSchema) -> dict[str, Any]:
    """The strict subset a schema-enforcing backend accepts (codex `--output-schema`, OpenAI
    `strict: true`): every property required, formerly optional ones made nullable,
    `additionalProperties: false`, `$defs`/`$ref` kept and normalised, `oneOf` -> `anyOf`, a
    lone `allOf` merged, open maps turned into `[{key, value}]` arrays, unsupported keywords
    (`format`, `pattern`, `minLength`, `default`, ...) stripped. The OpenAI wrapper shape
    `{"name", "schema", "strict"}` is unwrapped. Undo it on the answer with `restore_strict`.

    Source: ouroboros.md §4.2 and §9 #14 (what the anchor's normaliser missed).
    """
    schema = schema_dict(output_schema)
    if "schema" in schema and isinstance(schema["schema"], dict) and "type" not in schema:
        schema = schema["schema"]
    result: dict[str, Any] = _strict(schema)
    return result


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    seen = 0
    while isinstance(ref, str) and ref.startswith("#/") and seen < 32:
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        ref = target.get("$ref") if isinstance(target, dict) else None
        seen += 1
    return node


def _allows_null(node: dict[str, Any], root: dict[str, Any]) -> bool:
    node = _resolve(node, root)
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if node.get("const", 0) is None or None in node.get("enum", [0]):
        return True
    return any(
        isinstance(b, dict) and _allows_null(b, root)
        for b in [*node.get("anyOf", []), *node.get("oneOf", [])]
    )


def _restore(value: Any, node: Any, root: dict[str, Any]) -> Any:
    if not isinstance(node, dict):
        return value
    node = _resolve(node, root)
    if isinstance(value, dict):
        props = node.get("properties")
        if props is None:
            for branch in [*node.get("anyOf", []), *node.get("oneOf", [])]:
                if isinstance(branch, dict) and "properties" in _resolve(branch, root):
                    return _restore(value, branch, root)
            return value
        required = set(node.get("required", ()))
        out = {}
        for key, item in value.items():
            sub = props.get(key)
            if (
                item is None
                and key not in required
                and sub is not None
                and not _allows_null(sub, root)
            ):
                continue  # nullable only because strict mode made it required
            out[key] = _restore(item, sub, root) if sub is not None else item
        return out
    if isinstance(value, list):
        extra = node.get("additionalProperties")
        is_map = isinstance(extra, dict) and not node.get("properties")
        if is_map and all(isinstance(p, dict) and set(p) == {"key", "value"} for p in value):
            return {p["key"]: _restore(p["value"], extra, root) for p in value}
        items = node.get("items")
        return [_restore(item, items, root) for item in value]
    return value


def restore_strict(value: Any, output_schema: OutputSchema) -> Any:
    """Undo `strict_schema` on an answer: drop nulls the original schema does not allow for
    optional fields, and turn `[{key, value}]` arrays back into maps. Walks the ORIGINAL schema;
    the result is then validated against it."""
    schema = schema_dict(output_schema)
    if "schema" in schema and isinstance(schema["schema"], dict) and "type" not in schema:
        schema = schema["schema"]
    return _restore(value, schema, schema)
