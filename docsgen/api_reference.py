"""The REST API reference, read from the OpenAPI schema FastAPI builds for `folio serve`:
every operation with its parameters, body and answers, then every schema with its fields."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from app.api.app import create_app
from app.settings import Settings

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_schema() -> dict[str, Any]:
    """The schema of the app as `folio serve` builds it (on a throw-away SQLite file)."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp), database_url=f"sqlite:///{tmp}/folio.db", broker_url=None
        )
        app = create_app(settings)
        try:
            return app.openapi()
        finally:
            app.state.folio.runner.close()


def api_reference(schema: dict[str, Any] | None = None) -> str:
    schema = schema or openapi_schema()
    lines: list[str] = ["## Operations", ""]
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                lines += _operation(method, path, item[method])
    lines += ["## Schemas", ""]
    for name, body in schema.get("components", {}).get("schemas", {}).items():
        lines += _schema(name, body)
    return "\n".join(lines).rstrip() + "\n"


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    if op.get("summary"):
        lines += [f"**{op['summary']}**", ""]
    if op.get("description"):
        lines += [op["description"].strip(), ""]
    for param in op.get("parameters", []):
        required = "required" if param.get("required") else "optional"
        about = _text(param.get("description") or param.get("schema", {}).get("description"))
        kind = _type_of(param.get("schema", {}))
        lines.append(f"- `{param['name']}` ({param['in']}, {kind}, {required}){about}")
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        lines += _body(media, content.get("schema", {}))
    answers = ", ".join(_answer(status, a) for status, a in op.get("responses", {}).items())
    return [*lines, f"- answers: {answers}", ""]


def _body(media: str, schema: dict[str, Any]) -> list[str]:
    """A request body: its type, and the fields of an inline object one level down."""
    about = _text(schema.get("description"))
    lines = [f"- body `{media}`: {_type_of(schema)}{about}"]
    required = set(schema.get("required", []))
    for field, spec in schema.get("properties", {}).items():
        need = "required" if field in required else "optional"
        lines.append(f"    - `{field}` ({_type_of(spec)}, {need}){_text(spec.get('description'))}")
    return lines


def _answer(status: str, answer: dict[str, Any]) -> str:
    text = f"`{status}` {_text(answer.get('description'), prefix='')}".rstrip()
    schema = answer.get("content", {}).get("application/json", {}).get("schema")
    return f"{text} ({_type_of(schema)})" if schema and status.startswith("2") else text


def _schema(name: str, body: dict[str, Any]) -> list[str]:
    lines = [f"### `{name}`", ""]
    if body.get("description"):
        lines += [body["description"].strip(), ""]
    required = set(body.get("required", []))
    for field, spec in body.get("properties", {}).items():
        need = "required" if field in required else "optional"
        lines.append(f"- `{field}` ({_type_of(spec)}, {need}){_text(spec.get('description'))}")
    if "enum" in body:
        lines.append("- one of " + ", ".join(f"`{json.dumps(v)}`" for v in body["enum"]))
    return [*lines, ""]


def _type_of(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in spec:
            return " or ".join(_type_of(s) for s in spec[key])
    if spec.get("type") == "array":
        return f"array of {_type_of(spec.get('items', {}))}"
    if "enum" in spec:
        return " or ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    kind = spec.get("type", "any")
    return f"{kind} ({spec['format']})" if "format" in spec else str(kind)


def _text(text: str | None, prefix: str = ": ") -> str:
    return f"{prefix}{' '.join(text.split())}" if text else ""
