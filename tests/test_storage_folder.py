"""A local folder as a store of the product, through the same `ObjectStore` interface as a
bucket: listing, reading as listed, writing bytes and files, and `folio run` from a `file://`
source into a `file://` results folder, with a rerun that skips what is done."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import exit_codes
from app.cli.main import app
from app.errors import ObjectRefused
from app.storage import Stores
from app.storage.listing import listed_pages
from app.storage.targets import result_target
from tests.distributed_support import page_text, write_text_pdfs


def test_a_folder_is_listed_read_and_written_through_the_store_interface(tmp_path: Path) -> None:
    write_text_pdfs(tmp_path / "in" / "sub", documents=3, pages=1)
    (tmp_path / "in" / "notes.txt").write_text("not a PDF")
    store = Stores().for_uri(f"file://{tmp_path}/in")  # no S3 client is made for it
    pages = list(store.list_pages(f"file://{tmp_path}/in", page_size=2))
    assert [len(p) for p in pages] == [2, 1]
    first = pages[0][0]
    assert first.uri == str(tmp_path / "in" / "sub" / "doc01.pdf") and first.etag
    one = list(store.list_pages(str(tmp_path / "in" / "sub" / "doc02.pdf"), page_size=10))
    assert [o.uri for p in one for o in p] == [str(tmp_path / "in" / "sub" / "doc02.pdf")]

    copy = io.BytesIO()
    store.read(first, copy, 2**20)
    assert copy.getvalue() == Path(first.uri).read_bytes()
    with pytest.raises(ObjectRefused) as refused:
        store.read(first, io.BytesIO(), 10)
    assert refused.value.category == "too_large"
    Path(first.uri).write_bytes(b"%PDF-1.4 replaced")
    os.utime(first.uri, ns=(1, 1))  # a new mtime even on a coarse clock
    with pytest.raises(ObjectRefused) as refused:
        store.read(first, io.BytesIO(), 2**20)
    assert refused.value.category == "object_changed"
    with pytest.raises(ObjectRefused) as refused:
        store.head(f"file://{tmp_path}/in/missing.pdf")
    assert refused.value.category == "object_missing"

    written = store.write_file(f"file://{tmp_path}/up/a.pdf", tmp_path / "in/notes.txt", "x/y")
    assert Path(written.uri).read_text() == "not a PDF" and written.size == 9
    target = result_target(f"file://{tmp_path}/results", Stores())
    assert target.read("a.md", 100) is None
    target.put("a.md", b"# a", "text/markdown")
    assert target.read("a.md", 100) == b"# a" and target.read("a.md", 2) is None
    assert (tmp_path / "results" / "a.md").read_bytes() == b"# a"


def test_a_folder_source_is_listed_like_a_bucket_with_the_same_rules(tmp_path: Path) -> None:
    write_text_pdfs(tmp_path / "in", documents=2, pages=1)
    listed = [o.uri for page in listed_pages(Stores(), f"file://{tmp_path}/in", 1) for o in page]
    assert listed == [str(tmp_path / "in" / f"doc0{n}.pdf") for n in (1, 2)]


def test_folio_run_from_a_file_uri_into_a_file_uri_and_the_rerun_skips(
    tmp_path: Path, sqlite_url: str
) -> None:
    write_text_pdfs(tmp_path / "in" / "a", documents=2, pages=2)
    env = {"FOLIO_DATABASE_URL": sqlite_url, "COLUMNS": "160"}
    args = ["run", f"file://{tmp_path}/in", "--out", f"file://{tmp_path}/out"]
    args += ["--engine", "textlayer"]
    runner = CliRunner()
    first = runner.invoke(app, [*args], env=env)
    assert first.exit_code == exit_codes.OK, first.output
    out = tmp_path / "out"
    assert page_text(2, 2) in (out / "a__doc02.md").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["source"] == str(tmp_path / "in") and summary["pages_succeeded"] == 4
    again = runner.invoke(app, [*args], env=env)
    assert again.exit_code == exit_codes.OK, again.output
    assert "Nothing to do: 2 documents already done" in again.output


def test_two_files_of_one_flat_name_keep_both_results(tmp_path: Path, sqlite_url: str) -> None:
    write_text_pdfs(tmp_path / "in" / "a", documents=1, pages=1)  # a/doc01.pdf
    write_text_pdfs(tmp_path / "other", documents=2, pages=1)
    (tmp_path / "other" / "doc02.pdf").rename(tmp_path / "in" / "a__doc01.pdf")
    env = {"FOLIO_DATABASE_URL": sqlite_url, "COLUMNS": "160"}
    args = ["run", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--engine", "textlayer"]
    done = CliRunner().invoke(app, args, env=env)
    assert done.exit_code == exit_codes.OK, done.output
    assert page_text(1, 1) in (tmp_path / "out" / "a__doc01.md").read_text()
    assert page_text(2, 1) in (tmp_path / "out" / "a__doc01-2.md").read_text()
