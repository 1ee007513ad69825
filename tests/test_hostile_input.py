"""Every document judged alone: no name, content or PDF structure fails more than its own
document, through the upload folder (`folio watch`), an API upload and `folio run`. The
inputs are generated here (tests/hostile_inputs.py); nothing hostile is committed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app as cli
from app.jobs.inbox_files import INCOMPLETE_LOOKS
from app.jobs.watch import MAX_BATCH_TRIES, Watcher
from app.settings import Settings
from tests.api_server import running_api, wait_for_job
from tests.hostile_inputs import corpus, cyclic_page_tree_pdf, good_pdf, lying_count_pdf
from tests.test_api import settings_for, submit

runner = CliRunner()


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {
        "FOLIO_DATABASE_URL": sqlite_url,
        "FOLIO_ENGINE": "textlayer",
        "FOLIO_CONCURRENCY": "1",
        "FOLIO_WATCH_POLL_S": "0.05",
        "FOLIO_MAX_PAGE_MEGAPIXELS": "0.5",
        "COLUMNS": "200",
    }


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def watch_once(inbox: Path, env: dict[str, str]) -> Any:
    return runner.invoke(cli, ["watch", str(inbox), "--once"], env=env)


def test_names_too_long_for_results_and_a_page_tree_cycle_fail_alone(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A 251-byte stem (its `.json` would be 256 bytes), a 245-byte failed file (its
    `.reason.txt` would be 256) and a PDF whose page tree is a cycle, beside good files."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    long_stem, long_junk = "s" * 251 + ".pdf", "f" * 245
    (inbox / "a.pdf").write_bytes(good_pdf(2, seed=1))
    (inbox / long_stem).write_bytes(good_pdf(1, seed=3))
    (inbox / long_junk).write_bytes(b"not a PDF")
    (inbox / "cycle.pdf").write_bytes(cyclic_page_tree_pdf())

    result = watch_once(inbox, env)

    assert result.exit_code == 0, result.output
    assert list((inbox / "processing").iterdir()) == []
    done, failed = files_in(inbox / "done"), files_in(inbox / "failed")
    assert "a.pdf" in done and len(done) == 2  # the long name too, cut to fit
    assert "cycle.pdf" in failed and "cycle.pdf.reason.txt" in failed
    assert "cycle in page tree" in (inbox / "failed" / "cycle.pdf.reason.txt").read_text()
    assert len(failed) == 4 and all(len(n.encode()) <= 255 for n in failed)
    (batch,) = (inbox / "outbox").iterdir()
    summary = json.loads((batch / "summary.json").read_text())
    assert (summary["documents_done"], summary["documents_failed"]) == (2, 2)
    assert summary["pages_succeeded"] == 3
    long_file = next(d["file"] for d in summary["documents"] if d["name"].startswith("sss"))
    assert "Section 3" in (batch / f"{long_file}.md").read_text()


def test_a_batch_that_keeps_failing_gives_its_files_up_and_the_watcher_goes_on(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Whatever makes a batch fail as a whole (here: its outbox is a file, so nothing can be
    written), the watcher stays up, tries it again, then moves its files to failed/."""
    settings = Settings(database_url=sqlite_url, engine="textlayer", watch_window_s=0)
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    outbox.write_text("in the way")
    watcher = Watcher(settings, _database(sqlite_url), inbox, outbox)
    (inbox / "a.pdf").write_bytes(good_pdf(1))
    assert watcher.tick() is None  # first look
    assert watcher.tick() is None  # the first try fails
    given_up = [o for _ in range(MAX_BATCH_TRIES) for o in watcher.retry()]
    assert len(given_up) == 1 and "a.pdf" in given_up[0].failed
    assert "failed to run" in (inbox / "failed" / "a.pdf.reason.txt").read_text()
    assert list((inbox / "processing").iterdir()) == []
    outbox.unlink()
    (inbox / "b.pdf").write_bytes(good_pdf(1, seed=2))
    assert watcher.tick() is None
    after = watcher.tick()
    assert after is not None and after.done == ["b.pdf"]


def _database(url: str) -> Any:
    from app.db.engine import Database

    return Database(url)


def test_a_page_tree_cycle_fails_its_document_not_the_upload(
    sqlite_url: str, tmp_path: Path
) -> None:
    with running_api(settings_for(sqlite_url, tmp_path)) as api:
        client = api.client(api.key("alice"))
        files = [("cycle.pdf", cyclic_page_tree_pdf()), ("count.pdf", lying_count_pdf())]
        response = submit(client, [*files, ("fine.pdf", good_pdf(1))])
        assert response.status_code == 202, response.text  # type: ignore[attr-defined]
        job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
        docs = {d["name"]: d for d in client.get(f"/v1/jobs/{job['id']}/documents").json()}
    assert job["pages"] == {"succeeded": 1}
    assert docs["fine"]["status"] == "done"
    for name in ("cycle", "count"):
        assert (docs[name]["status"], docs[name]["error_category"]) == ("failed", "corrupt")


