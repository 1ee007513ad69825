"""`python -m bench false-alarms --resume`: a retry that resumes past the loop against one that
reads the page again, on the vLLM CPU server (issue 51 part 5).

Folio's real VLM engine streams from the test server, whose scripted decoding writes a given
text token by token (`tests/vllm_cpu/scripted`). Each page is a real healthy page of the
healthy corpus (1,200-2,400 characters, so a page and its loop fit the tiny server's 2,048
tokens) with a loop put in at a quarter, half and three quarters of it: one of its lines
repeated. The first read writes the page up to that line and then the line over and over; Folio's
detector cuts it. The retry then either reads the page again (the script: the whole page) or
continues the kept text (`continue_final_message`; the script: the page after the kept
text, as a model continuing its own text would write it). Per arm: the retry's generated and
prompt tokens, its seconds on this machine, and whether the joined answer is the page.

The scripted server writes what it is told, so the answer's quality is the script's: the bench
measures what resuming costs and saves, not whether a model continues well (no ground truth
for a real model's continuation here). Timings on a shared 2-core CPU are noisy: the arms
alternate page by page.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any

from PIL import Image
from rich.table import Table

from app.domain import PageInput
from app.engines.vlm_stops import EndpointStops
from app.pipeline.page_attempts import past_attempt
from app.retry.plan import resume_prefix
from app.settings import PlanStep, VlmEndpoint
from bench.healthy_corpus.corpus import load_pages
from bench.scripted import (
    LOOPING_STEP,
    ScriptedPage,
    ScriptedVlmEngine,
    require_scripted_server,
    with_script,
)
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmServer

CAP = 900
PLACES = (0.25, 0.5, 0.75)
FIRST = PlanStep(name=LOOPING_STEP, engine="vlm", endpoint="primary", max_tokens=CAP)
RETRY = PlanStep(name="retry", engine="vlm", endpoint="primary", temperature=0.2, max_tokens=CAP)


class Continuing(ScriptedVlmEngine):
    """The scripted engine; a request that continues kept text is scripted the page's rest."""

    def request_body(
        self, page: PageInput, step: PlanStep, stops: EndpointStops | None = None
    ) -> dict[str, Any]:
        body = super().request_body(page, step, stops)
        if isinstance(page, ScriptedPage) and page.resume_from:
            body = with_script(body, page.healthy_text[len(page.resume_from) :])
        return body


def pages(count: int) -> list[ScriptedPage]:
    """Real healthy pages of a size the tiny server's context holds, each looping at each
    place: the line there written over and over."""
    texts = [p["text"] for p in load_pages() if p["format"] != "json"]
    texts = [t for t in texts if 1200 <= len(t) <= 2400 and t.count("\n") >= 12][:count]
    image = Image.new("RGB", (400, 560), "white")
    made = []
    for text in texts:
        lines = text.splitlines(keepends=True)
        for place in PLACES:
            at = max(1, int(place * len(lines)))
            head, line = "".join(lines[:at]), lines[at] if lines[at].strip() else lines[at - 1]
            looping = head + line * 200
            made.append(ScriptedPage(image, "", False, healthy_text=text, looping_text=looping))
    return made


def one_page(
    engine: Continuing, page: ScriptedPage, full_first: bool = True
) -> dict[str, Any] | None:
    """The first read cut, then the retry both ways (in the order asked)."""
    first = engine.transcribe(page, FIRST)
    kept = resume_prefix([past_attempt(0, first)])
    if not kept or not page.healthy_text.startswith(kept):
        return None  # not cut, or cut with nothing before the loop to keep
    row: dict[str, Any] = {"first_tokens": first.completion_tokens, "kept_chars": len(kept)}
    arms = [("full", page), ("resume", replace(page, resume_from=kept))]
    for arm, asked in arms if full_first else arms[::-1]:
        began = time.perf_counter()
        result = engine.transcribe(asked, RETRY)
        row[arm] = {
            "seconds": round(time.perf_counter() - began, 3),
            "completion_tokens": result.completion_tokens,
            "prompt_tokens": result.prompt_tokens,
            "status": result.status.value,
            "answer_is_the_page": result.text.strip() == page.healthy_text.strip(),
        }
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"pages": len(rows)}
    for arm in ("full", "resume"):
        out[arm] = {
            "completion_tokens": sum(r[arm]["completion_tokens"] or 0 for r in rows),
            "prompt_tokens": sum(r[arm]["prompt_tokens"] or 0 for r in rows),
            "seconds_median": statistics.median(r[arm]["seconds"] for r in rows),
            "seconds_total": round(sum(r[arm]["seconds"] for r in rows), 2),
            "answers_right": sum(r[arm]["answer_is_the_page"] for r in rows),
        }
    full, resumed = out["full"], out["resume"]
    out["resume_over_full"] = {
        "completion_tokens": round(resumed["completion_tokens"] / full["completion_tokens"], 3),
        "seconds": round(resumed["seconds_total"] / full["seconds_total"], 3),
    }
    return out


def run_resume(count: int) -> dict[str, Any]:
    with VllmServer() as server:
        require_scripted_server(server.base_url, SERVED_MODEL_NAME)
        endpoint = VlmEndpoint(
            base_url=server.base_url,
            model=SERVED_MODEL_NAME,
            max_image_side=256,
            server_repetition_detection=False,
        )
        engine = Continuing("primary", endpoint)
        try:
            made = pages(count)
            rows = [row for i, p in enumerate(made) if (row := one_page(engine, p, i % 2 == 0))]
        finally:
            engine.close()
    return {"cap": CAP, "places": list(PLACES), "summary": summary(rows), "rows": rows}


def resume_table(report: dict[str, Any]) -> Table:
    totals = report["summary"]
    table = Table(title=f"Retry after a loop: full re-read vs resumed, {totals['pages']} pages")
    for column in ("retry", "generated tokens", "prompt tokens", "seconds p50 / total", "answers"):
        table.add_column(column, justify="right")
    for arm in ("full", "resume"):
        row = totals[arm]
        table.add_row(
            arm,
            f"{row['completion_tokens']:,}",
            f"{row['prompt_tokens']:,}",
            f"{row['seconds_median']:.1f} / {row['seconds_total']:.1f}",
            f"{row['answers_right']}/{totals['pages']}",
        )
    ratio = totals["resume_over_full"]
    table.add_row("resume / full", f"{ratio['completion_tokens']}x", "", f"{ratio['seconds']}x", "")
    return table
