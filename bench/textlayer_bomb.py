"""The text-layer bomb (issue 62, defect 4): time and memory of reading one hostile page the
way a worker reads it, on this tree and on another (the tree before the fix).

Run `python -m bench textlayer-bomb [--before PATH] [--timeout S]`, under `nice`. Each page
is read in a fresh process whose PYTHONPATH is the tree measured, in the worker's order:
`read_page` (the page's text for its engines), then the stages of `judge_layer` (the
text-layer step: the layout, the gate, the tables, the Markdown, the words), between which a
stopped page now stops. Each stage's time is printed as it ends, so a process killed at
`--timeout` still says how far it got; its peak memory is the kernel's high-water mark
(VmHWM, read while it runs, and its own at each stage's end). The machine's load is stored
with the figures: they are wall times on a shared machine, not a timing test (the tests
count caps, never seconds).

Pages (generated here, tests/hostile_pages.py):
- `22 KB`: 106,000 invisible overlapping lines, the review's bomb (19 KB as written here);
- `87 KB`: 500,000 such lines (about 87 KB);
- `under the caps`: 19,000 visible lines of math-like text spread over the page, just under
  the default line cap: the most a page can make Folio read, stage by stage (how long a
  cancel or a time budget waits at most for the stage in hand).

And the price on every page: `read_page` over the shared corpus' pages (CPU seconds), as the
text a reader sees costs more to read than MuPDF's plain text.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.environment import REPO, describe, machine_info, shared_dir, write_results

LINE = "Total due: 12.50 EUR"
# The child: one page read as a worker reads it, each stage's end printed as JSON.
CHILD = """
import json, resource, sys, time
from pathlib import Path
from dataclasses import replace
from app.pdf.render import read_page, read_page_layout, read_page_tables, read_page_words
from app.textlayer import GateConfig, page_markdown, rejection
path = Path(sys.argv[1])
def stage(name, run):
    started, cpu = time.perf_counter(), time.process_time()
    try:
        result = run()
        error = None
    except Exception as exc:
        result, error = None, f"{type(exc).__name__}: {exc}"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"stage": name, "s": round(time.perf_counter() - started, 2),
                      "cpu_s": round(time.process_time() - cpu, 2),
                      "rss_kib": rss, "error": error}), flush=True)
    return result
outline = stage("read_page", lambda: read_page(path, 1, 200, 2400))
if outline is not None and outline.text_layer.strip():  # judge_layer's stages, one by one
    layout = stage("layout", lambda: read_page_layout(path, 1))
    if layout is not None:
        stage("gate", lambda: rejection(layout, GateConfig(("eng",))))
        tables = stage("tables", lambda: read_page_tables(path, 1))
        stage("markdown", lambda: page_markdown(replace(layout, tables=tables or [])))
    stage("words", lambda: read_page_words(path, 1))
"""


# The price on every page: `read_page` on each page of the shared corpus, CPU seconds in all.
CORPUS = """
import glob, json, sys, time
from pathlib import Path
from app.pdf.render import read_page
paths = sorted(glob.glob(sys.argv[1] + "/**/*.pdf", recursive=True))
import pymupdf
pages, cpu = 0, 0.0
for path in paths:
    count = pymupdf.open(path).page_count
    started = time.process_time()
    for number in range(1, count + 1):
        read_page(Path(path), number, 200, 2400)
    cpu += time.process_time() - started
    pages += count
