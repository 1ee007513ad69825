"""The flywheel bench's pages, settings and model folder, and what its smoke runs share (the
random weights, the prerequisites); the smoke runs themselves, on real vLLM CPU servers, are in
`test_flywheel_smoke.py`."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from bench.flywheel import data, pages
from bench.flywheel.model import COMMITTED
from tests.vllm_cpu.fixtures import vllm_required
from tests.vllm_cpu.server import default_venv


def test_a_page_pdf_renders_back_to_the_pixels_the_model_was_trained_on(tmp_path: Path) -> None:
    from app.domain import PageInput
    from app.engines.vlm_image import model_image
    from app.pdf.render import rasterize, render_page
    from app.profiles.model import ImageRule

    atlas = data.glyph_atlas()
    lines = ["The quick brown fox jumps over the lazy", "dog; 0123456789 {}[]()<>!?"]
    spec = pages.PageSpec("page", lines)
    pages.write_pages([spec], atlas, tmp_path / "pdfs", tmp_path / "truth")
    pdf = tmp_path / "pdfs" / "page.pdf"
    rendered = render_page(pdf, 1, 200, 2400)  # Folio's first render, at its default DPI
    page = PageInput(rendered.image, rendered.text_layer, False, points=rendered.points,
                     render_at=lambda dpi: rasterize(pdf, 1, dpi))  # fmt: skip
    seen = model_image(page, ImageRule.model_validate(pages.profile()["image"]))
    assert seen.size == (560, 56)
    assert np.array_equal(np.asarray(seen.convert("L")), data.draw(lines, atlas))
    assert (tmp_path / "truth" / "page.md").read_text() == "\n".join(lines)


def test_the_settings_written_as_toml_load_as_folio_settings() -> None:
    import tomllib

    from app.settings import Settings

    config = pages.settings("sqlite:///x.db", {"base": "http://127.0.0.1:1/v1"}, {"base": "m"})
    settings = Settings(**tomllib.loads(pages.toml_text(config)))
    assert [step.name for step in settings.plans[pages.PLAN]] == ["greedy"]
    profile = settings.profile_of("base")
    assert profile.request.prompt == data.PROMPT and profile.request.max_tokens == pages.MAX_TOKENS


def test_the_committed_weights_assemble_into_a_servable_folder(tmp_path: Path) -> None:
    if not COMMITTED.is_file():
        pytest.skip(f"the taught weights are not committed yet ({COMMITTED})")
    from bench.flywheel.model import assemble

    card = assemble(COMMITTED, tmp_path / "model")  # strict: every key, nothing more
    assert card["parameters"] > 0
    for name in ("config.json", "model.safetensors", "preprocessor_config.json"):
        assert (tmp_path / "model" / name).is_file()


def random_weights(tmp_path: Path) -> Path:
    """Seeded random weights of the flywheel's recipe: they loop on some pages for sure (a
    model that reads might loop on none of six), which is all a smoke run needs."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration

    data.build_base(tmp_path / "recipe")
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(AutoConfig.from_pretrained(tmp_path / "recipe"))
    state = {k: v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(tmp_path / "random.safetensors"))
    return tmp_path / "random.safetensors"


def prerequisites_or_skip() -> None:
    """The vLLM venv and the train extra; in CI their absence is a failure."""
    reasons = []
    if not (default_venv() / "bin" / "python").exists():
        reasons.append(f"no vLLM venv at {default_venv()}")
    try:
        import trl  # noqa: F401
    except ImportError as exc:
        reasons.append(f"folio[train] not installed: {exc}")
    if reasons:
        if vllm_required() or os.environ.get("CI"):
            pytest.fail("; ".join(reasons))
        pytest.skip("; ".join(reasons))


def test_the_flywheel_summary_spreads_each_served_arm_over_seeds_against_the_base() -> None:
    """What the smoke run no longer serves (a tuned arm per seed) is summarised as a full run's."""
    from bench.flywheel import report

    def arm(rate: float, cer: float, failed: int) -> dict[str, float]:
        return {"degeneration_rate_first_attempt": rate, "cer": cer, "pages_failed": failed,
                "pages": 10}  # fmt: skip

    arms = {"base": arm(0.2, 0.10, 2), "dpo-s0": arm(0.1, 0.10, 1), "dpo-s1": arm(0.0, 0.12, 0),
            "sft-s0": arm(0.2, 0.08, 2)}  # fmt: skip
    summary = report.summarize(arms, [0, 1])
    assert summary["dpo"]["rate"]["mean"] == 0.05 and summary["dpo"]["rate"]["per_seed"] == [0.1, 0]
    assert summary["dpo"]["rate_change"] == -0.75 and summary["dpo"]["cer_change"] == 0.1
    assert summary["dpo"]["meets_target"] is True
    assert "sft" not in summary, "an arm missing a seed is left out, not averaged over fewer"
