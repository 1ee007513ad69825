"""The report as its JSON document."""

from __future__ import annotations

import json
from typing import Any

from app.report.schema import Report


def _rounded(value: Any) -> Any:
    # Drop float noise (0.30000000000000004) without losing small costs.
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def report_dict(report: Report) -> dict[str, Any]:
    return dict(_rounded(report.to_dict()))


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), ensure_ascii=False, indent=2) + "\n"
