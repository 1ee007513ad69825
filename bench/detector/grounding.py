"""Grounding measured where pages exist (issue 50): `python -m bench detector-grounding`.

Healthy answers are paired with their page's own text and streamed through the online stop
with and without grounding (`app.degeneration.grounding`), 4 characters a piece as the worker
feeds deltas; a page is a false alarm where a verdict would have cut it. The pairs, by source:

- `opendataloader-bench` (the healthy corpus' pinned commit): seven engines' and the ground
  truth's reading of each of 200 pages, paired with the page's text layer as a text-layer
  engine read it from the same PDF: pymupdf4llm's prediction (opendataloader's for
  pymupdf4llm itself, so no answer is asked of its own text). The PDFs themselves are Git LFS
  objects that the mirror does not hold; what the page holds is what its text layer gives.
- `olmocr-bench-sample` (../shared/corpus): olmOCR's own answers paired with the real PDF
  page's text layer as Folio reads it (PyMuPDF, `app.pdf.render.read_page`).

A page is grounded where its text passes the pipeline's usability gate (`textlayer_min_chars`,
25); pages that do not are judged as today. The thresholds are the detector's frozen defaults
and the margin `DEFAULT_MARGIN` (2 copies); nothing here was fitted to these pages.

Real loops (the shared dev corpora, continued to 16,000 characters past their onset as
`continued` does) are paired with a real page of the same kind, since their own pages are not
known: the paired page whose text holds the loop's unit most often (the worst case for
grounding), and the one sharing most words with the loop's text. Each must still be caught,
and the characters from the onset to the verdict are reported beside those past the page's
count. Cost: microseconds per fed piece on pages without a verdict, and per verdict asked.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from app.degeneration import LoopDetector, LoopVerdict
from app.degeneration.grounded import GroundedDetector
from app.degeneration.grounding import (
    DEFAULT_MARGIN,
    PageText,
    ground,
    grounding_tokens,
    unit_readings,
)
from app.pdf.textlayer import text_layer_is_usable
from bench import environment
from bench.detector.continued import ContinuedLoop, continue_loop
from bench.detector.grounding_pairs import (
    MIN_CHARS,
    OLMOCR_SAMPLE,
    REPO,
    SCAN_READ,
    SHARED,
    harvest_pairs,
    odl_pairs,
    olmocr_pairs,
    other_corpus_pages,
    pypdf_pairs,
)
from bench.detector.grounding_scans import (
    H100_7B_STEP_MS,
    ScanReader,
    TimedRead,
    read_cost,
)
from bench.detector.heldout import load_samples

RESULTS = REPO / "bench" / "results" / "detector_grounding.json"
PIECE_CHARS = 4


def _feed(detector: LoopDetector | GroundedDetector, text: str) -> LoopVerdict | None:
    """`text` in pieces as a stream delivers it, up to the first verdict."""
    for start in range(0, len(text), PIECE_CHARS):
        if (verdict := detector.feed(text[start : start + PIECE_CHARS])) is not None:
            return verdict
    return None


def stream(detector: LoopDetector | GroundedDetector, text: str) -> LoopVerdict | None:
    """The verdict on a whole answer: the stream's, else the one its end gives (an answer that
    ends while a verdict waits for the page's read waits for the read, as the engine does:
    `vlm_grounding.settle_hold`)."""
    found = _feed(detector, text)
    if found is None and isinstance(detector, GroundedDetector) and detector.holding:
        read = detector.page_read
        if isinstance(read, TimedRead):
            read.settle()
    return found or detector.finish()


def judge_pair(pair: dict[str, Any], margin: int) -> dict[str, Any]:
    """Both verdicts on one answer, and the seconds each stream took."""
    text, layer = pair["text"], pair["layer"]
    started = time.perf_counter()
    alone = stream(LoopDetector(), text)
    plain_s = time.perf_counter() - started
    grounded, grounded_s, asked, read = alone, plain_s, [], None
    # A scan is read at its verdict (the product's hold, in an H100's time): without a
    # verdict there is nothing to ask.
    scan = callable(layer)
    usable = alone is not None if scan else text_layer_is_usable(layer, MIN_CHARS)
    if usable:
        page = TimedRead(layer) if scan else layer
        detector = GroundedDetector(None, page, margin)
        started = time.perf_counter()
        grounded = stream(detector, text)
        grounded_s = time.perf_counter() - started
        asked = [[g.page_copies, g.output_copies, g.overruled, g.measure] for g in detector.asked]
        if isinstance(page, TimedRead) and page.found is not None:
            read = {k: v for k, v in page.found.items() if k != "text"}
            read |= {"waited_chars": detector.read_waited, "missed": detector.read_missed}
            read["moved_on"] = detector.read_moved_on
            # The page's next attempt asks the read's text (cut and confirmed): kept there?
            again = stream(GroundedDetector(None, page.found["text"], margin), text)
            read["retry"] = _row(again, text)
    return {
        "source": pair["source"],
        "producer": pair["producer"],
        "page": pair["page"],
        "read": pair.get("read", "text layer"),
        "chars": len(text),
        "usable": usable,
        "alone": _row(alone, text),
        "grounded": _row(grounded, text),
        "asked": asked,
        "scan_read": read,
        "plain_s": plain_s,
        "grounded_s": grounded_s,
    }


def _row(verdict: LoopVerdict | None, text: str) -> dict[str, Any] | None:
    if verdict is None:
        return None
    excerpt = text[max(0, verdict.onset - 20) : verdict.onset + 160]
    return {"kind": verdict.kind, "onset": verdict.onset, "unit": verdict.unit[:80], "at": excerpt}


def false_alarms(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per source and pooled: pages, grounded pages, false alarms alone and grounded."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["source"]].append(row)
        split = "harvested split" if row["source"].startswith("harvest: ") else "corpus"
        groups[f"pooled: {split}"].append(row)
        groups[f"pooled: {split}, {page_kind(row)}"].append(row)
    rates = {name: _rates(group) for name, group in sorted(groups.items())}
    for split in ("corpus", "harvested split"):
        sources = [r for name, r in rates.items() if not name.startswith("pooled")]
        sources = [r for r in sources if r["harvest"] == (split == "harvested split")]
        if sources and (pooled := rates.get(f"pooled: {split}")):
            for method in ("alone", "grounded"):
                macro = sum(r[f"{method}_per_1000"] for r in sources) / len(sources)
                pooled[f"{method}_macro_per_1000"] = round(macro, 2)
    return rates


def page_kind(row: dict[str, Any]) -> str:
    """What the page's text is: a text layer, a scan read at the verdict, or not at hand."""
    if row["read"] == "text layer":
        return "text layer"
    return "scan" if row["read"] == SCAN_READ else "page not at hand"


