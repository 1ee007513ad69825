"""The flywheel dose study's pages and pairs (`dose.py`): the reference run's held-out pages,
the training pool read by the base with Folio's retry ladder, and the pairs exported from it,
split by page into training and validation."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.flywheel import arms, data, families, pages
from bench.flywheel.run import folio, last_job

if TYPE_CHECKING:
    from app.settings import Settings

# The 6,000-page run's pages (`bench/results/flywheel_arms_6000.json`): its 160 training pages
# are drawn first from the same generator, so its held-out pages come out the same.
REFERENCE = replace(arms.FULL, eval_pages=6000)
POOL_SEED = 6161
# Base first-attempt loops by family on 6,000 held-out pages: form_wide 38.8%, contents 14.0%,
# form 5.4%, every other family under 0.5%; drawn 3:2:1 for about 0.24 loops a page.
POOL_FAMILIES = ("form_wide", "contents", "form_wide", "form", "form_wide", "contents")
VALIDATION_EVERY = 7  # pool pages 3, 10, 17, ...: 14% of the pool


def choose_pages(text: dict[str, Any], pool_pages: int) -> dict[str, list[pages.PageSpec]]:
    """The reference run's held-out pages (all of them: their hash is checked) and the pool."""
    rng = random.Random(arms.PAGE_SEED)
    families.choose(text["train"], REFERENCE.train_pages, "train", rng, REFERENCE.train_families)
    held_out = families.choose(
        text["held_out"], REFERENCE.eval_pages, "held_out", rng, REFERENCE.eval_families
    )
    pool = families.choose(
        text["train"], pool_pages, "pool", random.Random(POOL_SEED), POOL_FAMILIES
    )
    return {"reference": held_out, "pool": pool}


def listing_sha256(specs: Sequence[pages.PageSpec]) -> str:
    """The hash `pages.write_pages` gives a page list (names and lines)."""
    listing = json.dumps([[p.name, p.lines] for p in specs], separators=(",", ":"))
    return hashlib.sha256(listing.encode()).hexdigest()


def make_pages(work: Path, pool_pages: int, eval_pages: int) -> dict[str, Any]:
    """The reference run's first `eval_pages` held-out pages and the pool, with their truth."""
    prepared = data.prepare(work / "data")
    text = json.loads((work / "data" / "text.json").read_text())
    atlas = np.load(work / "data" / "atlas.npy")
    chosen = choose_pages(text, pool_pages)
    taken = [p for p in chosen["reference"] if index_of(p.name) < eval_pages]
    pool = chosen["pool"]
    written = {
        "held_out": pages.write_pages(
            taken, atlas, work / "pages" / "held_out", work / "truth" / "held_out"
        ),
        "pool": pages.write_pages(pool, atlas, work / "pages" / "pool", work / "truth" / "pool"),
    }
    for name in ("validation", "pool_train"):
        _link(work, name, [p.name for p in pool if is_validation(p.name) == (name == "validation")])
    return {
        "text_sha256": prepared["text"]["sha256"],  # type: ignore[index]
        "atlas_sha256": prepared["atlas_sha256"],
        "page_list_sha256": written,
        "reference_held_out_sha256": listing_sha256(chosen["reference"]),
        "page_seed": arms.PAGE_SEED,
        "pool_seed": POOL_SEED,
        "pool_families": list(POOL_FAMILIES),
    }


def index_of(stem: str) -> int:
    return int(stem.rsplit("-", 1)[1])


def is_validation(stem: str) -> bool:
    return index_of(stem) % VALIDATION_EVERY == 3


def _link(work: Path, name: str, stems: Sequence[str]) -> None:
    for kind, suffix in (("pages", ".pdf"), ("truth", ".md")):
        folder = work / kind / name
        folder.mkdir(parents=True, exist_ok=True)
        for stem in stems:
            (folder / f"{stem}{suffix}").symlink_to(work / kind / "pool" / f"{stem}{suffix}")


def read_pool(work: Path) -> str:
    """The base reads the pool with Folio's retry ladder (`folio run`); the job's id."""
    kept = work / "pool_job.txt"
    if kept.is_file():
        return kept.read_text().strip()
    folio(work, "run", "pages/pool", "--out", "run-pool", "--engine", "ladder", ok=(0, 3))
    job = last_job(work / "folio.db")
    refuse_transport_failures(work, job)
    kept.write_text(job)
    return job


