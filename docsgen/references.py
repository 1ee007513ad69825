"""Which generated region lives in which page, and what it should hold now."""

from __future__ import annotations

from pathlib import Path

from docsgen.api_reference import api_reference
from docsgen.cli_reference import cli_reference
from docsgen.defaults_reference import (
    default_endpoint,
    gpu_example,
    plans_table,
    vlm_plans_table,
)
from docsgen.regions import Region
from docsgen.settings_reference import settings_reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def references(docs: Path = DOCS) -> list[Region]:
    return [
        Region(docs / "reference" / "cli.md", "cli", cli_reference()),
        Region(docs / "reference" / "configuration.md", "settings", settings_reference()),
        Region(docs / "reference" / "api.md", "api", api_reference()),
        # defaults the prose pages state
        Region(docs / "configuration.md", "default-endpoint", default_endpoint()),
        Region(docs / "configuration.md", "plans", plans_table()),
        Region(docs / "deploying.md", "default-endpoint", default_endpoint()),
        Region(docs / "models.md", "default-endpoint", default_endpoint()),
        Region(docs / "models.md", "vlm-plans", vlm_plans_table()),
        Region(docs / "loop-stop-gpu.md", "gpu-example", gpu_example()),
    ]


def stale(docs: Path = DOCS) -> list[Region]:
    return [region for region in references(docs) if not region.is_current()]
