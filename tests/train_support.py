"""An `export-dpo` folder written as `app.train.dpo` writes it, for tests of the training side."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

from app.train.dpo import IMAGE_PLACEHOLDER

PROMPT = [{"role": "user", "content": [IMAGE_PLACEHOLDER, {"type": "text", "text": "Transcribe."}]}]


def write_pairs_folder(
    folder: Path, pages: int, *, job_id: str = "job-a", healthy: int = 0
) -> Path:
    """`pages` pairs, one page each: a looping rejected side and a plain chosen side; and
    `healthy` pages read without looping (`healthy.jsonl`, as `export-dpo` writes it)."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w", encoding="utf-8") as sink:
        for number in range(1, pages + 1):
            name = _page_image(folder, job_id, number)
            record = {
                "images": [f"images/{name}"],
                "prompt": PROMPT,
                "chosen": [_said(f"Page {number} text, read once.")],
                "rejected": [_said("Page " + f"{number} 09 " * 24)],
                "metadata": {
                    "job_id": job_id,
                    "page_id": number,
                    "document": "scan",
                    "document_sha256": "ab" * 32,
                    "page": number,
                    "rejected_verdict": {"kind": "periodic" if number % 2 else "stutter"},
                    "chosen_by": "vlm:penalized",
                },
            }
            sink.write(json.dumps(record) + "\n")
    with (folder / "healthy.jsonl").open("w", encoding="utf-8") as sink:
        for number in range(pages + 1, pages + healthy + 1):
            name = _page_image(folder, job_id, number)
            meta = {"job_id": job_id, "page_id": number, "document": "scan", "page": number,
                    "document_sha256": "ab" * 32, "answer_by": "vlm:greedy"}  # fmt: skip
            record = {"images": [f"images/{name}"], "prompt": PROMPT,
                      "answer": f"Page {number} text, read once.", "metadata": meta}  # fmt: skip
            sink.write(json.dumps(record) + "\n")
    return folder


def _page_image(folder: Path, job_id: str, number: int) -> str:
    name = f"{job_id}-{number}.png"
    image = Image.new("RGB", (280, 364), "white")
    ImageDraw.Draw(image).text((20, 20 + number), f"Page {number} text", fill="black")
    image.save(folder / "images" / name)
    return name


def _said(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}
