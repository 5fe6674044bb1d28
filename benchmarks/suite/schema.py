"""A JSON Schema checker for the subset report.schema.json uses (draft 2020-12 keywords: type,
const, enum, properties, required, additionalProperties, items, minItems, minimum, pattern,
$ref to "#/$defs/..."), so the suite validates its reports without a new dependency.

    problems = validate(document, load("report.schema.json"))   # [] when valid

Each problem names the JSON path and what was expected: "$.figures[3].median: expected number, got str".
"""
import json
import re

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
SUPPORTED = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "const", "enum",
             "properties", "required", "additionalProperties", "items", "minItems", "minimum",
             "pattern"}


def load(path):
    with open(path) as f:
        s = json.load(f)
    _check_keywords(s, "#")
    return s


def _check_keywords(s, where):
    """A schema keyword this checker does not implement would be silently ignored: refuse it."""
    if isinstance(s, dict):
        unknown = set(s) - SUPPORTED
        if unknown and not where.endswith("/properties") and not where.endswith("/$defs"):
            raise ValueError(f"schema {where}: unsupported keyword(s) {sorted(unknown)}")
        for k, v in s.items():
            _check_keywords(v, f"{where}/{k}")
    elif isinstance(s, list):
        for i, v in enumerate(s):
            _check_keywords(v, f"{where}/{i}")


def _is_type(value, t):
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, TYPES[t])


def validate(doc, schema, root=None, path="$"):
    root = root or schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref}")
        return validate(doc, root["$defs"][ref[len("#/$defs/"):]], root, path)
    problems = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(doc, t) for t in types):
            return [f"{path}: expected {' or '.join(types)}, got {type(doc).__name__}"]
    if "const" in schema and doc != schema["const"]:
        problems.append(f"{path}: expected {schema['const']!r}, got {doc!r}")
    if "enum" in schema and doc not in schema["enum"]:
        problems.append(f"{path}: {doc!r} is not one of {schema['enum']}")
    if "minimum" in schema and _is_type(doc, "number") and doc < schema["minimum"]:
        problems.append(f"{path}: {doc} is below the minimum {schema['minimum']}")
    if "pattern" in schema and isinstance(doc, str) and not re.search(schema["pattern"], doc):
        problems.append(f"{path}: {doc!r} does not match /{schema['pattern']}/")
    if isinstance(doc, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in doc:
                problems.append(f"{path}: missing required key {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, value in doc.items():
            if key in props:
                problems += validate(value, props[key], root, f"{path}.{key}")
            elif extra is False:
                problems.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                problems += validate(value, extra, root, f"{path}.{key}")
    if isinstance(doc, list):
        if "minItems" in schema and len(doc) < schema["minItems"]:
            problems.append(f"{path}: {len(doc)} items, fewer than {schema['minItems']}")
        if "items" in schema:
            for i, value in enumerate(doc):
                problems += validate(value, schema["items"], root, f"{path}[{i}]")
    return problems
