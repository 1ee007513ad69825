"""Times as the API answers them: in UTC, with their zone (`2026-11-27T16:02:37.123+00:00`).

SQLite hands datetimes back without their zone though Folio writes them in UTC; the schema
says `date-time`, which RFC 3339 gives with an offset."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator

from app.db.dialect import as_utc

UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]