def _rates(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    alone = sum(1 for r in rows if r["alone"])
    grounded = sum(1 for r in rows if r["grounded"])
    after_retry = sum(1 for r in rows if r["grounded"] and (r["scan_read"] or {}).get("retry", 1))
    usable = [r for r in rows if r["usable"]]
    return {
        "harvest": all(r["source"].startswith("harvest: ") for r in rows),
        "pages": n,
        "with_text_layer": len(usable),
        "alone": alone,
        "grounded": grounded,
        "alone_per_1000": round(1000 * alone / n, 2) if n else None,
        "grounded_per_1000": round(1000 * grounded / n, 2) if n else None,
        # ... where a scan's verdict the hold let stand is asked again by the page's next
        # attempt, which has the read's text: the answer kept at one more attempt's cost
        "after_retry": after_retry,
        "after_retry_per_1000": round(1000 * after_retry / n, 2) if n else None,
        "alone_per_1000_with_layer": _per_1000(sum(1 for r in usable if r["alone"]), usable),
        "grounded_per_1000_with_layer": _per_1000(sum(1 for r in usable if r["grounded"]), usable),
        "overruled_verdicts": sum(1 for r in rows for a in r["asked"] if a[2]),
        "overruled_by_measure": dict(
            Counter(a[3] for r in rows for a in r["asked"] if a[2] and len(a) > 3)
        ),
    }


def set_before(rates: dict[str, Any], before: dict[str, Any]) -> None:
    """The earlier commit's false alarms beside each pooled split and page kind, as its
    product judged them: grounded on text layers, scans never asked (their verdict alone)."""
    counts: Counter[str] = Counter()
    for row in before["flagged"]:
        kind = "text layer" if row["read"] == "text layer" else "page not at hand"
        if row["read"] not in ("text layer", "none"):
            kind = "scan"
        flagged = row["grounded"] if kind == "text layer" else row["alone"]
        split = "harvested split" if row["source"].startswith("harvest: ") else "corpus"
        if flagged:
            counts[f"pooled: {split}"] += 1
            counts[f"pooled: {split}, {kind}"] += 1
    for name, found in rates.items():
        if name.startswith("pooled: "):
            found["before"] = counts[name]
            found["before_per_1000"] = _per_1000(counts[name], range(found["pages"]))


def _per_1000(count: int, rows: Sequence[Any]) -> float | None:
    return round(1000 * count / len(rows), 2) if rows else None


def paired_loops(
    loops: Sequence[ContinuedLoop], layers: Sequence[str]
) -> Iterator[tuple[ContinuedLoop, str, str]]:
    """Each loop with the page holding its unit most often, and the one sharing most words."""
    bags = [Counter(grounding_tokens(layer)) for layer in layers]
    pages = [PageText(layer) for layer in layers]
    for loop in loops:
        unit = loop.text[loop.onset : loop.onset + loop.period]
        readings = unit_readings(unit)
        if readings:
            held = [max(page.copies(r) for r in readings) for page in pages]
            yield loop, layers[max(range(len(layers)), key=held.__getitem__)], "holds its unit"
        words = Counter(grounding_tokens(loop.text[: loop.onset + 4 * loop.period]))
        shared = [sum((bag & words).values()) for bag in bags]
        yield loop, layers[max(range(len(layers)), key=shared.__getitem__)], "most words"


def judge_loop(
    loop: ContinuedLoop, layer: str, pairing: str, margin: int, read_cpu_s: float | None = None
) -> dict[str, Any]:
    """Where the stop cuts a continued real loop, alone and asking a paired page (a scan's
    read where `read_cpu_s` says what it costs: the stream runs on while it is read)."""
    alone = _first_verdict(LoopDetector(), loop.text)
    page: str | TimedRead = layer
    if read_cpu_s is not None:
        page = TimedRead(lambda: {"text": layer, "cpu_s": read_cpu_s})
    detector = GroundedDetector(None, page, margin)
    grounded = _first_verdict(detector, loop.text)
    standing = detector.standing
    past = None
    if grounded is not None and standing is not None:
        past = max(0, grounded - loop.onset - standing.page_copies * loop.period)
    return {
        "id": loop.id,
        "family": loop.family,
        "pairing": pairing,
        "period": loop.period,
        "alone_chars": None if alone is None else max(0, alone - loop.onset),
        "grounded_chars": None if grounded is None else max(0, grounded - loop.onset),
        "page_copies": standing.page_copies if standing else 0,
        "chars_past_page_count": past,
        "overruled": len(detector.overruled),
        "read_waited_chars": detector.read_waited,
        "read_moved_on": detector.read_moved_on,
    }


def _first_verdict(detector: LoopDetector | GroundedDetector, text: str) -> int | None:
    """Characters fed when the stream's first verdict came (None: no verdict)."""
    return detector.text_length if _feed(detector, text) is not None else None


def loop_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pairing in sorted({r["pairing"] for r in rows}):
        group = [r for r in rows if r["pairing"] == pairing]
        caught = [r for r in group if r["grounded_chars"] is not None]
        past = sorted(r["chars_past_page_count"] or 0 for r in caught)
        out[pairing] = {
            "loops": len(group),
            "caught_alone": sum(1 for r in group if r["alone_chars"] is not None),
            "caught_grounded": len(caught),
            "p90_chars_alone": _p90(
                [r["alone_chars"] for r in group if r["alone_chars"] is not None]
            ),
            "p90_chars_grounded": _p90([r["grounded_chars"] for r in caught]),
            "max_chars_grounded": max((r["grounded_chars"] for r in caught), default=None),
            # a held verdict waited past the hold (the stream seemed to move on from the unit)
            "loops_waited_past_the_hold": sum(1 for r in group if r.get("read_moved_on")),
            "p90_chars_past_page_count": _p90(past),
            "max_chars_past_page_count": past[-1] if past else None,
            "loops_the_page_delayed": sum(1 for r in group if r["overruled"]),
            "missed": [r["id"] for r in group if r["grounded_chars"] is None],
        }
    return out


def _p90(values: Sequence[int]) -> int | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] if ordered else None


