"""The detector's headline (issue 50): the frozen detector's false alarms on the harvested
split, read after the freeze, first; then the same pages with grounding. Read from the
committed results of `bench detector-harvest` and `bench detector-grounding`, which measure
them; `bench detector` shows them before its own figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def headline(results: Path = RESULTS) -> dict[str, Any]:
    """The frozen figure with its freeze commit, and the grounded ones; {} where not run."""
    found: dict[str, Any] = {}
    harvest = results / "detector_harvest.json"
    if harvest.is_file():
        report = json.loads(harvest.read_text(encoding="utf-8"))
        found["frozen"] = {
            "freeze_commit": report["freeze"]["commit"],
            "pages": report["headline"]["pages"],
            "stream_per_1000": report["headline"]["stream_per_1000"],
            "worker_per_1000": report["headline"]["worker_per_1000"],
        }
    grounded = results / "detector_grounding.json"
    if grounded.is_file():
        rates = json.loads(grounded.read_text(encoding="utf-8"))["false_alarms"]
        keys = ("pages", "alone_per_1000", "grounded_per_1000", "after_retry_per_1000")
        found["grounding"] = {
            split: {key: rates[name][key] for key in keys if key in rates[name]}
            for split, name in (
                ("harvested", "pooled: harvested split"),
                ("harvested, scans", "pooled: harvested split, scan"),
                ("harvested, text layers", "pooled: harvested split, text layer"),
                ("corpus", "pooled: corpus"),
            )
            if name in rates
        }
    return found


def headline_table(found: dict[str, Any]) -> Table:
    table = Table(title="False alarms per 1,000 real healthy pages (the online stop)")
    for column in ("pages", "what", "per 1,000"):
        table.add_column(column, justify="left" if column == "what" else "right")
    if frozen := found.get("frozen"):
        what = f"harvested split, detector frozen at {frozen['freeze_commit'][:7]}"
        table.add_row(str(frozen["pages"]), what, str(frozen["stream_per_1000"]))
    for split, row in found.get("grounding", {}).items():
        table.add_row(str(row["pages"]), f"{split}: alone", str(row["alone_per_1000"]))
        table.add_row(str(row["pages"]), f"{split}: grounded", str(row["grounded_per_1000"]))
        if "after_retry_per_1000" in row and split.endswith("scans"):
            what = f"{split}: grounded, the next attempt asking the read"
            table.add_row(str(row["pages"]), what, str(row["after_retry_per_1000"]))
    return table
