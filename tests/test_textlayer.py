"""The text layer as a user meets it: bad layers go to OCR, good ones come out as Markdown."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import Attempt
from app.jobs import JobRequest, create_job, run_job_locally
from app.jobs.results import DocumentResult, load_results
from app.pdf import samples
from app.settings import Settings
from app.textlayer import GateConfig, page_markdown, rejection
from app.textlayer.edges import running_lines
from app.textlayer.model import Box, PageLayout, TextLine
from app.textlayer.paragraphs import join_lines
from app.textlayer.unicode import normalize
from app.textlayer.words import languages_for
from tests.textlayer_pdfs import running_head_pdf, table_pdf, text_pdf

TEXT = "Proceedings of the Regional Meeting. " + samples.page_text(3).replace("\n", " ")


def run_folder(url: str, folder: Path, plan: str = "auto") -> tuple[DocumentResult, list[Attempt]]:
    settings = Settings(database_url=url, concurrency=1)
    db = Database(url)
    job = create_job(settings, db, JobRequest(folder, None, plan))
    run_job_locally(settings, db, job.job_id, job.page_ids)
    with db.session() as session:
        attempts = list(session.scalars(select(Attempt).order_by(Attempt.id)))
        session.expunge_all()
    return load_results(db, job.job_id).documents[0], attempts


def one_pdf(tmp_path: Path, data: bytes) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "doc.pdf").write_bytes(data)
    return folder


def test_a_layer_with_a_shifted_font_encoding_goes_to_ocr(sqlite_url: str, tmp_path: Path) -> None:
    folder = one_pdf(tmp_path, text_pdf(TEXT, shifted_encoding=True))
    document, attempts = run_folder(sqlite_url, folder)

    page = document.pages[0]
    assert (page.engine, page.status) == ("tesseract", "fallback")
    assert [(a.engine, a.status) for a in attempts] == [
        ("textlayer", "rejected"),
        ("tesseract", "ok"),
    ]
    assert attempts[0].error == "textlayer_rejected: garbled"
    assert "Proceedings of the Regional Meeting" in (page.text or "")
    assert "Oqnbddchmfr" not in (page.text or "")


def test_a_clean_layer_is_used_as_it_is(sqlite_url: str, tmp_path: Path) -> None:
    document, attempts = run_folder(sqlite_url, one_pdf(tmp_path, text_pdf(TEXT)))

    assert [(a.engine, a.status) for a in attempts] == [("textlayer", "ok")]
    assert (document.pages[0].text or "").startswith("Proceedings of the Regional Meeting.")


def test_the_gate_can_be_turned_off(sqlite_url: str, tmp_path: Path) -> None:
    folder = one_pdf(tmp_path, text_pdf(TEXT, shifted_encoding=True))
    settings = Settings(database_url=sqlite_url, textlayer_gate=False)
    db = Database(sqlite_url)
    job = create_job(settings, db, JobRequest(folder, None, "auto"))
    run_job_locally(settings, db, job.job_id, job.page_ids)

    page = load_results(db, job.job_id).documents[0].pages[0]
    assert page.engine == "textlayer" and "Oqnbddchmfr" in (page.text or "")


def test_a_ruled_table_comes_out_as_a_markdown_table(sqlite_url: str, tmp_path: Path) -> None:
    rows = [["Item", "Quantity", "Price"], ["Apples", "12", "3.40"], ["Pears", "7", "2.10"]]
    intro = "The order below was placed in March and delivered to the front desk in April."
    document, _ = run_folder(sqlite_url, one_pdf(tmp_path, table_pdf(rows, intro)), "textlayer")

    text = document.pages[0].text or ""
    assert "| Item | Quantity | Price |\n| --- | --- | --- |\n" in text
    assert "| Apples | 12 | 3.40 |\n| Pears | 7 | 2.10 |" in text
    assert text.startswith(intro)
    assert "Item\tQuantity\tPrice\nApples\t12\t3.40" in (document.pages[0].plain_text or "")


def test_a_running_header_is_in_neither_page(sqlite_url: str, tmp_path: Path) -> None:
    bodies = [samples.page_text(n).replace("\n", " ") for n in (1, 2)]
    data = running_head_pdf("Journal of Folio Studies, volume 3", bodies)
    document, _ = run_folder(sqlite_url, one_pdf(tmp_path, data), "textlayer")

    texts = [page.text or "" for page in document.pages]
    assert len(texts) == 2
    for text, body in zip(texts, bodies, strict=True):
        assert "Journal of Folio Studies" not in text
        assert "Page " not in text
        assert text.startswith(body[:60])


def _layout(*texts: str, invisible: bool = False) -> PageLayout:
    lines = [
        TextLine(t, Box(72, 100 + 14 * i, 540, 112 + 14 * i), 11.0, False, i, invisible)
        for i, t in enumerate(texts)
    ]
    return PageLayout(612, 792, lines)


WORDS = "the river rises in the northern hills and runs south through farmland for miles " * 3
GATE = GateConfig(languages_for("eng"))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (WORDS, None),
        ("Die Versammlung beschloss nach langer Beratung einen neuen Haushalt " * 3, None),
        # Hangul and Arabic read with English word lists: not judged, so not refused
        pytest.param(
            "코로나바이러스감염증 관련 보험 현황과 감염병의 예방 및 관리 " * 4, None, id="hangul"
        ),
        pytest.param(
            "تحسين الإنتاجية وحل المشكلات من خلال البرمجة بلغة الحاسوب " * 4, None, id="arabic"
        ),
        ("Oqnbddchmfr ne sgd Qdfhnm`k Ldddshmf gdkc hm sgd mnqsgdqm ghkkr " * 3, "garbled"),
        ("\ue001\ue002\ue003 " * 40, "garbled"),
        ((WORDS * 2).replace(" ", ""), "word_soup"),
        (WORDS.replace("the", "thÃ©"), "mojibake"),
        # a symbol font's check boxes mapped to C1 controls: the junk rule's share, no mojibake
        pytest.param(("\x84 \x84 " + WORDS) * 2, None, id="check-boxes"),
        pytest.param(("\x84" * 30 + " " + WORDS) * 2, "garbled", id="mostly-controls"),
    ],
)
def test_the_gate_names_why_a_layer_is_refused(text: str, reason: str | None) -> None:
    assert rejection(_layout(text), GATE) == reason


def test_an_invisible_ocr_layer_must_be_mostly_words() -> None:
    half = "the river rises in the northern hills and rvns sxuth thrqugh fzrmland " * 3
    assert rejection(_layout(half), GATE) is None
    assert rejection(_layout(half, invisible=True), GATE) == "poor_ocr_layer"


def test_text_drawn_as_an_image_sends_the_page_to_ocr() -> None:
    layout = _layout("A short caption under a picture")
    pictured = PageLayout(612, 792, layout.lines, images=[Box(72, 300, 540, 700)])
    assert rejection(layout, GATE) is None
    assert rejection(pictured, GATE) == "text_as_image"


def test_accents_ligatures_and_hyphenation_are_repaired() -> None:
    assert normalize("We thank J´an Min´aˇc for the ﬁne eﬀort") == (
        "We thank Ján Mináč for the fine effort"
    )
    assert join_lines(["Lake Forest Col-", "lege and a four or five-", "fold increase"]) == (
        "Lake Forest College and a four or five-fold increase"
    )


def test_a_single_page_loses_its_running_lines_and_keeps_its_title() -> None:
    body = [
        TextLine(WORDS[:90], Box(72, 160 + 14 * i, 540, 171 + 14 * i), 11.0, False, 2)
        for i in range(30)
    ]
    lines = [
        TextLine("12", Box(72, 30, 84, 39), 9.0, False, 0),
        TextLine("JOURNAL OF RIVER STUDIES", Box(250, 30, 400, 39), 9.0, False, 0),
        TextLine("A Survey of Northern Rivers", Box(72, 90, 400, 110), 20.0, True, 1),
        *body,
        TextLine(
            "Downloaded from example.org on 1 May 2020", Box(72, 760, 300, 768), 8.0, False, 3
        ),
        TextLine(
            "Stamped sideways in the margin", Box(20, 300, 30, 600), 8.0, False, 4, vertical=True
        ),
    ]
    layout = PageLayout(612, 792, lines)

    markdown = page_markdown(layout)
    assert markdown.startswith("# A Survey of Northern Rivers\n\nthe river rises")
    for running in ("JOURNAL", "12", "Downloaded", "Stamped"):
        assert running not in markdown


def test_two_columns_starting_at_the_top_edge_keep_their_first_lines() -> None:
    """A scan's two columns whose text begins in the top band (the AMT handbook's page read by
    Tesseract, line sizes unknown): each row holds two short pieces set left and right, as a
    footer does, but they fill the width; the footer's pieces below leave it mostly empty."""
    column = "the inner race of the bearing is clamped to the structure"
    lines = [
        TextLine(column, Box(x, 47 + 13 * i, x + 245, 58 + 13 * i), 11.0, False, side)
        for i in range(40)
        for side, x in enumerate((73, 330))
    ]
    lines += [
        TextLine("7-33", Box(73, 757, 97, 766), 9.0, False, 2),
        TextLine("AMT Handbook, chapter seven", Box(330, 757, 540, 766), 9.0, False, 3),
    ]
    dropped = running_lines(PageLayout(612, 792, lines), sizes_known=False)
    assert dropped == {80, 81}


def test_the_text_layer_room_is_pure() -> None:
    """app/textlayer sees plain values: nothing of the rest of app, no PyMuPDF, no database."""
    room = Path(__file__).resolve().parents[1] / "app" / "textlayer"
    for module in room.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        outside = [n for n in names if n.startswith("app.") and not n.startswith("app.textlayer")]
        assert not outside, f"{module.name} imports {outside}"
        assert not {"pymupdf", "sqlalchemy"} & {n.split(".")[0] for n in names}, module.name
