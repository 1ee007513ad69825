"""An attempt is declared twice: its table (app/db/models.py) and the engine's result
(app/domain.py). What else names its fields takes them from those, so a column added to the
table reaches the row written, the report's read and the API, or this fails."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from app.api.schemas.pages import AttemptOut
from app.db.attempts import PARAM_COLUMNS, attempt_row
from app.db.models import Attempt
from app.db.page_path import PageWork
from app.domain import AttemptStatus, EngineResult, Verdict
from app.report.rows import AttemptRow
from app.settings import PlanStep

COLUMNS = {column.name for column in Attempt.__table__.columns}


def test_an_attempt_row_fills_every_column_from_the_result() -> None:
    started = datetime(2026, 11, 27, 12, tzinfo=UTC)
    result = EngineResult(
        "text",
        AttemptStatus.DEGENERATE,
        started,
        started.replace(second=3),
        model="m",
        verdict=Verdict("char_run", 1, 40),
        stop_mechanism="abort_call",
        tokens_after_verdict=12,
    )
    work = PageWork(7, "job", 1, "/a.pdf", "default", {})
    row = attempt_row(work, 2, PlanStep(name="ocr", engine="tesseract"), result)
    assert set(row) == COLUMNS - {"id"}  # the id is the database's
    assert (row["job_id"], row["page_id"], row["step_index"]) == ("job", 7, 2)
    assert (row["step_name"], row["engine"], row["model"]) == ("ocr", "tesseract", "m")
    assert (row["verdict_kind"], row["verdict_onset"], row["duration_s"]) == ("char_run", 40, 3.0)
    assert (row["stop_mechanism"], row["tokens_after_verdict"]) == ("abort_call", 12)
    assert (row["output"], row["output_chars"], row["answer_fields"]) == ("text", 4, None)


def test_the_report_reads_its_attempt_fields_from_the_table_by_name() -> None:
    read = {f.name for f in fields(AttemptRow)} - {"output_tail"}  # the tail is read apart
    assert read - COLUMNS == set(PARAM_COLUMNS)


# What the API derives from an attempt's columns rather than shows as one: the step's name, the
# verdict as one object, and what the console shows (issue 63): the decoding from its params,
# the loop's unit read from its output, the grounding check and the report's cost.
DERIVED = {"step", "verdict", "decoding", "loop_unit", "grounding", "cost_usd"}


def test_the_api_shows_attempt_columns_by_their_own_names() -> None:
    assert set(AttemptOut.model_fields) - COLUMNS == DERIVED
