"""A scan read at its verdict, so that grounding can ask it (issue 65).

Unit level: `GroundedDetector` holds a verdict while the page is read elsewhere, up to its
hold, and asks the read once it is done. End to end: `folio run` on a scanned one-page PDF
(no text layer) against the scripted stand-in answering the page's text word for word: the
verdict on lines that drift by a word waits for Tesseract's read of the page, which holds the
same five lines, and the page is read once with its answer kept; the read's text and cost are
on the attempt. A model that loops on such a page is still cut, and the page's later attempts
ask the same read (in the engine plugin's arguments too) rather than read the page again.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt
from app.degeneration import LoopDetector
from app.degeneration.grounded import READ_SLACK, GroundedDetector
from app.domain import VERDICT_READ_CPU_MS
from app.pdf import samples
from app.report.build import build_report
from app.settings import Settings, VlmEndpoint
from app.train.dpo import ExportOptions, export_preferences
from app.vllm_plugin.behaviours import PAGE_TEXT_ARG, SLACK_ARG
from bench.vllm_standin.scripted import ScriptedAnswer, StandIn, serving

runner = CliRunner()
SITES = ["northern", "southern", "eastern", "western", "central"]
PAGE = (
    "Storage log\n\n"
    + "\n".join(f"- The samples from the {s} site were stored at four degrees." for s in SITES)
    + "\n\nSigned by the lab manager.\n"
)
WORDS = [a + b for a in "bcdfg" for b in ("ar", "el", "on", "ut", "is", "ow", "ey", "ax")]
LOOPING = "Storage log\n\n" + "\n".join(
    f"- The samples from the {w} site were stored at four degrees." for w in WORDS
)


class CountedRead:
    """A read that is done after `after` questions (`PageRead`): a worker thread's read."""

    def __init__(self, text: str, after: int) -> None:
        self.text_, self.after, self.started, self.asked = text, after, 0, 0

    def start(self) -> None:
        self.started += 1

    def text(self) -> str | None:
        self.asked += 1
        return self.text_ if self.asked > self.after else None


def feed(detector: GroundedDetector, text: str) -> int | None:
    for start in range(0, len(text), 4):
        if detector.feed(text[start : start + 4]) is not None:
            return start + 4
    return None


def test_a_verdict_waits_for_the_read_and_the_read_overrules_it() -> None:
    alone = LoopDetector()
    assert feed_alone(alone, PAGE) is not None
    read = CountedRead(PAGE, after=5)
    detector = GroundedDetector(None, read, hold_chars=384)

    assert feed(detector, PAGE) is None and detector.finish() is None
    assert read.started == 1 and detector.overruled
    assert detector.read_waited is not None and 0 < detector.read_waited < 384


def test_a_read_not_done_within_the_hold_leaves_the_verdict_standing_there() -> None:
    read = CountedRead(PAGE, after=10_000)
    detector = GroundedDetector(None, read, hold_chars=64)
    at = feed(detector, LOOPING)
    alone_at = feed_alone(LoopDetector(), LOOPING)

    assert at is not None and alone_at is not None
    assert alone_at + 64 <= at <= alone_at + 64 + 4
    assert detector.read_missed and not detector.asked


def test_a_loop_the_read_does_not_hold_is_cut_after_the_read() -> None:
    read = CountedRead(PAGE, after=3)
    detector = GroundedDetector(None, read, hold_chars=384)
    at = feed(detector, LOOPING)

    assert at is not None and detector.standing is not None
    assert detector.standing.page_copies == 5
    assert LOOPING[:at].count("\n- ") <= 5 + 2 + 5 + 3  # page, margin, detector, the hold


def test_a_unit_no_page_could_hold_is_cut_without_a_read() -> None:
    read = CountedRead("", after=0)
    detector = GroundedDetector(None, read)
    assert feed(detector, "Totals " + "-" * 3000) is not None
    assert read.started == 0


def feed_alone(detector: LoopDetector, text: str) -> int | None:
    for start in range(0, len(text), 4):
        if detector.feed(text[start : start + 4]) is not None:
            return start + 4
    return None


