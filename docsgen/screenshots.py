"""Screenshots of the HTML report, taken in headless Chromium (`python -m docsgen screenshots`,
or `make docs-screenshots`): the report of a committed benchmark batch (arm A of the tax
validation: 40 pages, 4 of them looping to the cap, on the vLLM CPU server) rendered by
`folio report --format html`'s renderer, then shot as the browser shows it.

Needs `chromium` on PATH (`apt-get install -y chromium`); the flags are the ones the HTML
report's own test uses on these machines (no sandbox as root, no background networking)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

from app.report.render_html import render_html
from docsgen.runs import committed_batches

IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
WIDTH = 1000
SHOTS = {"report-top.png": 1100, "report-full.png": 4000}  # window heights


class ChromiumMissing(RuntimeError):
    """No `chromium` binary to take the screenshots with."""


def take_all(images: Path = IMAGES) -> list[Path]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise ChromiumMissing("chromium is not installed (apt-get install -y chromium)")
    batch = committed_batches(("A",))["A"]
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(render_html(batch.report()), encoding="utf-8")
        for name, height in SHOTS.items():
            target = images / name
            _shoot(browser, page, target, height, Path(tmp) / "profile")
            _trim(target)
            written.append(target)
    return written


def _shoot(browser: str, page: Path, target: Path, height: int, profile: Path) -> None:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{height}",
        f"--screenshot={target}",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0 or not target.exists():
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-1500:]}")


def _trim(target: Path) -> None:
    """Cut the blank page below the report's last line, and keep the file small."""
    with Image.open(target) as shot:
        image = shot.convert("RGB")
    background = Image.new("RGB", image.size, (255, 255, 255))
    box = ImageChops.difference(image, background).getbbox()
    if box:
        image = image.crop((0, 0, image.width, min(image.height, box[3] + 24)))
    image.quantize(colors=64).save(target, optimize=True)
