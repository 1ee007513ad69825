"""The console in a real browser: Debian's headless Chromium driven over the DevTools protocol
(tests/cdp.py) against a real `folio serve` app (uvicorn, SQLite, the in-process executor)
whose VLM is the scripted stand-in (bench/vllm_standin), so loops come from Folio's own
detector on a real stream. Each page is also checked with axe-core (from the npm registry,
kept under ~/.cache/folio) for serious or critical accessibility violations.

Screenshots go to $FOLIO_TEST_CONSOLE_SHOTS when set (docs/images holds the ones the docs show),
to the test's temporary folder otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.pdf import samples
from app.settings import PlanStep, Settings
from bench.false_alarms.pages import loop_once
from bench.vllm_standin.scripted import ScriptedAnswer, StandIn, serving
from tests.api_server import Api, running_api
from tests.cdp import Page, chromium
from tests.conftest import unavailable
from tests.test_api import settings_for as api_settings
from tests.test_false_alarms import settings_for as vlm_settings

AXE_VERSION = "4.14.1"
AXE_DIR = Path.home() / ".cache" / "folio" / f"axe-core-{AXE_VERSION}"
BAD_IMPACTS = ("serious", "critical")


def browser_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        unavailable("chromium is not installed (apt-get install -y chromium)")
    assert found
    return found


@pytest.fixture(scope="module")
def axe_source(tmp_path_factory: pytest.TempPathFactory) -> str:
    """axe-core's script, installed from the npm registry into a cache folder once (into a
    fresh folder first, then renamed: a second run beside it never sees half an install)."""
    script = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            unavailable("npm is not installed (axe-core comes from the npm registry)")
        AXE_DIR.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix="axe-core-", dir=AXE_DIR.parent))
        command = [str(npm), "install", "--no-audit", "--no-fund", f"axe-core@{AXE_VERSION}"]
        subprocess.run(command, cwd=fresh, check=True, capture_output=True, timeout=300)
        try:
            fresh.rename(AXE_DIR)
        except OSError:  # another run installed it first
            shutil.rmtree(fresh, ignore_errors=True)
    return script.read_text(encoding="utf-8")


def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("FOLIO_TEST_CONSOLE_SHOTS") or tmp_path / "shots")


def steps() -> dict[str, list[PlanStep]]:
    """The ledger loops on the greedy first read; the retry reads it healthily."""
    first = PlanStep(name="greedy", engine="vlm", endpoint="primary", temperature=0.0)
    retry = PlanStep(name="retry", engine="vlm", endpoint="primary", temperature=0.2)
    return {"vlm": [first, retry]}


# Token prices for the stand-in's endpoint, so pages and attempts show a cost (example
# prices, not any provider's).
PRICES = {"usd_per_m_input": 0.5, "usd_per_m_output": 2.0}


def settings(sqlite_url: str, tmp_path: Path, stand_in: StandIn) -> Settings:
    vlm = vlm_settings(sqlite_url, stand_in.base_url)
    endpoints = {n: e.model_copy(update=PRICES) for n, e in vlm.vlm_endpoints.items()}
    return api_settings(
        sqlite_url,
        tmp_path,
        engine="vlm",
        plans=steps(),
        vlm_endpoints=endpoints,
        detector=vlm.detector,
    )


def pdfs(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, seed in (("ledger-a.pdf", 1), ("ledger-b.pdf", 2)):
        path = folder / name
        path.write_bytes(samples.born_digital_pdf([samples.page_text(seed)]))
        files.append(path)
    return files


def check_accessibility(page: Page, axe: str, where: str) -> None:
    """No serious or critical axe-core violation on the page as it is now."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe + ";true")
    found = page.evaluate(
        "axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify("
        "r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length}))))"
    )
    bad = [v for v in json.loads(found) if v["impact"] in BAD_IMPACTS]
    assert not bad, f"{where}: {bad}"


def sign_in(page: Page, api: Api, token: str) -> None:
    page.open(f"{api.base_url}/console/jobs")  # leads to the sign-in page
    assert page.evaluate("location.pathname") == "/console/sign-in"
    page.evaluate(f"document.getElementById('token').value = {json.dumps(token)}")
    page.click("form button[type=submit]")
    assert page.evaluate("location.pathname") == "/console/jobs"


@pytest.fixture
def looping_api(sqlite_url: str, tmp_path: Path) -> Iterator[Api]:
    with (
        serving(loop_once) as stand_in,
        running_api(settings(sqlite_url, tmp_path, stand_in)) as api,
    ):
        yield api


