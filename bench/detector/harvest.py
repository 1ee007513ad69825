"""The frozen detector on the harvested split (issue 50, part 3): false alarms per 1,000 real
healthy pages from sources collected after the freeze, before anything changes.

`python -m bench detector-harvest [--all] [--limit N]` judges every page of the harvested split
(`bench.healthy_corpus.harvest`) the three ways `detector-healthy` does (`stream`: the online
stop fed in pieces; `worker`: `score_output` on a page that ended by itself; `scan`:
`score_output` with nothing known of the finish), per source and pooled, with the detector's
code as it was at the freeze commit (`app/degeneration` read from git at `FREEZE_COMMIT`, not
from the working tree, so later changes to the detector do not move this figure), and writes
`bench/results/detector_harvest.json`: the freeze commit and whether the detector's code is
still what it was at that commit, each source's repository, commit, licence and pages (with
the documents they pair with), and every flagged page with its snippet. No threshold was set
on these pages: every source is held out as it is. With `--all` the sources rebuilt locally
(not committed) are judged too.
"""

import argparse
import importlib.util
import io
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import environment
from bench.healthy_corpus.harvest import HARVEST_MANIFEST, MIN_TEXT_CHARS, load_harvest
from bench.healthy_corpus.harvest_sources import FREEZE_COMMIT, FROZEN_PATH, HARVEST

REPO = Path(__file__).resolve().parents[2]
RESULTS_NAME = "detector_harvest"
METHODS = ("stream", "worker", "scan")  # as bench.detector.healthy, imported after the freeze
SCREENING = (
    "selected files only: outputs or transcriptions of real documents; files named for a "
    "unit test and normalised copies of another file's pages excluded by path; JSON never "
    "selected (SDK responses, coordinate dumps)",
    "a page whose text parses as JSON is dropped",
    f"a page with fewer than {MIN_TEXT_CHARS} characters other than white space is dropped",
    "a page whose text is that of an earlier page or of a healthy-corpus page is dropped",
    "a page embedding a file as base64 (a data URI) is dropped (added after reading the flags)",
)


class FrozenDetectorUnavailable(RuntimeError):
    """The frozen detector cannot be loaded: no git history holding the freeze commit, or the
    detector was already imported from the working tree in this process."""