def test_folio_run_over_a_folder_with_a_page_tree_cycle(
    tmp_path: Path, env: dict[str, str]
) -> None:
    folder, out = tmp_path / "docs", tmp_path / "out"
    folder.mkdir()
    (folder / "cycle.pdf").write_bytes(cyclic_page_tree_pdf())
    (folder / "good.pdf").write_bytes(good_pdf(2, seed=5))
    result = runner.invoke(cli, ["run", str(folder), "--out", str(out)], env=env)
    assert result.exit_code == exit_codes.SOME_FAILED, result.output
    assert "Section 5" in (out / "good.md").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["documents_failed"] == 1 and summary["pages_succeeded"] == 2


def _looks_unfinished(body: bytes) -> bool:
    return b"%PDF-" in body[:1024] and b"%%EOF" not in body[-1024:]


def _corpus(inbox: Path, outside: Path) -> tuple[dict[str, bytes], set[str]]:
    """The corpus (tests/hostile_inputs.py) dropped at once, with what only a folder holds: a
    name that is not UTF-8, a 245-byte name, links out of the inbox, and files left alone."""
    good, bad = corpus()
    for name, body in (good | bad).items():
        (inbox / name).write_bytes(body)
    (inbox / ("x" * 245)).write_bytes(b"junk with a 245-byte name")
    raw = os.fsencode(inbox) + b"/not-utf8-\xff\xfe.pdf"
    with open(raw, "wb") as handle:  # a name that is not UTF-8: taken, under a name that is
        handle.write(good_pdf(1, seed=30))
    good["not-utf8-__.pdf"] = b""
    secret = outside / "secret.pdf"
    secret.write_bytes(good_pdf(1, seed=31))
    (inbox / "link.pdf").symlink_to(secret)
    (inbox / "dangling.pdf").symlink_to(outside / "nowhere.pdf")
    (inbox / "dir-link.pdf").symlink_to(outside)
    (inbox / ".hidden.pdf").write_bytes(good_pdf(1))  # left alone
    (inbox / "copying.pdf.part").write_bytes(b"%PDF-1.7 half")  # left alone
    (inbox / "subfolder").mkdir()  # left alone
    return good, set(bad) | {"x" * 245, "link.pdf", "dangling.pdf", "dir-link.pdf"}


def test_a_hostile_corpus_dropped_at_once_into_the_upload_folder(
    tmp_path: Path, env: dict[str, str]
) -> None:
    inbox, outside = tmp_path / "in", tmp_path / "elsewhere"
    inbox.mkdir()
    outside.mkdir()
    good, bad = _corpus(inbox, outside)
    # Begins as a PDF, no %%EOF: a copy that may still be going on (see StableFiles).
    unfinished = {n for n, body in corpus()[1].items() if _looks_unfinished(body)}
    assert len(unfinished) >= 4

    result = watch_once(inbox, env)

    assert result.exit_code == 0, result.output  # the watcher came through it
    assert list((inbox / "processing").iterdir()) == []
    left = [n for n in files_in(inbox) if not n.startswith(".")]  # dot files stay too
    assert left == sorted({"copying.pdf.part"} | unfinished)  # not complete now: left
    (batch,) = (inbox / "outbox").iterdir()
    # A watcher that goes on takes them once they have held still long enough; they fail.
    settings = Settings(database_url=env["FOLIO_DATABASE_URL"], engine="textlayer")
    watcher = Watcher(settings, _database(env["FOLIO_DATABASE_URL"]), inbox, inbox / "outbox")
    later = [watcher.tick(close_window=True) for _ in range(INCOMPLETE_LOOKS + 1)]
    assert [o for o in later if o] and set(later[-1].failed) == unfinished  # type: ignore[union-attr]
    assert [n for n in files_in(inbox) if not n.startswith(".")] == ["copying.pdf.part"]
    done = set(files_in(inbox / "done"))
    entries = {p.name for p in (inbox / "failed").iterdir()}  # links as links
    failed = {n for n in entries if not n.endswith(".reason.txt")}
    assert len(done) == len(good) and len(failed) == len(bad), (done, failed)
    for name in failed:  # every bad one failed with a reason
        assert (inbox / "failed" / f"{name}.reason.txt").read_text().strip()
    assert "symbolic link" in (inbox / "failed" / "link.pdf.reason.txt").read_text()
    assert (outside / "secret.pdf").exists()  # a link is moved, never what it points to
    summary = json.loads((batch / "summary.json").read_text())
    assert summary["documents_done"] == len(good)
    # The 3 links never reach a job; the unfinished-looking ones are the second batch's.
    assert summary["documents_failed"] == len(bad) - 3 - len(unfinished)
    outputs = "".join(p.read_text() for p in batch.iterdir() if p.suffix in (".md", ".json"))
    assert "Section 31" not in outputs  # nothing read through the link
    files = {d["name"]: d["file"] for d in summary["documents"] if d["status"] == "done"}
    assert {"Summary", "summary-2", "report"} <= set(files)  # names unique in any case
    assert len(files) == len(good)
    assert not {"summary", "report"} & {f.lower() for f in files.values()}  # the job's own
    assert len({f.lower() for f in files.values()}) == len(files)  # no two share a file
    for name, file in files.items():  # each its own text, none clobbered by another's
        payload = json.loads((batch / f"{file}.json").read_text())
        assert payload["name"] == name
    report = json.loads((batch / "report.json").read_text())
    assert report["pages_total"] == summary["pages_total"]  # the job's report, not a PDF's


