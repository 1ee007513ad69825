"""An arm's rows, one a page, from its attempt rows in the database: the first attempt's loop
kind, tokens and CER beside the page's final figures (`folio eval`'s), and the greedy arm
derived from the ladder's first attempts."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from app.degeneration.offline import run_online_detector
from app.evaluate import quality
from bench.flywheel import families
from bench.flywheel.reads import final_rate, guard_could_act


def per_page(database: Path, arm: dict[str, Any], truth: str = "held_out") -> dict[str, Any]:
    """One row per page: family, first attempt's loop kind, any loop, tokens, final CER
    (the truth in `truth/TRUTH/` beside the database)."""
    cer = {Path(s["document"]).stem: s["cer"] for s in arm["page_scores"]}
    query = """SELECT d.name, a.output, a.verdict_kind, a.completion_tokens, a.status
               FROM attempts a JOIN pages p ON p.id = a.page_id
               JOIN documents d ON d.id = p.document_id
               WHERE a.job_id = ? ORDER BY d.name, a.id"""
    rows: dict[str, dict[str, Any]] = {}
    with sqlite3.connect(database) as connection:
        for name, output, kind, tokens, status in connection.execute(query, (arm["job_id"],)):
            stem = Path(name).stem
            row = rows.setdefault(stem, {"family": families.family_of(stem), "first": None,
                                         "first_status": status, "looped_any": False,
                                         "tokens": 0, "attempts": 0})  # fmt: skip
            if row["attempts"] == 0:
                said = output or ""
                row |= {"first": kind, "first_tokens": tokens or 0, "first_output": said,
                        "first_sha": hashlib.sha256(said.encode()).hexdigest()[:16],
                        "guard_could_act": guard_could_act(said)}  # fmt: skip
            row["looped_any"] |= kind is not None
            row["final_loop"] = kind is not None  # the last attempt's, once all are read
            row["tokens"] += tokens or 0
            row["attempts"] += 1
    for stem, row in rows.items():
        row["cer"] = cer.get(stem)
        page_truth = (database.parent / "truth" / truth / f"{stem}.md").read_text()
        # the first attempt alone, scored as `folio eval` scores a page (a failed one as empty)
        said = row.pop("first_output", "") if row["first_status"] == "ok" else ""
        row.pop("first_output", None)
        row["first_cer"] = quality.cer(said, page_truth)
        # a loop the detector would find in the truth itself is the detector's, not the model's
        row["truth_trips_detector"] = run_online_detector(page_truth) is not None
    return {"job_id": arm["job_id"], "plan": arm["plan"], "pages": rows,
            "degeneration_rate_final": arm["degeneration_rate_final"]}  # fmt: skip


def greedy_of(arms: dict[str, Any]) -> dict[str, Any]:
    """`X.greedy` from `X.ladder`: the ladder's first attempt is a greedy one, page by page."""
    derived = {}
    for label, arm in arms.items():
        if label.endswith(".ladder"):
            pages_ = {name: {**row, "cer": row["first_cer"], "tokens": row["first_tokens"],
                             "attempts": 1, "looped_any": row["first"] is not None,
                             "final_loop": row["first"] is not None}
                      for name, row in arm["pages"].items()}  # fmt: skip
            derived[label.replace(".ladder", ".greedy")] = {
                "job_id": arm["job_id"], "plan": "greedy (the ladder's first attempt)",
                "pages": pages_, "degeneration_rate_final": final_rate(pages_)}  # fmt: skip
    return {**derived, **arms}
