"""Delay on loops against false alarms on healthy pages, at a few candidate settings.

Waiting is cheap where a false alarm is not. A loop that runs 500 more tokens takes 500
token-slots (about two decode steps' work at batch 256); a false alarm costs a retry of the
page (its tokens again) and maybe the page's answer. Per 1,000 pages at the DharmaOCR loop
rate (2.42%), each candidate setting is priced as

    token-slots = loops x mean delay (characters / 4 per token; a miss runs to the cap)
                + false alarms x the mean healthy page (characters / 4)

and the false alarms are also reported as pages whose answer is at risk. Delay is measured
on the dev corpora's real loops continued to the cap (`bench.detector.continued`) and on the
counting shapes these settings move (`COUNTING_LOOPS`); false alarms on the healthy corpus.
"""

import random
import statistics
from types import ModuleType
from typing import Any

from bench.detector.continued import CAP_CHARS, ContinuedLoop, evaluate_continued
from bench.detector.corpus import false_alarms

LOOP_RATE = 0.0242
CHARS_PER_TOKEN = 4
# The settings compared: the thresholds this issue derived, halved and doubled.
SETTINGS: dict[str, dict[str, int]] = {
    "half": {"counter_min_copies": 16, "row_cell_min_repeats": 16, "lone_mark_min_repeats": 32},
    "derived": {"counter_min_copies": 32, "row_cell_min_repeats": 32, "lone_mark_min_repeats": 64},
    "counter x2": {
        "counter_min_copies": 64,
        "row_cell_min_repeats": 32,
        "lone_mark_min_repeats": 64,
    },
    "double": {
        "counter_min_copies": 64,
        "row_cell_min_repeats": 64,
        "lone_mark_min_repeats": 128,
    },
}
_ORDINAL_TEXT = (
    "fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth "
    "sixteenth seventeenth eighteenth nineteenth"
)
_ORDINALS = _ORDINAL_TEXT.split()
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
_PREFIX = (
    "Annual report of the river authority. The board met four times this year and reviewed "
    "the budget, the flood plan and the new pumping station.\n\n"
)


def _ordinal(k: int) -> str:
    if k < len(_ORDINALS):
        return _ORDINALS[k]
    k -= len(_ORDINALS)
    return f"{_TENS[(k // 9) % 8]}-{_UNITS[k % 9]}"


def _counting(name: str, copy: Any) -> ContinuedLoop:
    text, k = _PREFIX, 0
    while len(text) < len(_PREFIX) + CAP_CHARS:
        text += copy(k)
        k += 1
    return ContinuedLoop(name, "counting shape", len(_PREFIX), len(copy(1)), "constructed", text)


def counting_loops() -> list[ContinuedLoop]:
    """Loop shapes whose delay the compared thresholds set (constructed for the bench)."""
    rng = random.Random(39)
    return [
        _counting("ordinal sentence", lambda k: f"This is the {_ordinal(k)} item of the list. "),
        _counting("ordinal line", lambda k: f"- The {_ordinal(k)} item\n"),
        _counting("step counter", lambda k: f"Step {k + 1}: open the north gate and check.\n"),
        _counting("figure line", lambda k: f"![Figure {k + 1}](images/figure_{k + 1}.png)\n"),
        _counting("cell in a row", lambda k: " Not applicable |" if k else "| Status |"),
        _counting("lone bullet", lambda k: "•\n"),
        _counting("timestamped line", lambda k: f"[{k // 60:02d}:{k % 60:02d}] Speaker: okay.\n"),
        _counting("record", lambda k: f"Record {k + 7}: station {rng.choice('NS')} gate\n"),
    ]


def evaluate_tradeoff(
    package: ModuleType,
    pages: list[dict[str, Any]],
    real: list[ContinuedLoop],
    baseline: ModuleType | None = None,
) -> list[dict[str, Any]]:
    mean_page_tokens = statistics.fmean(len(p["text"]) for p in pages) / CHARS_PER_TOKEN
    loops = real + counting_loops()
    rows = []
    candidates: list[tuple[str, ModuleType, dict[str, int]]] = []
    if baseline is not None:
        candidates.append(("before (main)", baseline, {}))
    candidates += [(name, package, fields) for name, fields in SETTINGS.items()]
    for name, version, fields in candidates:
        config = version.DetectorConfig(
            **{k: v for k, v in fields.items() if k in version.DetectorConfig.__dataclass_fields__}
        )
        delays = evaluate_continued(version, loops, config)
        alarms = false_alarms(version, pages, lambda _source, f=fields: f)
        latencies = [r["latency_chars"] for r in delays["loops"]]
        mean_delay = statistics.fmean(CAP_CHARS if x is None else x for x in latencies)
        per_1000_loops = 1000 * LOOP_RATE
        rows.append(
            {
                "setting": name,
                "fields": fields,
                "false_alarms_per_1000": alarms["per_1000"],
                "recall": delays["recall"],
                "median_chars": delays["median_chars"],
                "p90_chars": delays["p90_chars"],
                "mean_delay_chars": round(mean_delay),
                "counting_shapes": {
                    r["id"]: r["latency_chars"]
                    for r in delays["loops"]
                    if r["how"] == "constructed"
                },
                "delay_token_slots_per_1000_pages": round(
                    per_1000_loops * mean_delay / CHARS_PER_TOKEN
                ),
                "false_alarm_token_slots_per_1000_pages": round(
                    alarms["per_1000"] * mean_page_tokens
                ),
            }
        )
    return rows