def test_the_hostile_corpus_submitted_to_the_api(sqlite_url: str, tmp_path: Path) -> None:
    good, bad = corpus()
    settings = settings_for(
        sqlite_url, tmp_path, api_max_files_per_job=100, api_max_pages_per_job=1000
    )
    with running_api(settings) as api:
        client = api.client(api.key("alice"))
        response = submit(client, list((good | bad).items()))
        assert response.status_code == 202, response.text  # type: ignore[attr-defined]
        job = wait_for_job(client, response.json()["id"])  # type: ignore[attr-defined]
        docs = client.get(f"/v1/jobs/{job['id']}/documents").json()
        download = client.get(f"/v1/jobs/{job['id']}/results")
    assert job["status"] == "done"
    done = [d for d in docs if d["status"] == "done"]
    failed = [d for d in docs if d["status"] == "failed"]
    assert (len(done), len(failed)) == (len(good), len(bad)), docs
    assert all(d["error_category"] and d["error"] for d in failed)
    assert download.status_code == 200


def test_the_hostile_corpus_run_from_a_bucket(
    s3_server: Any, bucket: str, tmp_path: Path, env: dict[str, str]
) -> None:
    good, bad = corpus()
    del good["line\nbreak.pdf"]  # S3 takes it, moto's server answers a 404 to the PUT
    s3: Any = s3_server.client()
    for name, body in (good | bad).items():
        s3.put_object(Bucket=bucket, Key=f"in/{name}", Body=body)
    s3.put_object(Bucket=bucket, Key="in-other/secret.pdf", Body=good_pdf(1, seed=31))
    args = ["run", f"s3://{bucket}/in", "--out", f"s3://{bucket}/out/"]
    result = runner.invoke(cli, args, env=dict(os.environ) | env)
    assert result.exit_code == exit_codes.SOME_FAILED, result.output
    summary = json.loads(s3.get_object(Bucket=bucket, Key="out/summary.json")["Body"].read())
    assert (summary["documents_done"], summary["documents_failed"]) == (len(good), len(bad))
    assert summary["documents_total"] == len(good) + len(bad)  # nothing of in-other/
    assert all(d["error_category"] for d in summary["documents"] if d["status"] == "failed")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/")["Contents"]]
    assert len(keys) == 2 * len(good) + 2  # .md and .json each, summary.json, report.json


def test_a_database_outage_never_gives_a_batch_up(sqlite_url: str, tmp_path: Path) -> None:
    """The database file taken away mid-way (SQLite cannot open it: an OperationalError, as a
    server that is down gives): the batch waits, however many looks, and runs once it is back."""
    database = Path(sqlite_url.removeprefix("sqlite:///"))
    settings = Settings(database_url=sqlite_url, engine="textlayer", watch_window_s=0)
    inbox = tmp_path / "in"
    inbox.mkdir()
    watcher = Watcher(settings, _database(sqlite_url), inbox, tmp_path / "out")
    (inbox / "a.pdf").write_bytes(good_pdf(1))
    assert watcher.tick() is None  # first look
    hidden = database.with_name("away")
    database.rename(hidden)
    database.mkdir()  # a folder where the file was: every connection fails
    try:
        assert watcher.tick() is None
        assert [o for _ in range(MAX_BATCH_TRIES + 2) for o in watcher.retry()] == []
        assert files_in(inbox / "failed") == []
    finally:
        database.rmdir()
        hidden.rename(database)
    (outcome,) = watcher.retry()
    assert outcome.done == ["a.pdf"]


def test_files_named_like_the_watchers_own_folders(tmp_path: Path, env: dict[str, str]) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    for n, name in enumerate(["processing", "done", "failed", "outbox", "a.pdf"]):
        (inbox / name).write_bytes(good_pdf(1, seed=60 + n))
    result = watch_once(inbox, env)  # the reserved names are renamed, then taken
    assert result.exit_code == 0, result.output
    assert len(files_in(inbox / "done")) == 5 and files_in(inbox / "failed") == []
    assert watch_once(inbox, env).exit_code == 0  # and the folder goes on
    assert all((inbox / n).is_dir() for n in ("processing", "done", "outbox"))
