"""Work on a page is bounded by the page's size, not its trust (issue 62, defect 4).

A 22 KB one-page PDF held ~106,000 invisible overlapping lines: its text was read with no
bound and its lines grouped in n^2, so it never finished, and a cancel left it running. The
bombs here are built in the test (tests/hostile_pages.py); what they show is counted, not
timed: the cap each page broke, the stage a stop ended, how the grouping's work grows. The
time and memory before and after are `python -m bench.textlayer_bomb` (docs/benchmarks.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.pdf.render import read_page, read_page_layout
from app.pdf.text_bounds import TextCaps, TextLayerTooLarge
from app.pipeline.page_stop import PageStop, stopped_close
from app.pipeline.text_layer import STOPPED, judge_layer
from app.textlayer import GateConfig
from app.textlayer.edges import running_lines
from app.textlayer.model import Box, PageLayout, TextLine
from tests.hostile_inputs import good_pdf
from tests.hostile_pages import nested_forms_pdf, repeated_line_pdf, text_bomb_pdf

runner = CliRunner()


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_ENGINE": "textlayer", "COLUMNS": "160"}


def failed_pages(summary: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {d["name"]: d.get("failed_pages") or [] for d in summary["documents"]}


def test_the_text_layer_bomb_fails_its_page_alone_before_its_text_is_read(
    tmp_path: Path, env: dict[str, str]
) -> None:
    bomb = text_bomb_pdf(100_000)
    assert len(bomb) < 40_000  # the review's was 22 KB for 106,000 lines
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bomb.pdf").write_bytes(bomb)
    (folder / "good.pdf").write_bytes(good_pdf(2))

    result = runner.invoke(app, ["run", str(folder), "--out", str(tmp_path / "out")], env=env)

    assert result.exit_code == exit_codes.SOME_FAILED, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["pages_succeeded"] == 2  # the good document, beside it, whole
    (page,) = failed_pages(summary)["bomb"]
    assert page["category"] == "text_layer_too_large"
    # Refused on what its content draws, counted before MuPDF read a character of it.
    assert "draws 100,001 pieces of text" in page["error"]
    assert "textlayer_max_spans" in page["error"]


def test_forms_drawn_by_forms_are_counted_as_often_as_they_are_drawn(tmp_path: Path) -> None:
    """A page draws a form 40 times that draws a form 40 times that shows a line 50 times:
    80,000 lines from a file of about a kilobyte."""
    path = tmp_path / "forms.pdf"
    path.write_bytes(nested_forms_pdf(per_form=50, fan_out=40))
    assert path.stat().st_size < 4_000

    with pytest.raises(TextLayerTooLarge, match=r"draws 80,001 pieces of text"):
        read_page(path, 1, 72, 1000)


@pytest.mark.parametrize(
    ("caps", "broken"),
    [
        (TextCaps(chars=10**9, lines=400, spans=10**9), r"holds 501 lines, over the 400 cap"),
        (TextCaps(chars=5_000, lines=10**9, spans=10**9), r"5,000 (cap|characters take)"),
        (TextCaps(chars=10**9, lines=10**9, spans=400), r"draws 501 pieces of text"),
    ],
)
def test_each_cap_is_named_by_the_page_it_refuses(
    tmp_path: Path, caps: TextCaps, broken: str
) -> None:
    """500 lines set down the page (not over one another), one above them."""
    path = tmp_path / "lines.pdf"
    path.write_bytes(spread_lines_pdf(500))
    with pytest.raises(TextLayerTooLarge, match=broken):
        read_page(path, 1, 72, 1000, caps)
    assert read_page(path, 1, 72, 1000).text_layer.count("Line") == 500  # under the defaults


def spread_lines_pdf(lines: int) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=1600)
    text = "\n".join(f"Line {n} of the ledger" for n in range(lines))
    assert page.insert_textbox(pymupdf.Rect(20, 20, 592, 1580), text, fontsize=2) >= 0
    page.insert_text((20, 15), "Ledger", fontsize=2)
    data = bytes(doc.tobytes(deflate=True))
    doc.close()
    return data


@dataclass(frozen=True)
class CountedBox(Box):
    """A box that counts how often its bottom is read: the grouping's work, not its time."""

    reads: list[int] | None = None

    def __getattribute__(self, name: str) -> Any:
        if name == "y1":
            object.__getattribute__(self, "reads").append(1)  # type: ignore[union-attr]
        return object.__getattribute__(self, name)


def grouping_work(lines: int) -> int:
    reads: list[int] = []
    layout = PageLayout(
        612,
        792,
        [
            TextLine(
                "Total 12.50", CountedBox(72, 700 - n % 3, 140, 711 - n % 3, reads), 11, False, 0
            )
            for n in range(lines)
        ],
    )
    running_lines(layout)
    return len(reads)


def test_grouping_lines_into_rows_grows_with_the_lines_not_their_square() -> None:
    """Overlapping lines all share one row: each joining line once read every line of the row
    (n^2 / 2 reads: 8 million at 4,000 lines); now the row keeps its lowest bottom."""
    small, large = grouping_work(1_000), grouping_work(4_000)
    assert large < 6 * small  # 4x the lines: about 4x the work (n^2 was 16x)


def test_a_stop_ends_the_gates_reading_between_its_stages(tmp_path: Path) -> None:
    """A cancel (or a time budget) that lands while the gate reads the layer ends it after
    the stage it landed in: the table finder, the Markdown and the words are never read."""
    path = tmp_path / "page.pdf"
    path.write_bytes(good_pdf(1))
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return True

    verdict = judge_layer(path, 1, GateConfig(("eng",)), True, stop)

    assert verdict == STOPPED and len(asked) == 1
    assert read_page_layout(path, 1) is not None  # the layout itself was there to read


def test_a_page_past_its_time_budget_fails_alone_with_the_budget_in_its_reason() -> None:
    now = [0.0]
    stop = PageStop(lambda: False, 30.0, clock=lambda: now[0])
    assert not stop()
    now[0] = 31.0
    assert stop()
    closed = stopped_close(stop)
    assert closed.failure_category == "page_time_budget"
    assert closed.error == "the page ran past its 30 s time budget (page_time_budget_s)"
    other = PageStop(lambda: False, 30.0, clock=lambda: now[0])  # another page: its own clock
    assert not other()
    cancelled = PageStop(lambda: True, 30.0, clock=lambda: now[0])
    assert stopped_close(cancelled).failure_category == "cancelled"


def test_pages_over_the_budget_fail_with_their_reason_and_the_run_ends(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "slow.pdf").write_bytes(repeated_line_pdf(2_000, mode=0))
    env = env | {"FOLIO_PAGE_TIME_BUDGET_S": "0.000001"}

    result = runner.invoke(app, ["run", str(folder), "--out", str(tmp_path / "out")], env=env)

    assert result.exit_code == exit_codes.SOME_FAILED, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (page,) = failed_pages(summary)["slow"]
    assert page["category"] == "page_time_budget" and "page_time_budget_s" in page["error"]
