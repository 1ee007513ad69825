"""The configuration reference, read from the settings model (`app.settings`): every field of
`Settings`, of a VLM endpoint and of a plan step, with its environment variable, type, default
and description; and the loop detector's thresholds (`DetectorConfig`) with their defaults."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from app.degeneration.config import DetectorConfig
from app.settings import PlanStep, Settings, VlmEndpoint

# Defaults that depend on the machine or on another field: what they are, in words.
COMPUTED_DEFAULTS = {
    "data_dir": "`~/.local/share/folio` (per platform)",
    "database_url": "`sqlite:///<data_dir>/folio.db`",
    "concurrency": "the number of CPU cores",
    "upload_dir": "`<data_dir>/uploads`",
    "storage_cache_dir": "`<data_dir>/cache`",
}


def settings_reference() -> str:
    lines = ["## Settings", ""]
    lines += _table(Settings, env=lambda name: f"`FOLIO_{name.upper()}`")
    lines += ["", "## A VLM endpoint (`vlm_endpoints.NAME`)", ""]
    lines += _table(VlmEndpoint, env=lambda name: f"`FOLIO_VLM_ENDPOINTS__NAME__{name.upper()}`")
    lines += ["", "## A plan step (`plans.NAME`, a list of steps)", ""]
    lines += _table(PlanStep, env=None)
    lines += ["", "## Loop detector thresholds (`detector`)", ""]
    lines += _detector_table()
    return "\n".join(lines) + "\n"


def _table(model: type[BaseModel], env: Any) -> list[str]:
    """One row a field; the environment variable under the name, to keep four columns."""
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        where = f"`{name}`<br>{env(name)}" if env else f"`{name}`"
        cells = [where, _type(field), _default(model, name, field), _cell(field.description or "")]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _type(field: FieldInfo) -> str:
    return f"`{_type_name(field.annotation)}`"


def _type_name(annotation: Any) -> str:
    """`str or None`, `'markdown' or 'dharma'`, `dict[str, VlmEndpoint]`: no pipes in a cell."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if args:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(_type_name(a) for a in args)}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def _default(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    if name in COMPUTED_DEFAULTS:
        return COMPUTED_DEFAULTS[name]
    if field.default_factory is not None:
        value = field.get_default(call_default_factory=True, validated_data=defaults(model))
        rendered = json.dumps(_plain(value), separators=(", ", ": "))
        if len(rendered) <= 40:
            return f"`{rendered}`"
        if isinstance(value, dict):
            return "entries " + ", ".join(f"`{key}`" for key in value)
        return "computed at start-up"
    if field.is_required():
        return "required"
    return "unset" if field.default is None else f"`{json.dumps(_plain(field.default))}`"


def defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Every field's default, in order: a factory may read the fields before it (the
    built-in `vlm` plan follows the default endpoints' profile)."""
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if not field.is_required():
            values[name] = field.get_default(call_default_factory=True, validated_data=values)
    return values


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_defaults=True)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _detector_table() -> list[str]:
    rows = ["| threshold | default |", "|---|---|"]
    for field in dataclasses.fields(DetectorConfig):
        rows.append(f"| `{field.name}` | `{field.default}` |")
    return rows


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
