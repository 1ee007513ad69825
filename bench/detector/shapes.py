"""Per-shape recall, latency and false alarms of a detector on the built dev set.

A detector is given as its package (`app.degeneration` or a baseline loaded from git), so the
same samples are judged by both versions side by side.
"""

import random
import statistics
from types import ModuleType
from typing import Any

from rich.table import Table

from bench.detector.devset_sources import HealthyText
from bench.detector.loop_shapes import SHAPES, LoopSample

CHUNK = 16


def evaluate_shapes(package: ModuleType, samples: list[LoopSample]) -> list[dict[str, Any]]:
    """One row per shape: online recall and latency, offline recall at the cap."""
    rows = []
    for shape in SHAPES:
        judged = [_judge(package, sample) for sample in samples if sample.shape == shape]
        latencies = [j["latency_periods"] for j in judged if j["latency_periods"] is not None]
        rows.append(
            {
                "shape": shape,
                "samples": len(judged),
                "online_recall": _share(j["online"] for j in judged),
                "within_bound": _share(j["within"] for j in judged),
                "early": sum(j["early"] for j in judged),
                "latency_periods_median": _round(statistics.median(latencies))
                if latencies
                else None,
                "latency_periods_max": _round(max(latencies)) if latencies else None,
                "cap_recall": _share(j["capped"] for j in judged),
                "missed": [j["id"] for j in judged if not (j["within"] and j["capped"])],
            }
        )
    return rows


def evaluate_healthy(
    package: ModuleType, texts: list[HealthyText], seed: int = 5
) -> list[dict[str, Any]]:
    """False alarms per origin: online, offline (cap unknown) and cut at the cap."""
    rng = random.Random(seed)
    outcomes = []
    for item in texts:
        cut = item.text[: int(len(item.text) * rng.uniform(0.4, 1.0))]
        outcomes.append(
            {
                "id": item.id,
                "origin": item.origin,
                "online": _fires(package, item.text) is not None,
                "offline": _degenerate(package, item.text),
                "cap": _degenerate(package, cut, finish_reason="length"),
            }
        )
    origins = sorted({o["origin"] for o in outcomes})
    return [
        {
            "origin": origin,
            "samples": len(group),
            **{
                f"{method}_fp": sum(o[method] for o in group)
                for method in ("online", "offline", "cap")
            },
            "flagged": [o["id"] for o in group if o["online"] or o["offline"] or o["cap"]],
        }
        for origin in origins
        for group in [[o for o in outcomes if o["origin"] == origin]]
    ]


def _judge(package: ModuleType, sample: LoopSample) -> dict[str, Any]:
    fired_at = _fires(package, sample.text)
    latency = None if fired_at is None else fired_at - sample.onset
    bound = 3 * sample.period + 64
    capped = _degenerate(package, sample.capped, finish_reason="length")
    return {
        "id": sample.id,
        "online": latency is not None and latency >= 0,
        "early": latency is not None and latency < 0,
        "within": latency is not None and 0 <= latency <= bound,
        "latency_periods": None if latency is None else latency / sample.period,
        "capped": capped,
    }


def _fires(package: ModuleType, text: str) -> int | None:
    """Characters streamed (16-character chunks) when the first verdict came, else None."""
    fired = first_verdict(package, text)
    return None if fired is None else fired[0]


def first_verdict(package: ModuleType, text: str) -> tuple[int, Any] | None:
    """`text` streamed in 16-character chunks: the characters streamed when the first verdict
    came, and that verdict; None if none came."""
    detector = package.LoopDetector()
    try:
        for start in range(0, len(text), CHUNK):
            if detector.feed(text[start : start + CHUNK]) is not None:
                return int(detector.text_length), detector.verdict
    except IndexError:
        return None  # see `_degenerate`
    return None


def _degenerate(package: ModuleType, text: str, finish_reason: str | None = None) -> bool:
    try:
        return bool(package.score_output(text, finish_reason=finish_reason).degenerate)
    except IndexError:
        # Baselines before branch i13b-detector index past the line tracker's history on a
        # line that repeats the 16th line back (two chat-turn samples): read as not flagged.
        return False


def _share(flags: Any) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else None


def _round(value: float) -> float:
    return round(value, 2)


def shape_table(rows: list[dict[str, Any]], baseline: list[dict[str, Any]] | None) -> Table:
    """Per-shape table; the baseline's online and cap recall beside the new ones."""
    table = Table(title="Loop shapes built from real OCR text (16-char chunks; bound 3p+64)")
    columns = ["shape", "n", "online", "within bound", "latency p50/max (periods)", "cap"]
    if baseline:
        columns += ["before: within", "before: cap"]
    for column in columns:
        table.add_column(column, justify="left" if column == "shape" else "right")
    before = {row["shape"]: row for row in baseline or []}
    for row in rows:
        cells = [
            row["shape"],
            str(row["samples"]),
            _cell(row["online_recall"]),
            _cell(row["within_bound"]),
            f"{row['latency_periods_median']} / {row['latency_periods_max']}",
            _cell(row["cap_recall"]),
        ]
        if baseline:
            old = before[row["shape"]]
            cells += [_cell(old["within_bound"]), _cell(old["cap_recall"])]
        table.add_row(*cells)
    return table


def healthy_table(rows: list[dict[str, Any]], baseline: list[dict[str, Any]] | None) -> Table:
    table = Table(title="Healthy real outputs: false alarms (online / offline / cut at the cap)")
    for column in ("origin", "n", "online", "offline", "cap cut", "before: online/offline/cap"):
        table.add_column(column, justify="left" if column == "origin" else "right")
    before = {row["origin"]: row for row in baseline or []}
    for row in rows:
        old = before.get(row["origin"])
        old_cell = f"{old['online_fp']}/{old['offline_fp']}/{old['cap_fp']}" if old else "-"
        table.add_row(
            row["origin"],
            str(row["samples"]),
            str(row["online_fp"]),
            str(row["offline_fp"]),
            str(row["cap_fp"]),
            old_cell,
        )
    return table


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
