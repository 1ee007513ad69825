"""olmOCR's own pipeline (olmocr 0.4.27, `bench/olmocr_pipeline_env.sh`) against a GPU stand-in
where every page loops on its greedy rungs: its ladder as read in its source, run. Skipped where
the venv is absent, failed under CI (`make olmocr-env` builds it). Counts, never timing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.scale import olmocr_pipeline
from bench.scale.deployment import Loops, Setup
from bench.scale.inputs import write_scale_pdfs
from tests.conftest import unavailable

pytestmark = pytest.mark.slow


def test_olmocr_pays_two_full_caps_for_a_looping_page_then_reads_it_at_its_third_rung(
    tmp_path: Path,
) -> None:
    if olmocr_pipeline.venv_python() is None or shutil.which("pdftoppm") is None:
        unavailable("no olmOCR pipeline venv or pdftoppm: make olmocr-env")
    pages = write_scale_pdfs(tmp_path / "pages", 2)
    setup = Setup(1, slowdown=0.02, max_num_seqs=8)

    pdfs = sorted((tmp_path / "pages").glob("*.pdf"))
    raw = olmocr_pipeline.run_olmocr(pdfs, setup, Loops(1.0), tmp_path)
    figures = olmocr_pipeline.olmocr_figures(raw, setup.slowdown, setup.max_num_seqs)

    # temperature 0.1 twice (TEMPERATURE_BY_ATTEMPT[0:2]): both loop to its 8,000-token cap,
    # are invalid (finish_reason "length") and retried one after another; 0.2 reads the page
    assert figures["pages"] == pages == 2 and figures["fallback_pages"] == 0
    assert figures["finish_reasons"] == {"length": 4, "stop": 2}
    assert figures["pages_finished_on"] == {"attempt_2": 2}
    assert figures["loops_started"] == 4 and figures["gpu_tokens"] > 4 * 8000

    # a loop that comes back on every read (here at the same place): every rung of its eight
    # runs to the cap, and the page falls to its pdftotext fallback
    raw = olmocr_pipeline.run_olmocr(pdfs, setup, Loops(1.0, 1.0), tmp_path)
    sticky = olmocr_pipeline.olmocr_figures(raw, setup.slowdown, setup.max_num_seqs)
    assert sticky["fallback_pages"] == 2 and sticky["finish_reasons"] == {"length": 16}
    assert sticky["loops_by_kind"] == {"sticky": 16} and sticky["gpu_tokens"] >= 16 * 8000