def test_sign_in_upload_watch_a_loop_and_be_refused_another_keys_job(
    looping_api: Api, tmp_path: Path, axe_source: str
) -> None:
    api, out = looping_api, shots(tmp_path)
    alice, bob = api.key("alice"), api.key("bob")
    with chromium(browser_binary(), tmp_path / "profile") as page:
        page.open(f"{api.base_url}/console/sign-in")
        check_accessibility(page, axe_source, "sign-in")
        page.screenshot(out / "console-sign-in.png")
        sign_in(page, api, alice)
        assert "folio_console" not in page.evaluate("document.cookie")  # HttpOnly

        page.click("nav a[href='/console/submit']")
        check_accessibility(page, axe_source, "submit")
        page.set_files("#files", pdfs(tmp_path / "in"))
        page.click("#submit-form button[type=submit]")
        assert page.evaluate("location.pathname").startswith("/console/jobs/")
        job_url = page.evaluate("location.href")
        # Watched to its end without reloading: a mark left on this document stays there.
        page.evaluate("window.__sameDocument = true")
        page.wait_for("document.body.dataset.jobEnded === 'true'")
        assert page.evaluate("window.__sameDocument === true")
        assert page.evaluate("document.getElementById('job-status').textContent") == "done"
        assert page.evaluate("document.getElementById('pages-done').textContent") == "2"
        check_accessibility(page, axe_source, "job")
        page.screenshot(out / "console-job.png")

        page.open(f"{job_url}/pages?sort=cost&descending=true")
        assert page.evaluate("document.querySelectorAll('#pages-table tbody tr').length") == 2
        check_accessibility(page, axe_source, "pages table")
        page.open(job_url)
        page.click("#pages-table tr.looped a")
        unit = page.evaluate("document.querySelector('mark.loop-start').textContent")
        assert "Payment received, invoice 1187" in unit
        detail = page.evaluate(
            "fetch(location.pathname + '.json').then(r => r.json()).then(d => d.page)"
        )
        looped = [a for a in detail["attempts"] if a["status"] == "degenerate"]
        assert looped and looped[0]["loop_unit"] == unit
        assert all(a["cost_usd"] > 0 for a in detail["attempts"])
        image = "document.querySelector('.page-image img')"
        assert page.wait_for(f"{image}.complete && {image}.naturalWidth") == 640  # as shown
        check_accessibility(page, axe_source, "page")
        page.evaluate("document.querySelector('mark.loop-start').scrollIntoView()")
        page.screenshot(out / "console-page.png")

        page.open(f"{api.base_url}/console/jobs")
        check_accessibility(page, axe_source, "jobs")
        page.screenshot(out / "console-jobs.png")

        page.click("header form button[type=submit]")  # sign out
        assert page.evaluate("location.pathname") == "/console/sign-in"
        sign_in(page, api, bob)
        page.open(job_url)
        assert page.evaluate("document.querySelector('h1').textContent") == "404 Not Found"
        check_accessibility(page, axe_source, "error")
        assert page.evaluate("document.querySelectorAll('#jobs-table').length") == 0


class HeldAnswers:
    """Answers that wait until released: the job's page stays running until then."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> ScriptedAnswer:
        self.release.wait(300)
        return ScriptedAnswer("# Released\n\nA page read after the test let it go.\n")


def test_cancel_a_running_job(sqlite_url: str, tmp_path: Path, axe_source: str) -> None:
    held = HeldAnswers()
    with serving(held) as stand_in:
        try:
            with running_api(settings(sqlite_url, tmp_path, stand_in)) as api:
                token = api.key("alice")
                client = api.client(token)
                [path, _] = pdfs(tmp_path / "in")
                files = [("files", (path.name, path.read_bytes(), "application/pdf"))]
                job_id = client.post("/v1/jobs", files=files).json()["id"]
                with chromium(browser_binary(), tmp_path / "profile") as page:
                    sign_in(page, api, token)
                    page.open(f"{api.base_url}/console/jobs/{job_id}")
                    page.wait_for(
                        "fetch('/console/jobs.json').then(r => r.json())"
                        ".then(d => d.jobs.items[0].status === 'running')"
                    )
                    page.click("#cancel-form button")
                    status = page.evaluate("document.getElementById('job-status').textContent")
                    assert status == "cancelled"
                    assert page.evaluate("document.querySelectorAll('#cancel-form').length") == 0
                    check_accessibility(page, axe_source, "cancelled job")
                assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        finally:
            held.release.set()
