"""`python -m bench.flywheel.probe --url URL`: which layouts make a served flywheel model loop,
and how.

A quick look before `flywheel-arms`, straight to the server's chat API (no Folio job): N pages
of each candidate layout, read greedily at the bench's token cap, each answer judged by Folio's
own online detector (`run_online_detector`: the verdict and its loop kind, as a job would
record them). Candidates: the bench's families (`families.py`), other layouts (columns, logs,
code, an index, letter-spaced text, more and wider lines, ...) and the same prose in other
fonts, sizes and offsets against the 28 px patch grid. Held-out text only; the page seed fixes
the pages. The result, per candidate: pages, loops by kind, mean CER, one unit per kind.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import random
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.flywheel import data, families
from bench.flywheel.families import Lines, prose

Layout = Callable[[Sequence[str], random.Random, int], Lines]
WINDOW = 2048  # the server's max_model_len: prompt, image and answer
FONTS = Path(data.FONT).parent


def widened(columns: int) -> Layout:
    def layout(source: Sequence[str], rng: random.Random, count: int) -> Lines:
        return textwrap.wrap(" ".join(prose(source, rng, count + count // 2 + 4)), columns)[:count]

    return layout


def lines_of(count: int) -> Layout:
    return lambda source, rng, _: prose(source, rng, count)


def logs(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    day = rng.randint(1, 28)
    return [f"2024-03-{day:02d} 10:{i:02d} INFO {' '.join(line.split()[:4])[:18]}"
            for i, line in enumerate(prose(source, rng, count))]  # fmt: skip


def index(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    found = {w.strip(".,;:()").lower() for line in prose(source, rng, 3 * count)
             for w in line.split() if w.isalpha() and len(w) > 3}  # fmt: skip
    return [f"{w}, {rng.randint(1, 300)}, {rng.randint(1, 300)}" for w in sorted(found)[:count]]


def letter_spaced(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    return [" ".join(line[:20]) for line in prose(source, rng, count)]


def counters(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    value, step, out = rng.randint(1, 500), rng.choice((1, 2, 5, 10)), []
    for _ in range(count):
        row: list[str] = []
        while len(" ".join([*row, str(value)])) <= data.COLUMNS:
            row.append(str(value))
            value += step
        out.append(" ".join(row))
    return out


def number_grid(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    return [" ".join(f"{rng.randint(0, 99):>3}" for _ in range(10)) for _ in range(count)]


def ruled(source: Sequence[str], rng: random.Random, count: int) -> Lines:
    out: Lines = []
    for line in prose(source, rng, count):
        out += [line, "-" * data.COLUMNS]
    return out[:count]


LAYOUTS: dict[str, Layout] = {
    **families.FAMILIES, "logs": logs, "index": index, "letter_spaced": letter_spaced,
    "counters": counters, "number_grid": number_grid, "ruled": ruled,
    **{f"width_{n}": widened(n) for n in (44, 52, 64, 70, 80)},
    **{f"lines_{n}": lines_of(n) for n in (11, 12, 13, 14)},
}  # fmt: skip
# the same prose in another face or size, or off the patch grid: (font file, size, dy, dx)
LOOKS = {
    "bold": ("DejaVuSansMono-Bold", 23, 1, 0), "oblique": ("DejaVuSansMono-Oblique", 23, 1, 0),
    "serif": ("DejaVuSerif", 23, 1, 0), "sans": ("DejaVuSans", 23, 1, 0),
    "size_18": ("DejaVuSansMono", 18, 5, 0), "size_21": ("DejaVuSansMono", 21, 2, 0),
    "low_in_cell": ("DejaVuSansMono", 23, 4, 0), "half_patch_right": ("DejaVuSansMono", 23, 1, 7),
}  # fmt: skip


def atlas(font: str, size: int, dy: int) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(str(FONTS / f"{font}.ttf"), size)
    height, width = data.CELL
    glyphs = np.zeros((len(data.CHARS), height, width), dtype=np.uint8)
    for n, char in enumerate(data.CHARS):
        cell = Image.new("L", (width, height), 0)
        ImageDraw.Draw(cell).text((0, dy), char, fill=255, font=face)
        glyphs[n] = np.asarray(cell)
    return glyphs


def png(pixels: np.ndarray, dx: int) -> str:
    from PIL import Image

    if dx:  # white margin on the left: characters straddle the 28 px patches
        pixels = np.pad(pixels, ((0, 0), (dx, 0)), constant_values=255)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def read(url: str, model: str, image: str, max_tokens: int) -> tuple[str, int]:
    import httpx

    content = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
               {"type": "text", "text": data.PROMPT}]  # fmt: skip
    body = {"model": model, "temperature": 0.0, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": content}]}  # fmt: skip
    answer = httpx.post(f"{url}/chat/completions", json=body, timeout=1800).raise_for_status()
    reply = answer.json()
    return reply["choices"][0]["message"]["content"], reply["usage"]["completion_tokens"]


def probe_page(url: str, model: str, name: str, lines: Lines, glyphs: np.ndarray, dx: int
               ) -> dict[str, Any]:  # fmt: skip
    from app.degeneration.offline import run_online_detector
    from app.evaluate import quality
    from bench.flywheel.pages import MAX_TOKENS

    width = max(len(line) for line in lines) + dx // 14
    image_tokens = (width + width % 2) // 2 * len(lines)
    answer, tokens = read(url, model, png(data.draw(lines, glyphs), dx),
                          min(MAX_TOKENS, WINDOW - image_tokens - 64))  # fmt: skip
    truth = data.transcription(lines)
    verdict = run_online_detector(answer)
    return {"candidate": name, "kind": verdict.kind if verdict else None,
            "unit": verdict.unit[:60] if verdict else None, "tokens": tokens,
            "cer": quality.cer(answer, truth),
            "truth_trips_detector": run_online_detector(truth) is not None}  # fmt: skip


def probe(url: str, model: str, per: int, seed: int, names: Sequence[str], work: Path
          ) -> dict[str, Any]:  # fmt: skip
    """`per` pages of each candidate in `names` from held-out text, read 32 at a time."""
    data.write_text(work / "text.json")
    sources = [s for s in json.loads((work / "text.json").read_text())["held_out"] if len(s) >= 40]
    rng = random.Random(seed)
    plain = data.glyph_atlas()
    looks = {name: atlas(*LOOKS[name][:3]) for name in names if name in LOOKS}
    jobs = []
    for name in names:
        layout = LAYOUTS.get(name, prose)
        glyphs, dx = (looks[name], LOOKS[name][3]) if name in looks else (plain, 0)
        for _ in range(per):
            lines = layout(rng.choice(sources), rng, rng.randint(4, data.MAX_LINES))
            jobs.append((url, model, name, lines, glyphs, dx))
    with ThreadPoolExecutor(32) as pool:
        rows = list(pool.map(lambda job: probe_page(*job), jobs))
    return {name: tally([r for r in rows if r["candidate"] == name]) for name in names}


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    kinds = Counter(r["kind"] for r in rows if r["kind"])
    return {"pages": len(rows), "loops": sum(kinds.values()), "kinds": dict(kinds),
            "cer": round(float(np.mean([r["cer"] for r in rows])), 3),
            "tokens_per_page": round(float(np.mean([r["tokens"] for r in rows])), 1),
            "truths_the_detector_calls_loops": sum(r["truth_trips_detector"] for r in rows),
            "units": {r["kind"]: r["unit"] for r in rows if r["kind"]}}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from tests.vllm_cpu.server import SERVED_MODEL_NAME

    parser = argparse.ArgumentParser(prog="python -m bench.flywheel.probe", description=__doc__)
    parser.add_argument("--url", required=True, help="the served model's /v1 URL")
    parser.add_argument("--model", default=SERVED_MODEL_NAME, help="its served name")
    parser.add_argument("--pages", type=int, default=32, help="pages per candidate")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--only", nargs="+", choices=[*LAYOUTS, *LOOKS], default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/folio-flywheel-probe"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or [*LAYOUTS, *LOOKS]
    found = probe(args.url, args.model, args.pages, args.seed, names, args.out)
    for name, row in sorted(found.items(), key=lambda item: -item[1]["loops"]):
        print(f"{name:18} {row['loops']:3}/{row['pages']:<3} {row['kinds']} cer {row['cer']}")
    result = {"pages_per_candidate": args.pages, "seed": args.seed, "candidates": found}
    (args.out / "flywheel_probe.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
