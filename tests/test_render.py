"""The PDF seam on generated files: each bad kind fails with its own category."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import DocumentError
from app.pdf import samples
from app.pdf.render import DocumentLimits, close_documents, inspect_document, render_page
from app.pdf.textlayer import text_layer_is_usable
from tests.textlayer_pdfs import running_head_pdf

LIMITS = DocumentLimits(max_bytes=50 * 2**20, max_pages=100)


@pytest.mark.parametrize(
    ("data", "category"),
    [
        (samples.encrypted_pdf("secret text"), "encrypted"),
        (samples.corrupt_pdf(), "corrupt"),
        (samples.zero_page_pdf(), "no_pages"),
        (b"just text", "not_pdf"),
        (b"", "empty_file"),
    ],
    ids=lambda value: value if isinstance(value, str) else "bytes",  # stable: the category
)
def test_bad_documents_fail_with_a_category(tmp_path: Path, data: bytes, category: str) -> None:
    path = tmp_path / "x.pdf"
    path.write_bytes(data)
    with pytest.raises(DocumentError) as caught:
        inspect_document(path, LIMITS)
    assert caught.value.category == category
    assert caught.value.reason


def test_limits_on_size_and_pages(tmp_path: Path) -> None:
    path = tmp_path / "long.pdf"
    path.write_bytes(samples.born_digital_pdf(["a"] * 5))
    with pytest.raises(DocumentError, match="5 pages"):
        inspect_document(path, DocumentLimits(max_bytes=2**30, max_pages=4))
    with pytest.raises(DocumentError) as caught:
        inspect_document(path, DocumentLimits(max_bytes=100, max_pages=10))
    assert caught.value.category == "too_large"


def test_render_caps_the_longest_side_and_reads_the_text_layer(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(samples.born_digital_pdf([samples.page_text(1), samples.page_text(2)]))
    assert inspect_document(path, LIMITS) == 2
    page = render_page(path, 2, dpi=200, max_side=1000)
    assert max(page.image.size) == 1000
    assert "Section 2" in page.text_layer
    full = render_page(path, 1, dpi=100, max_side=5000)
    assert full.image.size == (850, 1100)


def test_scanned_pages_have_no_usable_text_layer(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(samples.scanned_pdf([samples.page_text(3)]))
    assert not text_layer_is_usable(render_page(path, 1, 72, 2000).text_layer, 25)


def test_mojibake_text_layer_is_not_usable() -> None:
    assert text_layer_is_usable("A real sentence with plenty of letters in it.", 25)
    assert not text_layer_is_usable("\ufffd" * 40 + "abc" * 10, 25)
    assert not text_layer_is_usable("12", 25)


def test_neighbour_edges_are_the_same_whether_a_page_runs_alone_or_after_others(
    tmp_path: Path,
) -> None:
    # Edge lines are kept per open document: a page on a fresh worker reads its own.
    bodies = [f"Body text of page {n}, long enough to be the page's body." for n in range(1, 7)]
    path = tmp_path / "running.pdf"
    path.write_bytes(running_head_pdf("The Annual Report", bodies))

    def edges(number: int) -> list[list[str]]:
        layout = render_page(path, number, 36, 400).layout
        assert layout is not None
        return layout.neighbour_edges

    for number in range(1, 7):
        close_documents()
        alone = edges(number)
        close_documents()
        for other in (6, 5, 4, 3, 2, 1):
            edges(other)  # every page's edges read once, in another order
        assert edges(number) == alone
        assert len(alone) == len([n for n in (-2, -1, 1, 2) if 1 <= number + n <= 6])
        assert all("The Annual Report" in page for page in alone)
    close_documents()