def cost(rows: Sequence[dict[str, Any]], layers: Sequence[str]) -> dict[str, Any]:
    """Microseconds per fed piece without a verdict, alone and grounded; per verdict asked."""
    quiet = [r for r in rows if r["usable"] and not r["alone"] and not r["asked"]]
    pieces = sum(r["chars"] for r in quiet) / PIECE_CHARS or 1
    asked_s: list[float] = []
    for row in rows:
        if row["alone"] and row["usable"]:
            verdict = LoopVerdict(
                row["alone"]["kind"], len(row["alone"]["unit"]), 3.0, 0, 0, row["alone"]["unit"]
            )
            layer = layers[len(asked_s) % len(layers)]
            started = time.perf_counter()
            ground(verdict, "x " * 2000, PageText(layer))
            asked_s.append(time.perf_counter() - started)
    return {
        "pages_without_verdict": len(quiet),
        "us_per_piece_alone": round(1e6 * sum(r["plain_s"] for r in quiet) / pieces, 3),
        "us_per_piece_grounded": round(1e6 * sum(r["grounded_s"] for r in quiet) / pieces, 3),
        "ms_per_verdict_asked": round(1e3 * sum(asked_s) / len(asked_s), 3) if asked_s else None,
        "verdicts_timed": len(asked_s),
    }