def folio_run(db_url: str, stand_in: StandIn, source: Path, out: Path, plugin: bool) -> str:
    endpoint = {
        "base_url": stand_in.base_url,
        "model": "some-ocr-model",
        "max_tokens": 600,
        "engine_plugin": plugin,  # the stand-in records the plugin's args, applies none
        "abort_call": False,
        "server_repetition_detection": False,
        "transport_retry_s": 5,
    }
    env = {
        "FOLIO_DATABASE_URL": db_url,
        "FOLIO_ENGINE": "vlm",
        "FOLIO_VLM_ENDPOINTS": json.dumps({"primary": endpoint}),
        "FOLIO_CONCURRENCY": "1",
        # a loaded 2-core machine reads a page slowly: the test waits for it, whatever it takes
        "FOLIO_DETECTOR_GROUNDING_READ_WAIT_S": "3600",
    }
    result = runner.invoke(app, ["run", str(source), "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    return str(json.loads((out / "summary.json").read_text())["job_id"])


def attempts(db_url: str, job_id: str) -> list[Attempt]:
    with Database(db_url).session() as session:
        query = select(Attempt).where(Attempt.job_id == job_id).order_by(Attempt.id)
        return list(session.scalars(query))


def scan_folder(tmp_path: Path) -> Path:
    source = tmp_path / "in"
    source.mkdir()
    (source / "storage-log.pdf").write_bytes(samples.scanned_pdf([PAGE]))
    return source


def test_a_scan_read_at_its_verdict_keeps_the_answer_of_a_page_read_right(
    db_url: str, tmp_path: Path
) -> None:
    with serving(lambda body: ScriptedAnswer(PAGE)) as stand_in:
        job_id = folio_run(db_url, stand_in, scan_folder(tmp_path), tmp_path / "out", False)

    assert len(stand_in.requests) == 1, "read once"
    (attempt,) = attempts(db_url, job_id)
    assert attempt.status == "ok", attempt.params
    grounding = attempt.params["grounding"]
    assert grounding["overruled"] and grounding["read_wait"]["missed"] is False
    read = grounding["read"]
    assert "eastern site were stored" in read["text"] and read["model"].startswith("tesseract")
    assert attempt.params[VERDICT_READ_CPU_MS] == round(1000 * read["cpu_s"]) > 0
    kept = (tmp_path / "out" / "storage-log.md").read_text(encoding="utf-8")
    assert all(f"the {s} site" in kept for s in SITES)
    report = build_report(Database(db_url), Settings(database_url=db_url), job_id).report
    assert report.verdict_reads == 1 and report.verdict_read_cpu_s == round(read["cpu_s"], 3)
    assert report.verdicts_overruled == len(grounding["overruled"])


def test_a_loop_on_a_scan_is_cut_and_later_attempts_ask_the_same_read(
    db_url: str, tmp_path: Path
) -> None:
    """With the engine plugin as the stop, the verdict cuts at once (the plugin cannot wait
    for a read) and the read goes on; the retry sends the plugin the read's text, reads the
    page right, and export-dpo keeps the read beside the pair."""
    answers = iter([LOOPING])
    short = PAGE.split("\n- The samples from the southern")[0] + "\n"  # the retry's answer

    with serving(lambda body: ScriptedAnswer(next(answers, short))) as stand_in:
        job_id = folio_run(db_url, stand_in, scan_folder(tmp_path), tmp_path / "out", True)

    first, *later = attempts(db_url, job_id)
    assert first.status == "degenerate" and [a.status for a in later] == ["ok"]
    assert first.params["grounding"]["read_wait"]["waited_chars"] == 0  # cut at the verdict
    read = first.params["grounding"]["read"]["text"]
    assert "site were stored" in read
    retry = stand_in.requests[1]["vllm_xargs"]
    assert retry[PAGE_TEXT_ARG] == read
    assert retry[SLACK_ARG] == READ_SLACK == 1  # an OCR read may be a copy short
    assert "read" not in later[0].params.get("grounding", {}), "not read again"
    endpoint = VlmEndpoint(base_url=stand_in.base_url, model="some-ocr-model")
    settings = Settings(database_url=db_url, vlm_endpoints={"primary": endpoint})
    out = tmp_path / "dpo"
    summary = export_preferences(settings, Database(db_url), [job_id], out, ExportOptions())
    assert summary.pairs == 1, summary.skipped
    (pair,) = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert pair["metadata"]["page_read"]["text"] == read


def test_a_photo_is_read_at_3000_px_with_every_line_as_laid_out() -> None:
    """A page photographed at 600 dpi (5,100 x 6,600 px) is read scaled to 3,000 px (a phone's
    receipt photo took 3.4 CPU-s whole, 1.2 s so), each line of the page a line of the read."""
    import pymupdf
    from PIL import Image

    from app.domain import PageInput
    from app.engines.verdict_read import READ_MAX_SIDE, ScanReads, within

    page = pymupdf.open(stream=samples.scanned_pdf([PAGE]), filetype="pdf")[0]
    pixmap = page.get_pixmap(dpi=600, colorspace=pymupdf.csGRAY)
    photo = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples).convert("RGB")
    assert max(photo.size) > 2 * READ_MAX_SIDE
    assert max(within(photo, READ_MAX_SIDE).size) == READ_MAX_SIDE
    assert within(within(photo, 1000), READ_MAX_SIDE).size == within(photo, 1000).size

    reads = ScanReads("eng", None, hold_chars=384)
    try:
        done = reads._read(PageInput(photo, "", False))
    finally:
        reads.close()
    assert done.error is None and done.model.startswith("tesseract")
    lines = [line for line in done.text.splitlines() if "site were stored" in line]
    assert len(lines) == len(SITES), done.text  # one line each, not joined into a paragraph


def test_a_verdict_waits_past_the_hold_while_the_stream_moves_on_from_its_unit() -> None:
    """The page read right goes on to other lines while a long page is read: the verdict
    waits for the read (past the hold, up to `moved_on_chars`) and the answer is kept; a
    loop, which writes its unit again within every period, is still cut at the hold."""
    notes = [
        "Freezer B was defrosted on Monday and the alarm threshold was reset.",
        "Two racks were relabelled after the audit found duplicate identifiers.",
        "The courier collected the outbound parcels at noon on Tuesday.",
        "Temperature logs for the week were countersigned by the supervisor.",
        "The next inventory check is scheduled for the first of the month.",
    ]
    page = PAGE.replace("Signed by the lab manager.", "\n".join(notes) + "\nSigned.")
    hold = 256
    read = CountedRead(page, after=(hold + 96) // 4)  # done 96 characters past the hold
    detector = GroundedDetector(None, read, hold_chars=hold, moved_on_chars=4096)
    assert feed(detector, page) is None and detector.finish() is None
    assert detector.overruled and detector.read_moved_on and not detector.read_missed
    assert detector.read_waited is not None and detector.read_waited > hold

    capped = GroundedDetector(
        None, CountedRead(page, after=10_000), hold_chars=hold, moved_on_chars=200
    )
    assert feed(capped, page) is not None and capped.read_missed  # waited 200 characters, no more

    slow = GroundedDetector(None, CountedRead(PAGE, after=10_000), hold_chars=hold)
    at, alone_at = feed(slow, LOOPING), feed_alone(LoopDetector(), LOOPING)
    assert at is not None and alone_at is not None and at <= alone_at + hold + 4
    assert not slow.read_moved_on
