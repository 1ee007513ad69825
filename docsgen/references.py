"""Which generated region lives in which page, and what it should hold now."""

from __future__ import annotations

from pathlib import Path

from docsgen.api_reference import api_reference
from docsgen.cli_reference import cli_reference
from docsgen.regions import Region
from docsgen.settings_reference import settings_reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def references(docs: Path = DOCS) -> list[Region]:
    return [
        Region(docs / "reference" / "cli.md", "cli", cli_reference()),
        Region(docs / "reference" / "configuration.md", "settings", settings_reference()),
        Region(docs / "reference" / "api.md", "api", api_reference()),
    ]


def stale(docs: Path = DOCS) -> list[Region]:
    return [region for region in references(docs) if not region.is_current()]
