"""The harvested split (issue 50, part 3): its provenance and screening, the readers that take a
page's text out of layout XML, and the frozen detector's bench run on a few pages. Reads only
committed files; the bench run needs the git history that holds the freeze commit."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from bench import environment
from bench.detector import harvest as detector_harvest
from bench.detector.heldout import load_samples
from bench.healthy_corpus.harvest import (
    HARVEST_COMMITTED,
    HARVEST_LICENSES,
    HARVEST_MANIFEST,
    load_harvest,
    screened_out,
)
from bench.healthy_corpus.harvest_readers import alto_text, box_csv_text, page_xml_text
from bench.healthy_corpus.harvest_sources import FREEZE_COMMIT, HARVEST
from bench.healthy_corpus.sources import SOURCES

REPO = Path(__file__).resolve().parents[1]
ORIGIN = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{40}):(?P<path>\S.*)$")
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-3-Clause", "CC-BY-4.0", "CC0-1.0"}
RESULTS = REPO / "bench" / "results" / "detector_harvest.json"


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    if not HARVEST_COMMITTED.exists():
        pytest.skip(f"the harvested split is not committed at {HARVEST_COMMITTED}")
    return load_harvest()


def test_no_harvested_source_is_in_the_corpus() -> None:
    corpus = {source.repo for source in SOURCES}
    harvested = [source.repo for source in HARVEST]
    assert len(set(harvested)) == len(harvested) >= 8
    assert not corpus & set(harvested)


def test_no_harvested_source_is_a_dev_or_held_out_source() -> None:
    corpus = environment.shared_dir() / "corpus"
    samples = load_samples(corpus)
    if not samples:
        pytest.skip(f"no shared corpus at {corpus}")
    read = {sample.source.split("#", 1)[0] for sample in samples}
    assert read and not read & {source.repo for source in HARVEST}


def test_every_committed_page_names_its_pinned_origin_and_licence(pages: list[dict]) -> None:
    pinned = {(source.repo, source.commit): source for source in HARVEST}
    for page in pages:
        match = ORIGIN.match(page["origin"])
        assert match, page["origin"]
        source = pinned[(match["repo"], match["commit"])]
        assert page["licence"] == source.licence in PERMISSIVE
        assert page["redistributable"] and source.redistributable
        # the files of a selector kept out of the repository are not here
        kept_out = [s.pattern for s in source.selectors if not getattr(s, "committed", True)]
        assert not any(fnmatch.fnmatch(match["path"], pattern) for pattern in kept_out)
        assert page["chars"] == len(page["text"]) and not screened_out(page["text"])
        if page["input"] is not None:  # the document the page was read from, in that commit
            assert page["input"]["kind"] in {"pdf", "image", "file"}
            assert page["input"]["path"] != match["path"]
    assert len({page["text"] for page in pages}) == len(pages)


def test_manifest_counts_the_split_and_its_licences(pages: list[dict]) -> None:
    manifest = json.loads(HARVEST_MANIFEST.read_text(encoding="utf-8"))
    assert manifest["freeze_commit"] == FREEZE_COMMIT
    assert manifest["pages_committed"] == len(pages)
    counted = Counter(page["source"] for page in pages)
    notices = HARVEST_LICENSES.read_text(encoding="utf-8")
    for entry in manifest["sources"]:
        assert entry["pages_committed"] == counted[entry["repo"]]
        if entry["pages_committed"]:
            assert entry["committed"]
            assert f"`{entry['repo']}@{entry['commit']}:" in notices
    # the whole split (committed and rebuilt locally): the size
    assert manifest["pages"] >= 1000
    assert sum(1 for entry in manifest["sources"] if entry["pages"]) >= 8


def test_page_xml_follows_the_reading_order_and_skips_word_duplicates() -> None:
    raw = """<?xml version="1.0" encoding="UTF-8"?>
