"""Grounding counts the answer and the page the same way (issue 65), end to end.

`folio run` reads a one-page PDF through Folio's real pipeline and VLM engine against the
scripted stand-in (`bench.vllm_standin.scripted`), which answers the page's own text word for
word, as a model that read the page right does. Each page holds copies that differ (lines
that drift by a word, table rows that differ in one word or one number, three arXiv badges of
a README): the detector alone calls them a loop, and grounding, counting the page's copies by
the rule that made the verdict, lets the answer stand: the page is read once and keeps its
answer. A model that goes on writing such copies past what the page holds is still cut.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt, Page
from app.degeneration import LoopDetector
from bench.vllm_standin.scripted import ScriptedAnswer, StandIn, serving

runner = CliRunner()
SITES = ["northern", "southern", "eastern", "western", "central"]
COLOURS = [
    "grey",
    "blue",
    "teal",
    "pink",
    "gold",
    "jade",
    "rose",
    "sand",
    "navy",
    "lime",
    "plum",
    "ruby",
    "opal",
    "onyx",
    "iron",
    "zinc",
    "coal",
]
BADGES = [
    "[![arXiv](https://img.shields.io/badge/MinerU-Technical%20Report-b31b1b.svg?logo=arXiv)]"
    "(https://arxiv.org/abs/2409.18839)",
    "[![arXiv](https://img.shields.io/badge/MinerU2.5-Technical%20Report-b31b1b.svg?logo=arXiv)]"
    "(https://arxiv.org/abs/2509.22186)",
    "[![arXiv](https://img.shields.io/badge/MinerU2.5%20Pro-Technical%20Report-b31b1b.svg?"
    "logo=arXiv)](https://arxiv.org/abs/2604.04771)",
]
PAGES = {
    "drifting-lines": "Storage log\n\n"
    + "\n".join(f"- The samples from the {s} site were stored at four degrees." for s in SITES)
    + "\n\nSigned by the lab manager.\n",
    "rows-one-word": "# Price list\n\n| Item | Price | Cur |\n|---|---|---|\n"
    + "\n".join(f"| Widget assembly, {c}, boxed for export | 12.50 | EUR |" for c in COLOURS)
    + "\n\nPrices without tax.\n",
    "rows-one-number": "# Price list\n\n| Item | Price | Cur |\n|---|---|---|\n"
    + "\n".join(
        f"| Widget assembly, grey, boxed for export to overseas customers | {12 + i}.50 | EUR |"
        for i in range(8)
    )
    + "\n\nPrices without tax.\n",
    "readme-badges": "# MinerU\n\n"
    + "\n".join(BADGES)
    + "\n[![Ask DeepWiki](https://deepwiki.com/badge.svg)](https://deepwiki.com/opendatalab/MinerU)"
    + "\n\nMinerU converts PDFs into machine-readable formats such as Markdown and JSON.\n",
}


def one_page_pdf(text: str) -> bytes:
    """A page whose text layer holds `text` line for line (small type on a landscape page,
    so that no line wraps)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=842, height=595)
    page.insert_text((24, 36), text, fontsize=6, fontname="helv")
    data = bytes(doc.tobytes(garbage=3, deflate=True))
    doc.close()
    return data


def folio_run(db_url: str, stand_in: StandIn, source: Path, out: Path) -> str:
    endpoint = {
        "base_url": stand_in.base_url,
        "model": "some-ocr-model",  # the generic Markdown profile
        "max_tokens": 1200,
        "engine_plugin": False,
        "abort_call": False,
        "server_repetition_detection": False,
        "transport_retry_s": 5,
    }
    env = {
        "FOLIO_DATABASE_URL": db_url,
        "FOLIO_ENGINE": "vlm",
        "FOLIO_VLM_ENDPOINTS": json.dumps({"primary": endpoint}),
        "FOLIO_CONCURRENCY": "1",
    }
    result = runner.invoke(app, ["run", str(source), "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    return str(json.loads((out / "summary.json").read_text())["job_id"])


def attempts(db_url: str, job_id: str) -> list[Attempt]:
    with Database(db_url).session() as session:
        return list(
            session.scalars(select(Attempt).where(Attempt.job_id == job_id).order_by(Attempt.id))
        )


def stream(text: str) -> object:
    detector = LoopDetector()
    for start in range(0, len(text), 4):
        if detector.feed(text[start : start + 4]) is not None:
            return detector.verdict
    return detector.finish()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_page_of_copies_that_differ_is_read_once_and_keeps_its_answer(
    name: str, db_url: str, tmp_path: Path
) -> None:
    text = PAGES[name]
    assert stream(text) is not None, "the detector alone calls these copies a loop"
    source = tmp_path / "in"
    source.mkdir()
    (source / f"{name}.pdf").write_bytes(one_page_pdf(text))

    with serving(lambda body: ScriptedAnswer(text)) as stand_in:
        job_id = folio_run(db_url, stand_in, source, tmp_path / "out")

    assert len(stand_in.requests) == 1, "read once"
    (attempt,) = attempts(db_url, job_id)
    assert attempt.status == "ok" and attempt.verdict_kind is None
    overruled = attempt.params["grounding"]["overruled"]
    assert overruled and all(g["page"] >= g["output"] for g in overruled)
    with Database(db_url).session() as session:
        page = session.scalars(select(Page).where(Page.job_id == job_id)).one()
    assert page.status == "succeeded"
    kept = (tmp_path / "out" / f"{name}.md").read_text(encoding="utf-8")
    assert all(line.strip("| ") in kept for line in text.splitlines() if "|" in line or "(" in line)


def test_copies_that_differ_past_what_the_page_holds_are_still_cut(
    db_url: str, tmp_path: Path
) -> None:
    """The page holds five sites; the model goes on to forty: the verdict stands past the
    page's count and the margin, and the page is read again."""
    text = PAGES["drifting-lines"]
    more = [a + b for a in "bcdfg" for b in ("ar", "el", "on", "ut", "is", "ow", "ey", "ax")]
    looping = "Storage log\n\n" + "\n".join(
        f"- The samples from the {s} site were stored at four degrees." for s in more
    )
    source = tmp_path / "in"
    source.mkdir()
    (source / "drifting-lines.pdf").write_bytes(one_page_pdf(text))

    with serving(lambda body: ScriptedAnswer(looping)) as stand_in:
        job_id = folio_run(db_url, stand_in, source, tmp_path / "out")

    first = attempts(db_url, job_id)[0]
    assert first.status == "degenerate"
    standing = first.params["grounding"]["verdict"]
    assert standing["page"] == 5 < standing["output"]
    assert len(stand_in.requests) > 1
