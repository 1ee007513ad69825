"""The HTML report opened in a real headless Chromium: it renders, logs no error, shows charts."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from app.report.compute import compute_report
from app.report.render_html import CHART_IDS, render_html
from tests.conftest import unavailable
from tests.report_scenario import PRICING, scenario_rows


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        unavailable("chromium is not installed (apt-get install -y chromium)")
    assert found
    return found


def test_the_page_is_self_contained_and_escapes_model_output() -> None:
    page = render_html(compute_report(scenario_rows(), PRICING))
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    assert "<b>loop" not in page and "&lt;b&gt;loop&lt;/b&gt; &amp;" in page
    assert page.count('class="attempt ') == 6 and page.count('class="attempt degenerate"') == 2


def test_chromium_renders_the_report(tmp_path: Path) -> None:
    browser = chromium()
    html = tmp_path / "report.html"
    html.write_text(render_html(compute_report(scenario_rows(), PRICING)), encoding="utf-8")
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        html.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert any('"folio-report-ok"' in line for line in console), done.stderr[-2000:]
    assert not [line for line in console if "Uncaught" in line or "folio-report-missing" in line]
    for chart in CHART_IDS:
        assert re.search(rf'<svg id="{chart}"', done.stdout), chart
    assert "&lt;b&gt;loop&lt;/b&gt;" in done.stdout