<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2013-07-15"><Page>
<ReadingOrder><OrderedGroup id="g">
<RegionRefIndexed index="1" regionRef="a"/><RegionRefIndexed index="0" regionRef="b"/>
</OrderedGroup></ReadingOrder>
<TextRegion id="a"><TextLine id="l1"><Word><TextEquiv><Unicode>Zweite</Unicode></TextEquiv>
</Word><TextEquiv><Unicode>Zweite Zeile</Unicode></TextEquiv></TextLine></TextRegion>
<TextRegion id="b"><TextLine id="l2"><TextEquiv><Unicode>Erſte Zeile</Unicode></TextEquiv>
</TextLine><TextLine id="l3"><TextEquiv><Unicode>und mehr</Unicode></TextEquiv></TextLine>
</TextRegion></Page></PcGts>""".encode()
    assert page_xml_text(raw) == "Erſte Zeile\nund mehr\n\nZweite Zeile"


def test_alto_and_box_files_give_their_lines() -> None:
    alto = b"""<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Layout><Page><PrintSpace>
<TextBlock><TextLine><String CONTENT="Procuration"/><SP/><String CONTENT="du 14"/></TextLine>
<TextLine><String CONTENT="Vente"/></TextLine></TextBlock>
<TextBlock><TextLine><String CONTENT="An 1830"/></TextLine></TextBlock>
</PrintSpace></Page></Layout></alto>"""
    assert alto_text(alto) == "Procuration du 14\nVente\n\nAn 1830"
    box = b"72,25,326,25,326,64,72,64,TAN WOON YANN\n50,82,440,82,440,121,50,121,NO.53 55,57\n"
    assert box_csv_text(box) == "TAN WOON YANN\nNO.53 55,57"


def test_screening_rules() -> None:
    prose = "A real page of text, long enough to be judged. " * 6
    assert screened_out(prose) == ""
    assert screened_out("Total 12.40\n" * 3) == "short"
    assert screened_out(json.dumps([{"text": prose, "bbox": [1, 2, 3, 4]}])) == "json"
    inlined = prose + "![](data:image/png;base64," + "QUJD" * 60 + ")"
    assert screened_out(inlined) == "embedded file"


def test_committed_result_is_the_frozen_figure() -> None:
    if not RESULTS.exists():
        pytest.skip("no committed detector_harvest.json")
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert report["freeze"]["commit"] == FREEZE_COMMIT
    assert report["freeze"]["code_judged"] == "the freeze commit's"
    assert report["pages"] >= 1000 and report["sources"] >= 8
    per_source = report["leave_one_source_out"]["per_source"]
    assert sum(row["pages"] for row in per_source.values()) == report["pages"]
    flagged = report["flagged"]
    assert report["headline"]["flagged_pages"] == len(flagged)
    assert len(flagged) >= report["leave_one_source_out"]["pooled"]["stream"]
    for row in flagged:
        verdict = row["stream"] or row["worker"] or row["scan"]
        assert verdict["snippet"].strip()


def _has_freeze_commit() -> bool:
    probe = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{FREEZE_COMMIT}^{{commit}}"],
        capture_output=True,
    )
    return probe.returncode == 0


def test_bench_judges_a_few_pages_with_the_frozen_detector(
    pages: list[dict], tmp_path: Path
) -> None:
    if not _has_freeze_commit():
        pytest.skip(f"the freeze commit {FREEZE_COMMIT} is not in this clone's history")
    # as in a run of every bench, the working tree's detector is imported already: the bench
    # loads the freeze commit's in a process of its own
    import app.degeneration  # noqa: F401

    report = detector_harvest.main(["--limit", "12", "--results-dir", str(tmp_path)])
    assert report is not None
    written = json.loads((tmp_path / f"{detector_harvest.RESULTS_NAME}.json").read_text())
    assert written == report
    assert report["pages"] == 12 and report["split"] == "committed"
    assert report["freeze"]["code_judged"] == "the freeze commit's"
    assert report["freeze"]["commit"] == FREEZE_COMMIT
    judged = {row["repo"]: row["pages"] for row in report["provenance"]}
    assert sum(judged.values()) == 12
    first = pages[0]["source"]
    assert judged[first] >= 1
