"""The dose study's pool reading, kept: the pairs and healthy pages the base's reading of the
training pool gave (`pairs/truth`, `pairs/own`, `pairs/healthy`), packed into one committed
file, so a later run on another machine starts from them instead of reading the pool again
(an hour and more on 2 cores).

Only text is packed: each record's image is the pool page rendered as the model saw it, made
again here from the same generated page (`pages/pool/`, which the study makes anew from its
seeds) and checked against the packed image's SHA-256, so a machine that renders otherwise
reads the pool again rather than train on other pixels.

The study's checkpoint (every reading, training card and diagnosis so far: `partial.json`) is
kept the same way (`keep_partial`), so a later session goes on after the last arm read here
instead of reading the base again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from bench.environment import read_results, write_compressed
from bench.flywheel import pool

# the folders packed, each with its records as training reads them, in RECORDS (`healthy`: the
# SFT records `pool.healthy_sft` made)
KINDS = ("truth", "own", "healthy")
RECORDS = "train.jsonl"
NAME = "flywheel_dose_pool"
PARTIAL = "flywheel_dose_partial"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(work: Path, job: str, hashes: dict[str, Any], directory: Path | None) -> Path | None:
    """`bench/results/flywheel_dose_pool.json.gz` (or in `directory`) from a read pool; None
    where that pool's reading is kept there already (the pool here was unpacked from it)."""
    kept = read_results(NAME, directory)
    if kept is not None and kept["job"] == job and kept["pages"] == hashes:
        return None
    with sqlite3.connect(work / "folio.db") as connection:
        endpoint = connection.execute(
            "SELECT endpoint FROM attempts WHERE job_id = ? AND step_index = 0 LIMIT 1", (job,)
        ).fetchone()[0]
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        folder = work / "pairs" / kind
        rows = [json.loads(r) for r in (folder / RECORDS).read_text("utf-8").splitlines()]
        images = {i for row in rows for i in row["images"]}
        kinds[kind] = {"rows": rows, "images": {i: _sha(folder / i) for i in sorted(images)}}
    data = {"job": job, "endpoint": endpoint, "pages": hashes, "kinds": kinds}
    return write_compressed(NAME, data, directory)


def unpack(work: Path, hashes: dict[str, Any], directory: Path | None = None) -> str | None:
    """The packed pool reading into `work` (its pages made already): the pool job's id, or
    None where nothing is packed for these pages."""
    if (work / "pool_job.txt").is_file():  # a pool read (or unpacked) here already
        return None
    packed = read_results(NAME, directory)
    if packed is None or packed["pages"] != hashes:
        return None
    from app.train.page_image import profile_of, write_page_image

    settings = pool.settings_of(work)
    profile = profile_of(settings, packed["endpoint"])
    for kind in KINDS:
        folder = work / "pairs" / kind
        (folder / "images").mkdir(parents=True, exist_ok=True)
        rows = packed["kinds"][kind]["rows"]
        row_of = {image: row for row in rows for image in row["images"]}
        for image, sha in packed["kinds"][kind]["images"].items():
            row = row_of[image]
            page = work / "pages" / "pool" / f"{row['metadata']['document']}.pdf"  # its name
            target = folder / image
            write_page_image(
                settings, profile, page, row["metadata"]["page"], packed["endpoint"], target
            )
            if _sha(target) != sha:
                raise SystemExit(
                    f"{target} renders otherwise on this machine than where the pool was read: "
                    f"read the pool again (move {NAME}.json.gz aside)"
                )
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (folder / RECORDS).write_text(text, encoding="utf-8")
    (work / "pool_job.txt").write_text(packed["job"])
    return str(packed["job"])


def keep_partial(result: dict[str, Any], directory: Path | None = None) -> Path:
    """`bench/results/flywheel_dose_partial.json.gz` (or in `directory`): the study so far."""
    return write_compressed(PARTIAL, result, directory)


def kept_partial(hashes: dict[str, Any], directory: Path | None = None) -> dict[str, Any]:
    """The kept checkpoint of a study on these pages; empty where none is kept for them."""
    packed = read_results(PARTIAL, directory)
    return packed if packed is not None and packed.get("data") == hashes else {}
