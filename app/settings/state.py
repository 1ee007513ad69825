"""Where Folio keeps its own state: the data folder, the database, the broker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import BaseModel, Field


def user_data_dir() -> Path:
    """Where a per-user tool keeps its state: the XDG base directory spec on Linux (as the
    platformdirs package does), ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows.
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = Path(os.environ.get("XDG_DATA_HOME") or "")
        base = xdg if xdg.is_absolute() else Path.home() / ".local" / "share"
    return base / "folio"


class StateFields(BaseModel):
    """The data folder, the database and the broker."""

    data_dir: Path = Field(
        default_factory=user_data_dir,
        description="Folder for Folio's own state (the SQLite database, API uploads); "
        "$XDG_DATA_HOME/folio, i.e. ~/.local/share/folio, by default.",
    )
    database_url: str = Field(
        default_factory=lambda data: f"sqlite:///{data['data_dir'] / 'folio.db'}",
        description="SQLAlchemy URL of the database; the SQLite file folio.db in data_dir "
        "by default.",
    )
    broker_url: str | None = Field(
        default=None, description="Celery broker (Redis) URL; unset means the in-process executor."
    )
