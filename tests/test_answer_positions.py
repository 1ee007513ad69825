"""A model's own boxes as positions: each answer format's coordinate system placed on the
image sent (pixels) and on the PDF page (points), within a pixel, for the image the profile
actually sends (its render size, or an endpoint's max_image_side)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.domain import PageInput
from app.engines.vlm_image import model_image, model_image_size
from app.engines.vlm_positions import vlm_positions
from app.positions import PageGeometry
from app.profiles import BUILTIN
from app.profiles.parsers import parse_answer
from tests.profile_pages import A4_LANDSCAPE, LETTER, SHAPES, pdf_page


def placed_page(points: tuple[float, float]) -> PageInput:
    """A PDF page as the pipeline renders it (200 DPI), with its geometry."""
    page = pdf_page(points)
    return replace(page, geometry=PageGeometry(*points, *page.image.size))


# (profile, page, max_image_side, answer, the sent image's size, the first block's category,
#  its box in pixels of the image sent, in PDF points), worked out by hand from each
# project's own conversion:
CASES = [
    # DeepSeek `x / 999 * image_width`; Letter at 144 DPI is 1224 x 1584 px
    (
        "deepseek-ocr-grounding",
        LETTER,
        None,
        "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 120]]<|/det|>\n# Report",
        (1224, 1584),
        "title",
        (122.5, 79.3, 1102.7, 190.3),
        (61.26, 39.64, 551.35, 95.14),
    ),
    # the same grid on an endpoint that shrinks the image to 256 px: 198 x 256
    (
        "deepseek-ocr-grounding",
        LETTER,
        256,
        "<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\nAll of it",
        (198, 256),
        "text",
        (0.0, 0.0, 198.0, 256.0),
        (0.0, 0.0, 612.0, 792.0),
    ),
    # dots.ocr: pixels of smart_resize(2200, 1700) = 2212 x 1708, scaled back to 1700 x 2200
    (
        "dots-ocr-layout",
        LETTER,
        None,
        '[{"bbox": [854, 1106, 1708, 2212], "category": "Text", "text": "Lower right"}]',
        (1700, 2200),
        "Text",
        (850.0, 1100.0, 1700.0, 2200.0),
        (306.0, 396.0, 612.0, 792.0),
    ),
    # DocTags: a 0-500 grid; A4 landscape at 144 DPI is 1684 x 1190 px
    (
        "granite-docling",
        A4_LANDSCAPE,
        None,
        "<doctag><text><loc_250><loc_0><loc_500><loc_250>Right half, top</text></doctag>",
        (1684, 1190),
        "text",
        (842.0, 0.0, 1684.0, 595.0),
        (421.0, 0.0, 842.0, 297.5),
    ),
    # Chandra: a 0-1024 grid; Letter at 192 DPI is 1632 x 2112 px, within its pixel budget
    (
        "chandra",
        LETTER,
        None,
        '<div data-bbox="[512, 256, 1024, 768]" data-label="Text"><p>Middle right</p></div>',
        (1632, 2112),
        "Text",
        (816.0, 528.0, 1632.0, 1584.0),
        (306.0, 198.0, 612.0, 594.0),
    ),
    # Qwen's HTML: pixels of the image, already on the 28 grid (1120 x 1428 for Letter),
    # whose aspect is not the page's: each axis has its own scale
    (
        "qwenvl-html",
        LETTER,
        None,
        '<html><body><p data-bbox="560 714 1120 1428">Lower right</p></body></html>',
        (1120, 1428),
        "p",
        (560.0, 714.0, 1120.0, 1428.0),
        (306.0, 396.0, 612.0, 792.0),
    ),
    # the same on an endpoint that shrinks the image to 256 px (198 x 256, off the grid):
    # the server's smart_resize makes it 196 x 252, the boxes' pixels
    (
        "qwenvl-html",
        LETTER,
        256,
        '<html><body><p data-bbox="98 126 196 252">Lower right</p></body></html>',
        (198, 256),
        "p",
        (99.0, 128.0, 198.0, 256.0),
        (306.0, 396.0, 612.0, 792.0),
    ),
]


@pytest.mark.parametrize(
    ("profile_id", "points", "max_side", "answer", "sent", "category", "box_px", "box_pt"), CASES
)
def test_each_formats_boxes_land_on_the_page(
    profile_id: str,
    points: tuple[float, float],
    max_side: int | None,
    answer: str,
    sent: tuple[int, int],
    category: str,
    box_px: tuple[float, ...],
    box_pt: tuple[float, ...],
) -> None:
    profile = BUILTIN[profile_id]
    page = placed_page(points)
    positions = vlm_positions(page, profile, parse_answer(profile.response, answer), max_side)
    assert positions is not None
    assert positions["source"] == "vlm" and positions["profile"] == profile.tag
    assert (positions["page"]["width_px"], positions["page"]["height_px"]) == sent
    assert (positions["page"]["width_pt"], positions["page"]["height_pt"]) == points
    assert positions["lines"] == [] and positions["words"] == []
    block = positions["blocks"][0]
    assert block["category"] == category and block["text"]
    assert block["box_px"] == pytest.approx(box_px, abs=1.0)
    pt_per_px = points[0] / sent[0]  # a pixel's width in points: "within a pixel"
    assert block["box_pt"] == pytest.approx(box_pt, abs=pt_per_px)


def test_a_box_past_the_edge_is_clamped_to_the_page() -> None:
    profile = BUILTIN["deepseek-ocr-grounding"]
    answer = "<|ref|>text<|/ref|><|det|>[[-5, 0, 1000, 1010]]<|/det|>\nEdge to edge"
    positions = vlm_positions(
        placed_page(LETTER), profile, parse_answer(profile.response, answer), None
    )
    assert positions is not None
    assert positions["blocks"][0]["box_px"] == [0.0, 0.0, 1224.0, 1584.0]
    assert positions["blocks"][0]["box_pt"] == [0.0, 0.0, 612.0, 792.0]


def test_every_block_of_an_answer_keeps_its_text_and_category() -> None:
    profile = BUILTIN["deepseek-ocr-grounding"]
    answer = (
        "<|ref|>title<|/ref|><|det|>[[80, 40, 920, 90]]<|/det|>\n# Quarterly Report\n\n"
        "<|ref|>text<|/ref|><|det|>[[80, 100, 920, 300], [80, 310, 920, 330]]<|/det|>\n"
        "Revenue rose by 4 \\coloneqq q.\n\n"
        "<|ref|>image<|/ref|><|det|>[[80, 320, 500, 600]]<|/det|>\n"
        "<|ref|>text<|/ref|><|det|>not a box<|/det|>\nUnplaced"
    )
    parsed = parse_answer(profile.response, answer)
    assert "Unplaced" in parsed.markdown  # a malformed box loses its place, not its text
    positions = vlm_positions(placed_page(LETTER), profile, parsed, None)
    assert positions is not None
    found = [(b["category"], b["text"]) for b in positions["blocks"]]
    assert found == [
        ("title", "# Quarterly Report"),
        ("text", "Revenue rose by 4 := q."),  # one block per box of a pair
        ("text", "Revenue rose by 4 := q."),
        ("image", ""),
    ]


def test_engines_and_pages_without_boxes_give_none() -> None:
    page = placed_page(LETTER)
    olmocr = BUILTIN["olmocr2"]
    head = "---\nprimary_language: en\nis_rotation_valid: True\nrotation_correction: 0\n"
    answer = head + "is_table: False\nis_diagram: False\n---\nText"
    assert vlm_positions(page, olmocr, parse_answer(olmocr.response, answer), None) is None
    dots = BUILTIN["dots-ocr-layout"]
    cells = parse_answer(dots.response, '[{"bbox": [1, 2, 3, 4], "category": "Text", "text": "a"}]')
    assert vlm_positions(page, dots, cells, None) is not None
    assert vlm_positions(replace(page, geometry=None), dots, cells, None) is None
    assert vlm_positions(replace(page, rotation=90), dots, cells, None) is None
    assert vlm_positions(page, dots, None, None) is None  # an answer that was not accepted
    empty = parse_answer(dots.response, "[]")
    assert vlm_positions(page, dots, empty, None) is None


@pytest.mark.parametrize("profile_id", sorted(BUILTIN))
def test_the_size_of_the_image_sent_is_known_without_rendering(profile_id: str) -> None:
    rule = BUILTIN[profile_id].image
    for page in SHAPES.values():
        for max_side in (None, 256):
            for rotation in (0, 90):
                turned = replace(page, rotation=rotation)
                expected = model_image(turned, rule, max_side).size
                assert model_image_size(turned, rule, max_side) == expected
