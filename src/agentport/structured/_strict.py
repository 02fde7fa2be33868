"""The strict schema subset (OpenAI-style `strict: true` json_schema, codex `--output-schema`):
what it cannot express, the normalisation into it, and its undoing on the answer (pure)."""

from __future__ import annotations

from typing import Any

from ..core import OutputSchema
from ._validate import schema_dict

__all__ = ["native_schema_gaps", "restore_strict", "strict_schema"]

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
# A node with one of these says what its value is; one with none of them accepts anything.
_TYPING = ("type", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "properties")


def _unwrap(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema inside the OpenAI wrapper shape `{"name", "schema", "strict"}`."""
    if "schema" in schema and isinstance(schema["schema"], dict) and "type" not in schema:
        inner: dict[str, Any] = schema["schema"]
        return inner
    return schema


def _gaps(node: Any, path: str, out: list[str]) -> None:
    def at(name: str) -> str:
        return name if path == "(root)" else f"{path}.{name}"

    if isinstance(node, bool):
        out.append(f"{path}: a boolean subschema ({str(node).lower()})")
        return
    if not isinstance(node, dict):
        return
    if not any(key in node for key in _TYPING):
        out.append(f"{path}: any value (a schema with no type, e.g. pydantic Any)")
        return
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1:
        out.append(f"{path}: allOf with several schemas")
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(key) or ():
            _gaps(branch, path, out)
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or ())
    if "object" in kinds or "properties" in node:
        props = node.get("properties") or {}
        for name, sub in props.items():
            _gaps(sub, at(name), out)
        extra = node.get("additionalProperties", True)
        if "properties" not in node and extra is not False:  # `properties: {}` is a record
            free = extra is True or extra == {}
            out.append(
                f"{path}: a {'free-form' if free else 'typed'} map (an object with no "
                f"properties, e.g. dict[str, {'Any' if free else '...'}])"
            )
    if "array" in kinds:
        items = node.get("items")
        if items is None:
            kind = "a tuple (prefixItems)" if "prefixItems" in node else "no item schema"
            out.append(f"{path}: an array with {kind}")
        else:
            _gaps(items, f"{path}[]", out)


def native_schema_gaps(output_schema: OutputSchema) -> tuple[str, ...]:
    """The nodes of *output_schema* the strict subset cannot express, one `path: what` line
    each (empty: it can). They are: a node with no type (pydantic `Any`), a boolean subschema
    (`true` / `false`), a map (an object with no `properties` that allows other keys:
    `dict[str, Any]`, `dict[str, int]`), an array with no item schema (a tuple), and an
    `allOf` of several schemas. Sent to a schema-enforcing backend, such a node is rejected
    or forces a useless answer (a map sent strictly only admits `{}`), so every backend then
    takes the TRANSLATED path instead (`complete_with_schema`).
    """
    schema = _unwrap(schema_dict(output_schema))
    out: list[str] = []
    _gaps(schema, "(root)", out)
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            _gaps(sub, name, out)
    return tuple(out)


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
        elif key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = _strict(value)
        else:
            out[key] = value
    if "oneOf" in out:  # the strict subset knows anyOf only; for validation they agree here
        out["anyOf"] = out.pop("oneOf")
    if "allOf" in out and len(out["allOf"]) == 1 and isinstance(out["allOf"][0], dict):
        merged = {**out.pop("allOf")[0], **out}
        out = merged
    if out.get("type") == "object" or "properties" in out:
        props: dict[str, Any] = out.get("properties", {})
        required = set(out.get("required", ()))
        out["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False  # extra keys are dropped, the answer stays valid
        out["type"] = "object"
    return out


def strict_schema(output_schema: OutputSchema) -> dict[str, Any]:
    """The strict subset a schema-enforcing backend accepts (codex `--output-schema`, OpenAI
    `strict: true`): every property required, formerly optional ones made nullable,
    `additionalProperties: false`, `$defs`/`$ref` kept and normalised, `oneOf` -> `anyOf`, a
    lone `allOf` merged, unsupported keywords (`format`, `pattern`, `minLength`, `default`,
    ...) stripped (still enforced locally). The OpenAI wrapper shape `{"name", "schema",
    "strict"}` is unwrapped. Undo it on the answer with `restore_strict`.

    Raises ValueError naming the nodes when `native_schema_gaps` finds any: such a schema
    is never sent natively: a strict-mode API answers an unsupported schema with a 400
    `invalid_json_schema`, and a normaliser that skips `anyOf`/`$ref` or makes optional
    fields required (Q00/ouroboros's codex adapter) changes what the answer may be.
    """
    gaps = native_schema_gaps(output_schema)
    if gaps:
        raise ValueError(f"the strict schema subset cannot express: {'; '.join(gaps)}")
    result: dict[str, Any] = _strict(_unwrap(schema_dict(output_schema)))
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
        return [_restore(item, node.get("items"), root) for item in value]
    return value


def restore_strict(value: Any, output_schema: OutputSchema) -> Any:
    """Undo `strict_schema` on an answer: drop nulls the original schema does not allow for
    optional fields. Walks the ORIGINAL schema; the result is then validated against it."""
    schema = _unwrap(schema_dict(output_schema))
    return _restore(value, schema, schema)
