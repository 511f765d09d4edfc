"""Checking tool-call arguments against a tool's JSON schema (the subset tool schemas use).

Supported keywords: ``type`` (object, string, integer, number, boolean, array, null, or a list
of them), ``properties``, ``required``, ``additionalProperties: false``, ``enum``, ``items``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``minItems``/``maxItems``. Messages name the
offending argument and say what was expected, because the model reads them and retries.
"""

from __future__ import annotations

from typing import Any

_TYPE_NAMES = {
    "object": dict,
    "string": str,
    "array": list,
    "boolean": bool,
    "null": type(None),
}


def object_schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed JSON-schema object (``additionalProperties: false``): the shape every tool's parameters take."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _type_ok(value: Any, type_name: str) -> bool:
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = _TYPE_NAMES.get(type_name)
    if expected is None:
        raise ValueError(f"unsupported schema type {type_name!r}")
    return isinstance(value, expected)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        int: "an integer",
        float: "a number",
    }.get(type(value), type(value).__name__)


def schema_errors(value: Any, schema: dict[str, Any], where: str = "arguments", *, bounds: bool = True) -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it conforms).

    ``bounds=False`` checks presence, types and enums only: hermes-agent's tools clamp numbers and
    lengths themselves instead of refusing them, and tools with its schemas do the same.
    """
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_type_ok(value, t) for t in names):
            return [f"{where} must be {' or '.join(names)}, got {_describe(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where} must be one of {', '.join(map(repr, schema['enum']))}, got {value!r}")
    if bounds and isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where} must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where} must be <= {schema['maximum']}, got {value}")
    if bounds and isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where} must have at most {schema['maxLength']} characters, got {len(value)}")
    if isinstance(value, list) and bounds:
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{where} must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where} must have at most {schema['maxItems']} items, got {len(value)}")
    if isinstance(value, list):
        item_schema = schema.get("items")
        if isinstance(item_schema, dict):
            for i, item in enumerate(value):
                errors.extend(schema_errors(item, item_schema, f"{where}[{i}]", bounds=bounds))
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(
                    f"missing required argument {key!r}" if where == "arguments" else f"{where} is missing {key!r}"
                )
        if schema.get("additionalProperties") is False:
            unknown = sorted(set(value) - set(props))
            if unknown:
                errors.append(
                    f"unknown argument(s) {', '.join(map(repr, unknown))} in {where}; "
                    f"allowed: {', '.join(map(repr, props)) or 'none'}"
                )
        for key, sub in props.items():
            if key in value:
                label = key if where == "arguments" else f"{where}.{key}"
                errors.extend(schema_errors(value[key], sub, label, bounds=bounds))
    return errors
