"""An `export-dpo` folder written as `app.train.dpo` writes it, for tests of the training side."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

from app.train.dpo import IMAGE_PLACEHOLDER


def write_pairs_folder(folder: Path, pages: int, *, job_id: str = "job-a") -> Path:
    """`pages` pairs, one page each: a looping rejected side and a plain chosen side."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w", encoding="utf-8") as sink:
        for number in range(1, pages + 1):
            name = f"{job_id}-{number}.png"
            image = Image.new("RGB", (280, 364), "white")
            ImageDraw.Draw(image).text((20, 20 + number), f"Page {number} text", fill="black")
            image.save(folder / "images" / name)
            record = {
                "images": [f"images/{name}"],
                "prompt": [
                    {
                        "role": "user",
                        "content": [IMAGE_PLACEHOLDER, {"type": "text", "text": "Transcribe."}],
                    }
                ],
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
    return folder


def _said(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}