def ocr_at_verdict(root: Path = OLMOCR_SAMPLE, dpi: int = 200) -> dict[str, Any]:
    """What reading a page without a text layer at the verdict would cost: Tesseract's CPU
    seconds per page (the olmOCR-bench sample's pages rendered at `dpi`), and the tokens a
    stream on an H100 writes meanwhile if it is not held."""
    import pymupdf
    import tesserocr
    from PIL import Image

    from app.engines.tesseract import default_tessdata_dir

    seconds: list[float] = []
    with tesserocr.PyTessBaseAPI(path=default_tessdata_dir() + "/", lang="eng") as api:
        for pdf in sorted((root / "pdfs").glob("*.pdf")):
            with pymupdf.open(pdf) as doc:
                pixmap = doc[0].get_pixmap(dpi=dpi)
            image = Image.frombytes("RGB", (pixmap.width, pixmap.height), pixmap.samples)
            started = time.process_time()
            api.SetImage(image)
            api.GetUTF8Text()
            seconds.append(time.process_time() - started)
    if not seconds:
        return {}
    ordered = sorted(seconds)
    median = ordered[len(ordered) // 2]
    return {
        "pages": len(seconds),
        "dpi": dpi,
        "cpu_s_median": round(median, 2),
        "cpu_s_max": round(ordered[-1], 2),
        "tokens_meanwhile_median_h100_7b": round(1000 * median / H100_7B_STEP_MS),
    }


def table(report: dict[str, Any]) -> Table:
    out = Table(title="False alarms per 1,000 real healthy pages, alone and grounded")
    names = ("source", "pages", "asked", "alone", "before", "grounded", "alone /1k", "before /1k")
    for name in (*names, "grounded /1k"):
        out.add_column(name, justify="left" if name == "source" else "right")
    for name, row in report["false_alarms"].items():
        out.add_row(
            name,
            str(row["pages"]),
            str(row["with_text_layer"]),
            str(row["alone"]),
            str(row.get("before", "")),
            str(row["grounded"]),
            str(row["alone_per_1000"]),
            str(row.get("before_per_1000", "")),
            str(row["grounded_per_1000"]),
        )
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench detector-grounding")
    parser.add_argument("--limit", type=int, default=0, help="pages per reader (0: all)")
    parser.add_argument("--no-ocr-cost", action="store_true", help="skip timing Tesseract")
    parser.add_argument("--margin", type=int, default=DEFAULT_MARGIN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--before", type=Path, help="an earlier commit's results, to set its figures beside"
    )
    args = parser.parse_args(argv)
    console = Console()
    reader = ScanReader()
    harvest = functools.partial(harvest_pairs, reader)
    sources = (odl_pairs, pypdf_pairs, olmocr_pairs, other_corpus_pages, harvest)
    limit = args.limit or None
    pairs = [pair for source in sources for pair in itertools.islice(source(), limit)]
    rows = []
    with console.status("") as status:
        for done, pair in enumerate(pairs, 1):
            status.update(f"healthy pages: {done} of {len(pairs)}")
            rows.append(judge_pair(pair, args.margin))
    layers = [
        p["layer"]
        for p in pairs
        if isinstance(p["layer"], str) and text_layer_is_usable(p["layer"], MIN_CHARS)
    ]
    samples = [s for s in load_samples(SHARED) if s.label == "degenerate"]
    loops = [continue_loop(s) for s in samples]
    loop_rows = [
        judge_loop(loop, layer, how, args.margin)
        for loop, layer, how in paired_loops(loops, layers)
    ]
    # Loops on scans: paired with the scans read here, the stream running on while it is read
    # (each read as slow as the slowest: a verdict that waited past the hold would show)
    reads = read_cost(reader.reads)
    scans = [r["text"] for r in reader.reads if text_layer_is_usable(r["text"], MIN_CHARS)]
    if scans:
        loop_rows += [
            judge_loop(loop, text, f"scan: {how}", args.margin, reads["cpu_s_max"])
            for loop, text, how in paired_loops(loops, scans)
        ]
    reader.close()
    rates = false_alarms(rows)
    if args.before:
        set_before(rates, json.loads(args.before.read_text(encoding="utf-8")))
    report = {
        "machine": environment.machine_info(),
        "margin": args.margin,
        "pieces_chars": PIECE_CHARS,
        "false_alarms": rates,
        "scan_reads": reads,
        "loops": loop_summary(loop_rows),
        "cost": cost(rows, layers),
        "ocr_at_verdict": {} if args.no_ocr_cost else ocr_at_verdict(),
        "flagged": [r for r in rows if r["alone"] or r["grounded"]],
        "loop_rows": loop_rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    console.print(table(report))
    console.print(json.dumps(report["loops"], indent=1))
    console.print(json.dumps(report["cost"], indent=1))
    console.print(json.dumps(report["ocr_at_verdict"], indent=1))
    console.print(json.dumps(report["scan_reads"], indent=1))
    return report
