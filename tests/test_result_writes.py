"""Results are written whole and checked before a rerun keeps them (issue 62, defect 5): each
file goes under a temporary name and is renamed into place, `summary.json` records each
one's size and SHA-256, a rerun rewrites a file cut short or changed since instead of calling
it done, and a full disk is a clear error that loses nothing already written. `folio run` on
a real SQLite database; the full disk is a real one (a small tmpfs) where this user may mount."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from tests.distributed_support import write_text_pdfs

runner = CliRunner()


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {"FOLIO_DATABASE_URL": sqlite_url, "FOLIO_ENGINE": "textlayer", "COLUMNS": "160"}


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def _all_whole(out: Path) -> None:
    """Every JSON file parses, and summary.json's sizes and digests are the files'."""
    summary = json.loads((out / "summary.json").read_text())
    recorded = {n: f for d in summary["documents"] for n, f in d["files"].items()}
    assert sorted(recorded) == sorted(p.name for p in out.iterdir() if p.name != "summary.json")
    for name, fact in recorded.items():
        data = (out / name).read_bytes()
        assert len(data) == fact["bytes"], name
        if name.endswith(".json"):
            json.loads(data)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_rerun_rewrites_results_cut_short_or_changed(tmp_path: Path, env: dict[str, str]) -> None:
    write_text_pdfs(tmp_path / "in", documents=3, pages=1)
    out = tmp_path / "out"
    args = ["run", str(tmp_path / "in"), "--out", str(out)]
    first = runner.invoke(app, args, env=env)
    assert first.exit_code == exit_codes.OK, first.output
    _all_whole(out)
    written = _files(out)
    (out / "doc01.json").write_bytes(written["doc01.json"][:40])  # what a full disk left
    (out / "doc02.md").write_bytes(written["doc02.md"] + b"\nedited by hand\n")

    again = runner.invoke(app, args, env=env)
    assert again.exit_code == exit_codes.OK, again.output
    _all_whole(out)
    assert (out / "doc02.md").read_bytes() == written["doc02.md"]
    assert (out / "doc03.md").read_bytes() == written["doc03.md"]  # whole: left as it was


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, mounted for the test; skipped where this user may not mount one."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> Path:
    """Take every free byte of `disk` with one file; it is returned to be removed later."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_full_disk_is_a_clear_error_that_loses_nothing(
    tmp_path: Path, env: dict[str, str], small_disk: Path
) -> None:
    write_text_pdfs(tmp_path / "in", documents=3, pages=1)
    out = small_disk / "out"
    args = ["run", str(tmp_path / "in"), "--out", str(out)]
    assert runner.invoke(app, args, env=env).exit_code == exit_codes.OK
    before = _files(out)

    filler = _fill(small_disk)  # the disk fills up; every document is done again
    full = runner.invoke(app, [*args, "--force"], env=env)
    assert full.exit_code == exit_codes.SOME_FAILED, full.output
    assert "No space left on device" in full.output and "Traceback" not in full.output
    assert _files(out) == before  # every file as it was, none cut short
    assert not [p for p in out.iterdir() if p.name.startswith(".")]

    filler.unlink()  # room again: a rerun writes what the full disk refused
    again = runner.invoke(app, args, env=env)
    assert again.exit_code == exit_codes.OK, again.output
    _all_whole(out)


def test_a_first_run_on_a_full_disk_is_not_called_done_later(
    tmp_path: Path, env: dict[str, str], small_disk: Path
) -> None:
    write_text_pdfs(tmp_path / "in", documents=3, pages=1)
    out = small_disk / "out"
    out.mkdir()
    filler = _fill(small_disk)
    args = ["run", str(tmp_path / "in"), "--out", str(out)]
    assert runner.invoke(app, args, env=env).exit_code == exit_codes.SOME_FAILED
    filler.unlink()
    again = runner.invoke(app, args, env=env)
    assert again.exit_code == exit_codes.OK, again.output
    _all_whole(out)