def refuse_transport_failures(work: Path, job: str) -> None:
    """Stop where the server failed pages (a crash, not the model): a pool or an arm with
    holes would be measured as if the model had read them."""
    query = "SELECT count(*) FROM pages WHERE job_id = ? AND failure_category = 'transport'"
    with sqlite3.connect(work / "folio.db") as connection:
        (failed,) = connection.execute(query, (job,)).fetchone()
    if failed:
        raise SystemExit(
            f"job {job}: {failed} pages failed reaching the server (see vllm-*.log in {work}); "
            "the study stops rather than measure pages the model never read"
        )


def export_pairs(work: Path, job: str) -> dict[str, int]:
    """`pairs/truth` and `pairs/own` (the healthy retry chosen), each split into `train/` and
    `validation/` by page; `sft/healthy`: healthy pool pages' truth for the two-stage recipe."""
    counts: dict[str, int] = {}
    for kind, extra in (("truth", ["--truth", "truth/pool"]), ("own", [])):
        out = work / "pairs" / kind
        if not (out / "train.jsonl").is_file():
            folio(work, "export-dpo", job, "--out", f"pairs/{kind}", *extra)
        rows = (out / "train.jsonl").read_text(encoding="utf-8").splitlines()
        for split in ("train", "validation"):
            kept = [r for r in rows if is_validation(_stem(r)) == (split == "validation")]
            counts[f"{kind}.{split}"] = _write_split(work, out, f"{kind}-{split}", kept)
    counts["healthy"] = healthy_sft(work, job)
    return counts


def _stem(row: str) -> str:
    return Path(json.loads(row)["metadata"]["document"]).stem


def _write_split(work: Path, source: Path, name: str, rows: Sequence[str]) -> int:
    folder = work / "pairs" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(f"{r}\n" for r in rows), encoding="utf-8")
    if not (folder / "images").exists():
        (folder / "images").symlink_to(source / "images")
    return len(rows)


def settings_of(work: Path) -> Settings:
    """Folio's settings as the work folder's `folio` commands read them (its folio.toml)."""
    from app.settings import Settings

    os.environ["FOLIO_CONFIG"] = str(work / "folio.toml")
    try:
        return Settings()
    finally:
        del os.environ["FOLIO_CONFIG"]


def healthy_sft(work: Path, job: str) -> int:
    """Training pool pages whose first attempt was healthy, as SFT records (chosen: the page's
    truth; the rejected side is required by the format and unused at DPO weight 0)."""
    from app.db.engine import Database
    from app.train.healthy import export_healthy

    out = work / "pairs" / "healthy"
    if (out / "train.jsonl").is_file():
        return len((out / "train.jsonl").read_text().splitlines())
    (out / "images").mkdir(parents=True, exist_ok=True)
    settings = settings_of(work)
    export_healthy(
        settings, Database(settings.database_url), [job], out, 100_000, work / "truth" / "pool"
    )
    records = []
    for line in (out / "healthy.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if is_validation(Path(row["metadata"]["document"]).stem):
            continue
        answer = row.pop("answer")
        reply = {"role": "assistant", "content": answer}
        records.append(
            {
                **row,
                "chosen": [reply],
                "rejected": [{**reply, "content": answer[: len(answer) // 2]}],
                "metadata": {**row["metadata"], "chosen_by": "truth", "verdict": {"kind": "none"}},
            }
        )
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (out / "train.jsonl").write_text(text, encoding="utf-8")
    return len(records)


def nested(work: Path, kind: str, counts: Sequence[int], seed: int) -> dict[int, str]:
    """`pairs/KIND-N/`: the first N training pairs of one seeded order (36 within 100 within
    300), the same order for every training seed."""
    rows = (work / "pairs" / f"{kind}-train" / "train.jsonl").read_text("utf-8").splitlines()
    random.Random(seed).shuffle(rows)
    folders = {}
    for count in sorted({min(c, len(rows)) for c in counts if rows}):
        name = f"{kind}-{count}"
        _write_split(work, work / "pairs" / kind, name, rows[:count])
        folders[count] = f"pairs/{name}"
    return folders
