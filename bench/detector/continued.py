"""Real loops continued to the cap by their own unit: recall and characters to the verdict.

Each degenerate record of the dev corpora (`bench.detector.heldout.load_samples`) is a loop as
its reporter pasted it: often a few copies, cut short. A model that loops does not stop, so
each one is continued, as the stream would have gone on, up to `CAP_CHARS` past its onset:

- the unit and the onset are read off the text's own tail (`find_unit`), independently of
  the detector: the period `p` whose digits-as-zero tail repeats over the most characters
  (trailing whitespace and punctuation aside), and the earliest offset from which the text
  repeats with that period; where no tail repeats exactly (copies that drift in spelling or
  vary), the copies are cut at the occurrences of the tail's last 24 characters, walking back
  while they come at about the same distance, and the onset is the first of them;
- the continuation repeats the last unit; where its copies differ in their numbers (a
  counter, a timestamp), every number of the copy grows by one per copy; where copies drift,
  each next copy is one of the loop's own copies drawn at random (seeded), so the variation
  the model showed goes on.

Latency is counted from the onset to the first verdict of the online detector (16-character
chunks); a loop is caught when a verdict comes before the cap.
"""

import itertools
import random
import re
import statistics
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bench.detector.heldout import Sample

CAP_CHARS = 16_000  # about 4,096 tokens past the onset: a common max_tokens
CHUNK = 16
_DIGITS = re.compile(r"\d")
_NUMBER = re.compile(r"\d+")
_TRAILING = " \t\n.!?…"
_ANCHOR = 24
_MAX_PERIOD = 3000


@dataclass(frozen=True, slots=True)
class ContinuedLoop:
    id: str
    family: str
    onset: int
    period: int
    how: str  # "periodic tail", "drifting numbers", "anchor" (spelling drift)
    text: str


def find_unit(text: str) -> tuple[int, int, str]:
    """(period, onset, how) of the loop the text ends in."""
    body = text.rstrip(_TRAILING) or text
    zeroed = _DIGITS.sub("0", body)
    n = len(zeroed)
    best: tuple[int, int] | None = None  # (covered, period)
    for period in range(2, min(n // 2, _MAX_PERIOD) + 1):
        if zeroed[n - period :] != zeroed[n - 2 * period : n - period]:
            continue
        start = n - 2 * period
        while start > 0 and zeroed[start - 1] == zeroed[start - 1 + period]:
            start -= 1
        if best is None or n - start > best[0] + period // 2:
            best = (n - start, period)
    if best is not None and best[0] >= 3 * best[1] // 2:
        covered, period = best
        exact = body[n - period :] == body[n - 2 * period : n - period]
        return period, n - covered, "periodic tail" if exact else "drifting numbers"
    starts = _anchor_chain(body)
    if len(starts) < 2:
        return max(1, n // 3), max(0, n - 2 * (n // 3)), "anchor"
    return (n - starts[0]) // len(starts), starts[0], "anchor"


def _anchor_chain(body: str) -> list[int]:
    """Where the copies of a drifting loop start: occurrences of the tail's last characters,
    walking back while they come at about the same distance."""
    anchor = body[-_ANCHOR:]
    ends = [len(body) - _ANCHOR]
    while True:
        earlier = body.rfind(anchor, 0, ends[-1])
        if earlier < 0:
            break
        gap = ends[-1] - earlier
        if len(ends) > 1 and not (ends[-2] - ends[-1]) // 2 <= gap <= 2 * (ends[-2] - ends[-1]):
            break
        ends.append(earlier)
    starts = [end + _ANCHOR for end in reversed(ends)]
    return starts[:-1] if len(starts) > 1 else starts


def continue_loop(sample: Sample, cap: int = CAP_CHARS, seed: int = 39) -> ContinuedLoop:
    """The sample continued to `cap` characters past its onset by copies of its own loop:
    exact copies, copies counting on, or (copies that drift) its own copies drawn at random."""
    period, onset, how = find_unit(sample.text)
    body = sample.text.rstrip(_TRAILING) or sample.text
    if how == "anchor":
        starts = _anchor_chain(body)
        bounds = [*starts, len(body)] if len(starts) > 1 else [onset, len(body)]
        copies = [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]
        copies = copies or [body[-period:]]
    else:
        copies = [body[-period:]]
    rng = random.Random(f"{seed}:{sample.id}")
    pieces, size, copy = [body], len(body), 0
    while size < onset + cap:
        copy += 1
        piece = rng.choice(copies)
        if how == "drifting numbers":
            piece = _count_on(piece, copy)
        pieces.append(piece)
        size += len(piece)
    text = "".join(pieces)[: onset + cap]
    return ContinuedLoop(sample.id, sample.family, onset, period, how, text)


def _count_on(copy: str, step: int) -> str:
    """The copy with every number grown by `step`."""
    return _NUMBER.sub(lambda number: str(int(number.group()) + step), copy)


def first_verdict_at(package: ModuleType, text: str, config: Any = None) -> int | None:
    detector = package.LoopDetector(config)
    for start in range(0, len(text), CHUNK):
        if detector.feed(text[start : start + CHUNK]) is not None:
            return int(detector.text_length)
    return None


def evaluate_continued(
    package: ModuleType, loops: list[ContinuedLoop], config: Any = None
) -> dict[str, Any]:
    """Recall and characters from the onset to the verdict, per loop and in summary."""
    rows = []
    for loop in loops:
        fired = first_verdict_at(package, loop.text, config)
        latency = None if fired is None else max(0, fired - loop.onset)
        rows.append(
            {
                "id": loop.id,
                "family": loop.family,
                "how": loop.how,
                "period": loop.period,
                "latency_chars": latency,
            }
        )
    return {**summarise(rows), "loops": rows}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    caught = sorted(r["latency_chars"] for r in rows if r["latency_chars"] is not None)
    return {
        "n": len(rows),
        "caught": len(caught),
        "recall": round(len(caught) / len(rows), 4) if rows else None,
        "median_chars": statistics.median(caught) if caught else None,
        "p90_chars": _quantile(caught, 0.9),
        "missed": [r["id"] for r in rows if r["latency_chars"] is None],
    }


def _quantile(values: list[int], share: float) -> int | None:
    """The nearest-rank quantile, misses counted as beyond every value (they are slowest)."""
    if not values:
        return None
    return values[min(len(values) - 1, int(share * len(values) + 0.5) - 1)]
