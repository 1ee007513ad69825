"""Grounding on the VLM engine's side: each attempt's detector asks the page's own text before
a verdict cuts the stream (`app.degeneration.grounding`), and the plugin's detector in the
engine asks the same page, so one deployment gives one verdict.

A page is asked only where its text layer is usable (the gate in `app.pdf.textlayer`): a
scanned page, or one whose fonts garble their text, keeps today's verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.degeneration import DetectorConfig
from app.degeneration.grounding import GroundedDetector
from app.domain import GROUNDING_OVERRULED, PageInput
from app.engines.vlm_stream import LoopDetecting
from app.vllm_plugin.behaviours import MARGIN_ARG, PAGE_TEXT_ARG


def grounds(page: PageInput, margin: int | None) -> bool:
    """Whether this page's verdicts are asked of its text."""
    return margin is not None and page.text_layer_usable and bool(page.text_layer.strip())


def grounded_factory(
    factory: Callable[[], LoopDetecting],
    config: DetectorConfig | None,
    page: PageInput,
    margin: int | None,
) -> Callable[[], LoopDetecting]:
    """The attempt's detectors: the engine's own (`factory`, running `config`), asking the
    page where it can."""
    if not grounds(page, margin):
        return factory
    assert margin is not None
    return lambda: GroundedDetector(config, page.text_layer, margin)


def grounding_xargs(page: PageInput, margin: int | None) -> dict[str, Any]:
    """What the plugin's loop stop needs to ask the same page (vLLM's args are flat)."""
    if not grounds(page, margin):
        return {}
    return {PAGE_TEXT_ARG: page.text_layer, MARGIN_ARG: margin}


def grounding_params(detector: LoopDetecting) -> dict[str, Any]:
    """What an attempt records of the page's answers: every verdict it overruled (the stream
    went on) and what it held of the verdict that stood."""
    if not isinstance(detector, GroundedDetector) or not detector.asked:
        return {}
    overruled = [
        {"unit": g.unit[:120], "page": g.page_copies, "output": g.output_copies, "at": g.at}
        for g in detector.overruled
    ]
    found: dict[str, Any] = {"overruled": overruled} if overruled else {}
    if (standing := detector.standing) is not None:
        found["verdict"] = {"page": standing.page_copies, "output": standing.output_copies}
    counted = {GROUNDING_OVERRULED: len(overruled)} if overruled else {}
    return {"grounding": found, **counted} if found else {}
