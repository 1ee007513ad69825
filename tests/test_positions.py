"""Word and line boxes in the page JSON, from the text layer and from Tesseract, over HTTP."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.pdf import samples
from tests.api_server import Api, running_api, wait_for_job
from tests.test_api import settings_for, submit

TEXT = samples.page_text(2)


@pytest.fixture
def api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    with running_api(
        settings_for(db_url, tmp_path, engine="auto", dpi=144, max_page_megapixels=10)
    ) as server:
        yield server


def page_details(api: Api, pdf: bytes) -> tuple[object, str, list[dict]]:
    client = api.client(api.key("alice"))
    job_id = submit(client, [("a.pdf", pdf)]).json()["id"]  # type: ignore[attr-defined]
    assert wait_for_job(client, job_id)["status"] == "done"
    pages = client.get(f"/v1/jobs/{job_id}/pages").json()["items"]
    return client, job_id, [client.get(f"/v1/jobs/{job_id}/pages/{p['id']}").json() for p in pages]


def assert_boxes_agree(positions: dict) -> None:
    """Every box lies on the page, and its pixels are its points at the rendering's scale."""
    page = positions["page"]
    scale = page["width_px"] / page["width_pt"]
    for item in positions["words"] + positions["lines"]:
        x0, y0, x1, y1 = item["box_pt"]
        assert 0 <= x0 < x1 <= page["width_pt"] + 1 and 0 <= y0 < y1 <= page["height_pt"] + 1
        for pt, px in zip(item["box_pt"], item["box_px"], strict=True):
            assert px == pytest.approx(pt * scale, abs=1.0)


def test_text_layer_words_and_lines(api: Api) -> None:
    _, _, [detail, blank] = page_details(api, samples.born_digital_pdf([TEXT, ""]))
    positions = detail["positions"]
    assert positions["source"] == "textlayer"
    assert positions["page"]["width_pt"] == 612.0  # US Letter, as the sample is made
    assert positions["page"]["width_px"] == 1224  # 144 dpi
    words = [w["text"] for w in positions["words"]]
    assert words == TEXT.split()
    assert " ".join(line["text"] for line in positions["lines"]) == " ".join(words)
    assert {w["line"] for w in positions["words"]} == set(range(len(positions["lines"])))
    assert_boxes_agree(positions)
    assert blank["positions"] is None  # a page without text has nothing to place


def test_tesseract_words_and_lines_and_the_results_json(api: Api) -> None:
    client, job_id, [detail] = page_details(api, samples.scanned_pdf([TEXT]))
    positions = detail["positions"]
    assert detail["engine"] == "tesseract" and positions["source"] == "tesseract"
    recognised = [w["text"] for w in positions["words"]]
    expected = set(TEXT.split())
    assert sum(w in expected for w in recognised) >= 0.9 * len(recognised) > 0
    assert_boxes_agree(positions)
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/v1/jobs/{job_id}/results").content))  # type: ignore[attr-defined]
    [page] = json.loads(archive.read("a.json"))["pages"]
    assert page["positions"] == positions
