"""Which pages each arm of `python -m bench flywheel-arms` reads, and the rows of the pages
it does not read: the n-gram guard's arm taken from the greedy answer where the guard could not
act, and the base's arms on the tuned arms' subset of the held-out pages."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NGRAM = (30, 90)  # DeepSeek-OCR's NGramPerReqLogitsProcessor: ngram_size 30, window_size 90


def guard_could_act(text: str, n: int = NGRAM[0]) -> bool:
    """Whether the n-gram guard could have changed a greedy answer: it bans only a token that
    would complete an n-token run already in its window, so an answer with no n-token run
    twice is the guard's answer too. The base's tokens are bytes (one a byte, no merges), so
    runs are counted on the UTF-8 bytes; an answer with U+FFFD (bytes lost in decoding) is
    counted as one the guard could change."""
    if "\ufffd" in text:
        return True
    raw = text.encode()
    seen = set()
    for start in range(len(raw) - n + 1):
        run = raw[start : start + n]
        if run in seen:
            return True
        seen.add(run)
    return False


def subset(work: Path, name: str, stems: Sequence[str]) -> str:
    """`pages/NAME/`: links to the held-out pages `stems` (same names, same truth)."""
    folder = work / "pages" / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for stem in stems:
        (folder / f"{stem}.pdf").symlink_to(work / "pages" / "held_out" / f"{stem}.pdf")
    return f"pages/{name}"


def must_read(row: dict[str, Any]) -> bool:
    """Whether the guard arm reads a page itself: the guard could act on its greedy answer,
    or there is no greedy answer to take."""
    return bool(row["guard_could_act"]) or row["first_status"] != "ok"


def final_rate(pages: dict[str, Any]) -> float:
    """The share of pages whose last attempt looped (one attempt: the first)."""
    return round(sum(row["final_loop"] for row in pages.values()) / max(1, len(pages)), 4)


def tuned_stems(work: Path, count: int) -> list[str]:
    """The held-out pages the tuned arms read: the first `count` by index (0: all)."""
    stems = sorted(p.stem for p in (work / "pages" / "held_out").glob("*.pdf"))
    if not count:
        return stems
    return [s for s in stems if int(s.rsplit("-", 1)[1]) < count]


def guard_rows(greedy: dict[str, Any], read: dict[str, Any]) -> dict[str, Any]:
    """The guard arm from the pages its job read (`read`, rows without `from_greedy`) and the
    greedy answer on every other page where the guard could not act. What the job read
    decides, not the draw that made it: a resumed run's greedy rows may have grown since."""
    rows = greedy["pages"]
    done = {n: row for n, row in read["pages"].items() if not row.get("from_greedy")}
    could = {n for n, row in rows.items() if must_read(row)}
    skipped = sorted(set(rows) - could)
    checked = [n for n in skipped if n in done]
    taken = {n: {**rows[n], "from_greedy": True} for n in skipped if n not in done}
    pages_ = {**done, **taken}
    same = sum(done[n]["first_sha"] == rows[n]["first_sha"] for n in checked)
    reads = {"read": len(could & set(done)), "taken_from_greedy": len(taken),
             "check": {"read": len(checked), "same_as_greedy": same},
             "not_read": sorted(could - set(done))}  # fmt: skip
    return {**read, "pages": dict(sorted(pages_.items())),
            "degeneration_rate_final": final_rate(pages_), "reads": reads}  # fmt: skip


def restricted(arms: dict[str, Any], stems: Sequence[str], count: int) -> dict[str, Any]:
    """Each base arm on the tuned arms' pages only, as `base@N.PLAN`: the same pages."""
    keep = set(stems)
    out = {}
    for label, arm in arms.items():
        if label.startswith("base."):
            pages_ = {n: row for n, row in arm["pages"].items() if n in keep}
            out[label.replace("base.", f"base@{count}.")] = {
                **arm,
                "pages": pages_,
                "degeneration_rate_final": final_rate(pages_),
            }
    return out