def load_frozen_detector(repo: Path = REPO) -> Path:
    """Make `app.degeneration` the package as it was at `FREEZE_COMMIT`: its files are read
    from git into a temporary folder and imported under the package's own name (its modules
    import one another by that name and nothing else of `app`). Returns the folder."""
    name = FROZEN_PATH.replace("/", ".")
    if name in sys.modules:
        raise FrozenDetectorUnavailable(f"{name} is already imported from the working tree")
    try:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", FREEZE_COMMIT, FROZEN_PATH],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise FrozenDetectorUnavailable(f"no freeze commit {FREEZE_COMMIT} here") from error
    folder = Path(tempfile.mkdtemp(prefix="folio-frozen-detector-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    package = folder / FROZEN_PATH
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    import app

    app.degeneration = module
    return package


def freeze_state(loaded_from: Path | None, repo: Path = REPO) -> dict[str, Any]:
    """The freeze commit, which code judged the pages, and whether the working tree's detector
    still matches the freeze (None where git or the commit is not at hand)."""
    state: dict[str, Any] = {
        "commit": FREEZE_COMMIT,
        "path": FROZEN_PATH,
        "code_judged": "the freeze commit's" if loaded_from else "the working tree's",
    }
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, check=True
        )
        diff = subprocess.run(
            ["git", "-C", str(repo), "diff", "--stat", FREEZE_COMMIT, "--", FROZEN_PATH],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return {**state, "head": None, "working_tree_changes": None}
    changes = diff.stdout.decode().strip().splitlines()
    return {**state, "head": head.stdout.decode().strip(), "working_tree_changes": changes}


def provenance(pages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per source: repository, commit, licence, whether committed, what it is, and the pages
    judged here with the kinds of document they pair with."""
    rows = []
    for source in HARVEST:
        prefix = f"{source.repo}@{source.commit}:"
        mine = [page for page in pages if page["origin"].startswith(prefix)]
        inputs = [page["input"] for page in mine if page.get("input")]
        rows.append(
            {
                "repo": source.repo,
                "commit": source.commit,
                "licence": source.licence,
                "committed": source.redistributable,
                "note": source.note,
                "pages": len(mine),
                "producers": dict(Counter(page["producer"] for page in mine)),
                "paired": dict(Counter(record["kind"] for record in inputs)),
                "pdf_pages_numbered": sum(
                    1 for record in inputs if record["kind"] == "pdf" and record.get("page")
                ),
            }
        )
    return rows


def report_on(
    pages: Sequence[dict[str, Any]],
    verdicts: Sequence[dict[str, Any]],
    everything: bool,
    frozen: Path | None,
) -> dict[str, Any]:
    from bench.detector.healthy import false_alarm_rows, leave_one_source_out, speed

    heldout = leave_one_source_out(verdicts)
    flagged = [
        {
            "origin": verdict["origin"],
            "producer": verdict["producer"],
            "input": page.get("input"),
            **{method: verdict[method] for method in METHODS},
        }
        for page, verdict in zip(pages, verdicts, strict=True)
        if any(verdict[method] for method in METHODS)
    ]
    manifest = environment.read_results(HARVEST_MANIFEST.stem, HARVEST_MANIFEST.parent) or {}
    screened = manifest.get("screened_out") or {}
    embedded = sum(count for key, count in screened.items() if key.endswith(": embedded file"))
    pooled = heldout["pooled"]
    return {
        "freeze": freeze_state(frozen),
        "machine": environment.machine_info(),
        "split": "committed + rebuilt locally" if everything else "committed",
        "pages": len(pages),
        "sources": len({page["source"] for page in pages}),
        "headline": {
            "pages": len(pages),
            **{f"{m}_per_1000": heldout["pooled"][f"{m}_per_1000"] for m in METHODS},
            **{f"{m}_macro_per_1000": heldout["pooled"][f"{m}_macro_per_1000"] for m in METHODS},
            "flagged_pages": len(flagged),
        },
        "leave_one_source_out": heldout,
        "by_producer": false_alarm_rows(
            verdicts, lambda row: [f"{row['source']} / {row['producer']}"]
        ),
        "by_format": false_alarm_rows(verdicts, lambda row: row["tags"][:1]),
        "provenance": provenance(pages),
        "screening": {
            "rules": list(SCREENING),
            "screened_out": screened,
            # rule 5 came after reading the flags: its pages counted as flagged, the worst case
            "stream_per_1000_without_rule_5": round(
                1000 * (pooled["stream"] + embedded) / (pooled["pages"] + embedded), 2
            ),
        },
        "speed": speed(verdicts),
        "flagged": flagged,
    }


def print_report(report: dict[str, Any]) -> None:
    console = Console(width=150)
    freeze = report["freeze"]
    console.print(
        f"detector frozen at {freeze['commit'][:12]} ({freeze['path']}); judged with "
        f"{freeze['code_judged']} code; working tree since: {freeze['working_tree_changes']}"
    )
    table = Table(title=f"False alarms on the harvested split ({report['split']}), per source")
    for column in ("source", "pages", *METHODS, *(f"{m} /1000" for m in METHODS)):
        table.add_column(column, justify="left" if column == "source" else "right")
    heldout = report["leave_one_source_out"]
    for source, row in (heldout["per_source"] | {"POOLED": heldout["pooled"]}).items():
        table.add_row(
            source,
            str(row["pages"]),
            *(str(row[method]) for method in METHODS),
            *(str(row[f"{method}_per_1000"]) for method in METHODS),
        )
    console.print(table)
    for row in report["flagged"]:
        verdict = row["stream"] or row["worker"] or row["scan"]
        console.print(f"[bold]{row['origin']}[/bold] {verdict['kind']}: {verdict['snippet']!r}")


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    argv = [] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m bench detector-harvest")
    parser.add_argument(
        "--all", action="store_true", help="add the sources rebuilt locally (not committed)"
    )
    parser.add_argument("--limit", type=int, default=0, help="first N pages only (a smoke run)")
    parser.add_argument("--quick", action="store_true", help="the first 300 pages only")
    parser.add_argument(
        "--results-dir", type=Path, default=None, help="where to write (bench/results)"
    )
    parser.add_argument(
        "--working-tree",
        action="store_true",
        help="judge with the working tree's detector, not the freeze commit's",
    )
    args = parser.parse_args(argv)
    pages = load_harvest(everything=args.all)
    if not pages:
        print("no harvested split: build it with `python -m bench.healthy_corpus.harvest`")
        return None
    if args.limit or args.quick:
        pages = pages[: args.limit or 300]
    if not args.working_tree and FROZEN_PATH.replace("/", ".") in sys.modules:
        # a run of every bench imported the working tree's detector already: the frozen one
        # is loaded in a process of its own
        subprocess.run(
            [sys.executable, "-m", "bench", "detector-harvest", *argv], cwd=REPO, check=True
        )
        return environment.read_results(RESULTS_NAME, args.results_dir)
    try:
        frozen = None if args.working_tree else load_frozen_detector()
    except FrozenDetectorUnavailable as error:
        print(f"{error}: pass --working-tree to judge with the working tree's detector")
        return None
    from bench.detector.healthy import judge  # after the frozen detector is in place

    verdicts = [judge(page) for page in pages]
    report = report_on(pages, verdicts, args.all, frozen)
    print_report(report)
    environment.write_results(RESULTS_NAME, report, args.results_dir)
    return report
