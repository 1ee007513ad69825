"""Grounding on the VLM engine's side: each attempt's detector asks the page's own text before
a verdict cuts the stream (`app.degeneration.grounding`), and the plugin's detector in the
engine asks the same page, so one deployment gives one verdict.

The page's text is its text layer where the gate finds it usable, else what an earlier
attempt's read at the verdict found on the scan (`verdict_read`). A scan not read yet is read
at its first verdict (issue 65): where Folio's client-side detector is the stop, the verdict is
held while the stream goes on (`hold_chars`); where the engine plugin ends the request at its
own verdict (it cannot wait for a read it cannot make), the verdict cuts, the read goes on, and
the page's later attempts ask its text, in the client and in the plugin alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.degeneration import DetectorConfig
from app.degeneration.grounded import READ_SLACK, GroundedDetector
from app.domain import GROUNDING_OVERRULED, VERDICT_READ_CPU_MS, PageInput
from app.engines.verdict_read import ScanReads, VerdictRead
from app.engines.vlm_stream import LoopDetecting, StreamOutcome, check_end
from app.vllm_plugin.behaviours import MARGIN_ARG, PAGE_TEXT_ARG, SLACK_ARG


def page_text(page: PageInput) -> str:
    """The text a page's verdicts are asked of ("" where there is none yet)."""
    if page.text_layer_usable and page.text_layer.strip():
        return page.text_layer
    return page.page_read or ""


def page_slack(page: PageInput) -> int:
    """Copies the page's text may miss: `READ_SLACK` where it is a scan's OCR read."""
    layer = page.text_layer_usable and page.text_layer.strip()
    return 0 if layer or not page.page_read else READ_SLACK


def grounds(page: PageInput, margin: int | None) -> bool:
    """Whether this page's verdicts are asked of a text already at hand."""
    return margin is not None and bool(page_text(page).strip())


def grounded_factory(
    factory: Callable[[], LoopDetecting],
    config: DetectorConfig | None,
    page: PageInput,
    margin: int | None,
    read: VerdictRead | None = None,
    hold_chars: int = 0,
) -> Callable[[], LoopDetecting]:
    """The attempt's detectors: the engine's own (`factory`, running `config`), asking the
    page where it can: its text, or `read` at the first verdict, held `hold_chars`."""
    if margin is None:
        return factory
    if text := page_text(page):
        slack = page_slack(page)
        return lambda: GroundedDetector(config, text, margin, slack=slack)
    if read is None:
        return factory
    moved_on = read.moved_on_chars if hold_chars else 0
    return lambda: GroundedDetector(config, read, margin, hold_chars, moved_on_chars=moved_on)


def grounding_xargs(page: PageInput, margin: int | None) -> dict[str, Any]:
    """What the plugin's loop stop needs to ask the same page (vLLM's args are flat)."""
    if not grounds(page, margin):
        return {}
    slack = {SLACK_ARG: page_slack(page)} if page_slack(page) else {}
    return {PAGE_TEXT_ARG: page_text(page), MARGIN_ARG: margin, **slack}


def grounding_params(detector: LoopDetecting) -> dict[str, Any]:
    """What an attempt records of the page's answers: every verdict it overruled (the stream
    went on), what it held of the verdict that stood, and how long a read kept a verdict
    waiting (characters of stream)."""
    if not isinstance(detector, GroundedDetector):
        return {}
    overruled = [
        {"unit": g.unit[:120], "page": g.page_copies, "output": g.output_copies, "at": g.at}
        for g in detector.overruled
    ]
    found: dict[str, Any] = {"overruled": overruled} if overruled else {}
    if (standing := detector.standing) is not None:
        found["verdict"] = {"page": standing.page_copies, "output": standing.output_copies}
        found["verdict"]["measure"] = standing.measure
    if detector.read_asked_at is not None:
        found["read_wait"] = {
            "asked_at": detector.read_asked_at,
            "waited_chars": detector.read_waited,
            "missed": detector.read_missed,
        }
    counted = {GROUNDING_OVERRULED: len(overruled)} if overruled else {}
    return {"grounding": found, **counted} if found else {}


def verdict_read(
    reads: ScanReads | None, page: PageInput, margin: int | None
) -> VerdictRead | None:
    """The page's read at its first verdict, where it has no text to ask yet."""
    if reads is None or margin is None or grounds(page, margin):
        return None
    return reads.for_page(page)


def hold_chars(reads: ScanReads | None, plugin: bool) -> int:
    """Characters a verdict waits for the read while the stream goes on: none where the
    engine plugin ends the request at its own verdict (there the verdict cuts)."""
    return 0 if plugin or reads is None else reads.hold_chars


async def settle_hold(outcome: StreamOutcome, detector: LoopDetecting) -> None:
    """The answer ended while a verdict waited for the read: wait for it (a worker thread),
    then judge the verdict by it."""
    if outcome.verdict is not None or not isinstance(detector, GroundedDetector):
        return
    if detector.holding and isinstance(detector.page_read, VerdictRead):
        await asyncio.to_thread(detector.page_read.wait)
        check_end(outcome, detector)


async def with_read(params: dict[str, Any], read: VerdictRead | None) -> dict[str, Any]:
    """`params` (an attempt's `grounding_params`) with the page's read, once it is done: waited
    for on a worker thread (never on the event loop), after the stream released its slot."""
    if read is None or not read.started:
        return params
    await asyncio.to_thread(read.wait)
    record = read.record()
    if record is None:
        return params
    found = dict(params.get("grounding") or {}) | {"read": record}
    return params | {"grounding": found, VERDICT_READ_CPU_MS: round(1000 * record["cpu_s"])}