print(json.dumps({"pages": pages, "cpu_s": round(cpu, 2)}))
"""


def corpus_cost(tree: Path) -> dict[str, Any] | None:
    """CPU seconds `read_page` takes over the shared corpus' pages on `tree` (None without it)."""
    corpus = shared_dir() / "corpus"
    if not corpus.is_dir():
        return None
    env = dict(os.environ, PYTHONPATH=str(tree))
    found = subprocess.run(
        [sys.executable, "-c", CORPUS, str(corpus)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    cost: dict[str, Any] = json.loads(found.stdout.splitlines()[-1])
    cost["ms_per_page"] = round(1000 * cost["cpu_s"] / max(1, cost["pages"]), 1)
    return cost


def pages(folder: Path) -> dict[str, Path]:
    sys.path.insert(0, str(REPO))
    from tests.hostile_pages import repeated_line_pdf

    made = {
        "22 KB": repeated_line_pdf(106_000, LINE),
        "87 KB": repeated_line_pdf(500_000, LINE),
        "under the caps": _spread_pdf(19_000),
    }
    paths = {}
    for name, data in made.items():
        paths[name] = folder / (name.replace(" ", "-") + ".pdf")
        paths[name].write_bytes(data)
    return paths


def _spread_pdf(lines: int) -> bytes:
    from tests.hostile_pages import _page_with_stream

    one = b"1 0 0 1 %d %d Tm (x = y + 1.) Tj\n"
    body = b"".join(one % (72 + (n % 7) * 70, 40 + (n // 7) % 700) for n in range(lines))
    return _page_with_stream(b"BT /helv 11 Tf 0 Tr\n" + body + b"ET\n", "x = y + 1.")


def read_in_child(tree: Path, pdf: Path, timeout_s: float, memory_gb: float) -> dict[str, Any]:
    """One page read by a fresh process on `tree`: its stages, wall time, peak RSS."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    limit = int(memory_gb * 2**30)

    def cap_memory() -> None:  # the machine is shared: a runaway read stops at the cap
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.perf_counter()
    peak_kib, cpu_s, finished = 0, 0.0, False
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(pdf)],
        env=env,
        cwd=tree,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=cap_memory,
    ) as child:
        while True:
            try:
                out, _ = child.communicate(timeout=0.5)
                finished = child.returncode == 0
                break
            except subprocess.TimeoutExpired:
                peak_kib = max(peak_kib, _high_water_kib(child.pid))
                cpu_s = max(cpu_s, _cpu_s(child.pid))
                if time.perf_counter() - started > timeout_s:
                    child.kill()
                    out, _ = child.communicate()
                    break
    stages = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    peak_kib = max([peak_kib, *(stage["rss_kib"] for stage in stages)])
    return {
        "finished": finished,
        "wall_s": round(time.perf_counter() - started, 1),
        "peak_rss_mib": round(peak_kib / 1024),
        # CPU the process had used when last looked at (a killed one's, at its end)
        "cpu_s_seen": round(cpu_s, 1),
        "stages": stages,
        "exit": child.returncode,
    }


def _cpu_s(pid: int) -> float:
    """The process's CPU seconds so far (user and system, /proc/PID/stat), 0 where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _high_water_kib(pid: int) -> int:
    """The process's peak resident memory so far (Linux's VmHWM), 0 where unreadable."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(found[0]) if found else 0


def _commit(tree: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() or "?"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench textlayer-bomb")
    parser.add_argument("--before", type=Path, help="a checkout of the tree before the fix")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds a page may take")
    parser.add_argument("--memory-gb", type=float, default=4.0, help="address-space cap")
    parser.add_argument("--quick", action="store_true", help="the 22 KB page only")
    parser.add_argument("--no-write", action="store_true", help="print, do not store")
    args = parser.parse_args(argv)
    info = machine_info()
    print(describe(info))
    trees = {"after": REPO} | ({"before": args.before} if args.before else {})
    report: dict[str, Any] = {"machine": info, "timeout_s": args.timeout, "trees": {}}
    with tempfile.TemporaryDirectory() as folder:
        made = pages(Path(folder))
        if args.quick:
            made = {"22 KB": made["22 KB"]}
        report["pages"] = {name: path.stat().st_size for name, path in made.items()}
        for label, tree in trees.items():
            runs = report["trees"][label] = {"commit": _commit(tree), "pages": {}}
            if not args.quick:
                runs["corpus"] = corpus_cost(tree)
                print(label, "corpus", json.dumps(runs["corpus"]), flush=True)
            for name, path in made.items():
                run = read_in_child(tree, path, args.timeout, args.memory_gb)
                runs["pages"][name] = run
                print(label, runs["commit"], name, json.dumps(run), flush=True)
    report["load_after"] = os.getloadavg()
    if not args.no_write:
        print(write_results("textlayer_bomb", report))
    return report
