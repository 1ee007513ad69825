"""The committed healthy corpus (issue 39): provenance, counts, chunking, and the held-out
false-alarm bench run on a slice of it. Reads only the committed file: no network."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

import pytest

from app.degeneration import ScoreConfig
from bench.detector import healthy as detector_healthy
from bench.healthy_corpus import build
from bench.healthy_corpus.chunking import MAX_CHARS, MIN_CHARS, page_chunks
from bench.healthy_corpus.corpus import COMMITTED, LOOPS, load_loops, read_pages
from bench.healthy_corpus.sources import PRODUCER_KINDS, SOURCES

ORIGIN = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{40}):(?P<path>\S.*)$")
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-3-Clause", "BSD-2-Clause", "CC-BY-4.0"}
FIELDS = {"id", "source", "producer", "origin", "chunk", "chunks", "licence", "format", "tags"}


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    if not COMMITTED.exists():
        pytest.skip(f"the healthy corpus is not committed at {COMMITTED}")
    return list(read_pages(COMMITTED))


def test_corpus_size_and_sources(pages: list[dict]) -> None:
    per_source = Counter(page["source"] for page in pages)
    assert len(pages) >= 3000
    assert len(per_source) >= 5
    # no one source is the corpus: leave-one-source-out needs several real folds
    assert max(per_source.values()) < 0.5 * len(pages)


def test_every_page_names_its_origin_and_licence(pages: list[dict]) -> None:
    pinned = {(source.repo, source.commit): source for source in SOURCES}
    for page in pages:
        assert page.keys() >= FIELDS
        match = ORIGIN.match(page["origin"])
        assert match, page["origin"]
        source = pinned[(match["repo"], match["commit"])]
        assert page["source"] == source.repo
        assert page["licence"] == source.licence
        assert page["licence"] in PERMISSIVE and page["redistributable"]
        assert 0 <= page["chunk"] < page["chunks"]
        assert page["text"].strip() and page["chars"] == len(page["text"])
        assert page["tags"][0] == page["format"]


def test_every_producer_has_a_kind(pages: list[dict]) -> None:
    assert {page["producer"] for page in pages} <= set(PRODUCER_KINDS)


def test_pages_are_distinct(pages: list[dict]) -> None:
    assert len({page["id"] for page in pages}) == len(pages)
    assert len({page["text"] for page in pages}) == len(pages)
    assert len({(page["origin"], page["chunk"]) for page in pages}) == len(pages)


def test_manifest_counts_match_the_corpus(pages: list[dict]) -> None:
    manifest = json.loads((build.DATA / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["pages_committed"] == len(pages)
    notices = (build.DATA / "LICENSES.md").read_text(encoding="utf-8")
    for source in {(page["source"], page["origin"].split(":", 1)[0]) for page in pages}:
        assert f"`{source[1]}:" in notices  # each committed source's licence file, at its commit
    for entry in manifest["sources"]:
        if entry["committed"]:
            prefix = f"{entry['repo']}@{entry['commit']}:"
            assert entry["pages"] == sum(1 for page in pages if page["origin"].startswith(prefix))


def test_chunks_cut_on_blocks_and_give_the_document_back() -> None:
    paragraphs = [f"Paragraph {n}. " + "word " * (40 + n % 7) for n in range(300)]
    document = "\n\n".join(paragraphs)
    chunks = page_chunks(document)
    assert "".join(chunks) == document
    assert all(chunk.endswith("\n\n") for chunk in chunks[:-1])
    assert all(MIN_CHARS <= len(chunk) <= MAX_CHARS + MIN_CHARS for chunk in chunks[:-1])
    marked = "page one\fpage two\f\fpage four"
    assert page_chunks(marked) == ["page one", "page two", "page four"]


def test_a_committed_loop_is_a_loop() -> None:
    if not LOOPS.exists():
        pytest.skip("no loops file committed")
    loops = load_loops()
    assert loops and all(page["loop"] for page in loops)
    recall = detector_healthy.loop_recall()
    assert recall is not None and recall["stream"]["caught"] == len(loops)


def test_heldout_bench_runs_on_a_slice(pages: list[dict]) -> None:
    by_source: dict[str, list[dict]] = {}
    for page in pages:
        by_source.setdefault(page["source"], []).append(page)
    chosen = sorted(by_source)[:3]
    sliced = [page for source in chosen for page in by_source[source][:12]]
    report, shapes = detector_healthy.evaluate(sliced, recall=1.0)
    heldout = report["leave_one_source_out"]
    assert set(heldout["per_source"]) == set(chosen)
    assert heldout["pooled"]["pages"] == len(sliced) == report["speed"]["pages"]
    flagged = {row["origin"] for row in report["flagged"]}
    assert len(flagged) == max(heldout["pooled"][method] for method in detector_healthy.METHODS)
    assert [rule["margin"] for rule in report["shape_rule_heldout"]] == list(
        detector_healthy.MARGINS
    )
    widest = shapes["lines.identical_lines_in_a_row"]
    assert set(widest) == {*chosen, "ALL"}
    assert widest["ALL"]["max"] == max(widest[source]["max"] for source in chosen)


def test_heldout_shape_rule_counts_what_other_sources_never_reach() -> None:
    pages = [{"source": "a"}, {"source": "a"}, {"source": "b"}, {"source": "c"}]
    measured = [{"run": 10.0}, {"run": 12.0}, {"run": 11.0}, {"run": 40.0}]
    rule = detector_healthy.heldout_shape_rule(pages, measured, margin=0.25)
    # c's 40 passes 1.25 x 12 (a's max); a's 12 stays under 1.25 x 40; b's 11 under 1.25 x 40
    assert rule["per_source"]["c"]["over"] == 1
    assert rule["per_source"]["a"]["over"] == 0 and rule["per_source"]["b"]["over"] == 0
    assert rule["pooled_per_1000"] == 250.0


def test_implied_precision() -> None:
    assert detector_healthy.implied_precision(0.0, 1.0) == 1.0
    # one false alarm per 1,000 healthy pages at a 2.42% loop rate, every loop caught
    assert detector_healthy.implied_precision(0.001, 1.0) == pytest.approx(0.9613, abs=1e-4)


def test_rebuild_reproduces_committed_pages(pages: list[dict]) -> None:
    """Where a mirror of a small source is at hand, its rebuild gives the committed records."""
    source = next(s for s in SOURCES if s.repo == "allenai/olmocr")
    try:
        rebuilt = [page for _, page in build.source_pages(build.DEFAULT_MIRRORS, source)]
    except build.MirrorMissing:
        pytest.skip(f"no mirror of {source.repo} under {build.DEFAULT_MIRRORS}")
    committed = {(p["origin"], p["chunk"]): p for p in pages if p["source"] == source.repo}
    assert committed
    for page in rebuilt:
        key = (page["origin"], page["chunk"])
        if key in committed:
            assert page == committed[key]
    assert committed.keys() <= {(p["origin"], p["chunk"]) for p in rebuilt}


def test_fitted_thresholds_are_judged_on_the_source_they_were_not_fitted_on(
    pages: list[dict],
) -> None:
    by_source: dict[str, list[dict]] = {}
    for page in pages:
        by_source.setdefault(page["source"], []).append(page)
    sliced = [page for source in sorted(by_source)[:3] for page in by_source[source][:6]]
    seen: list[set[str]] = []

    def fit(training: Sequence[dict]) -> ScoreConfig:
        seen.append({page["source"] for page in training})
        return ScoreConfig()  # the shipped defaults: the plain held-out figure must come back

    fitted = detector_healthy.leave_one_source_out_fitted(sliced, fit)
    plain = detector_healthy.leave_one_source_out([detector_healthy.judge(p) for p in sliced])
    assert len(seen) == 3 and all(len(sources) == 2 for sources in seen)
    for method in detector_healthy.METHODS:
        assert fitted["pooled"][method] == plain["pooled"][method]
