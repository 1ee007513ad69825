"""Reading documents from an object store against reading them from local disk.

Run `python -m bench storage [--quick]`. The same PDFs (born-digital, ~3 KB, and scanned,
~280 KB for 3 pages) are read through Folio's storage seam three ways, in interleaved rounds
(the median round is reported), on one thread:

- `local`: `FolderStore.read` of the files on this disk (what `folio run` on a folder costs);
- `store, cold`: `DocumentCache.local_path` from an S3 API server (moto's server mode, a
  subprocess on loopback): GET with If-Match, SHA-256 while streaming, write, rename;
- `store, warm`: the same call once the copy is cached (every later page of a document);

and, for scale, `render`: rendering a page at 200 DPI from the local file, the work a page
does next whatever it was read from. moto is an in-memory Python server on loopback: its
figures are a lower bound of what a real store's round trip costs per object (S3 adds tens of
milliseconds to the first byte, and gives far more bandwidth across parallel readers).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from app.pdf import samples
from app.pdf.render import render_page
from app.storage import DocumentCache, StoredObject, Stores
from app.storage.folder import FolderStore
from app.storage.options import CacheOptions
from bench.environment import describe, machine_info, write_results

BUCKET = "folio-bench"


def _documents(folder: Path, count: int) -> dict[str, list[Path]]:
    """`count` born-digital and `count` scanned PDFs of 3 pages each."""
    kinds: dict[str, list[Path]] = {"born-digital": [], "scanned": []}
    for n in range(count):
        texts = [samples.page_text(n * 3 + p) for p in range(3)]
        for kind, data in (
            ("born-digital", samples.born_digital_pdf(texts)),
            ("scanned", samples.scanned_pdf(texts, seed=n)),
        ):
            path = folder / f"{kind}-{n:03d}.pdf"
            path.write_bytes(data)
            kinds[kind].append(path)
    return kinds


class _MotoServer:
    """moto's S3 server as a subprocess on a free loopback port."""

    def __init__(self) -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _read_local(paths: list[Path]) -> int:
    store, total = FolderStore(), 0
    for path in paths:
        sink = io.BytesIO()
        store.read(StoredObject(str(path), 0), sink, 2**31)
        total += len(hashlib.sha256(sink.getvalue()).hexdigest())
    return total


def _fetch_all(cache: DocumentCache, listed: list[StoredObject]) -> list[Path]:
    return [cache.local_path(stored) for stored in listed]


def _timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def measure(
    paths: list[Path], listed: list[StoredObject], cache_root: Path, rounds: int
) -> dict[str, Any]:
    """Median seconds per round of each arm over the same documents."""
    stores = Stores()
    size = sum(p.stat().st_size for p in paths)
    times: dict[str, list[float]] = {"local": [], "store, cold": [], "store, warm": []}
    times["render"] = []
    for round_ in range(rounds):
        times["local"].append(_timed(lambda: _read_local(paths)))
        cache = DocumentCache(stores, CacheOptions(cache_root / f"r{round_}", 2**34, 2**31))
        fetch_all = partial(_fetch_all, cache, listed)
        times["store, cold"].append(_timed(fetch_all))
        times["store, warm"].append(_timed(fetch_all))
        times["render"].append(_timed(lambda: [render_page(p, 1, 200, 2400) for p in paths]))
    local = statistics.median(times["local"])
    arms: dict[str, Any] = {}
    for arm, seconds in times.items():
        median = statistics.median(seconds)
        arms[arm] = {
            "seconds": round(median, 4),
            "ms_per_document": round(1000 * median / len(paths), 3),
            "mb_per_s": None if arm == "render" else round(size / 2**20 / median, 1),
            "times_local": round(median / local, 2),
        }
    return {"documents": len(paths), "bytes": size, "rounds": rounds, "arms": arms}


def run(count: int, rounds: int) -> dict[str, Any]:
    import boto3

    server = _MotoServer()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_ENDPOINT_URL"] = server.endpoint
    try:
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        report: dict[str, Any] = {"store": "moto server (loopback)", "kinds": {}}
        with tempfile.TemporaryDirectory(prefix="folio-bench-storage-") as tmp:
            for kind, paths in _documents(Path(tmp), count).items():
                listed = []
                for path in paths:
                    client.put_object(Bucket=BUCKET, Key=path.name, Body=path.read_bytes())
                    listed.append(Stores().for_uri("s3://").head(f"s3://{BUCKET}/{path.name}"))
                cache_root = Path(tmp) / f"cache-{kind}"
                report["kinds"][kind] = measure(paths, listed, cache_root, rounds)
        return report
    finally:
        server.stop()


def results_table(report: dict[str, Any]) -> Table:
    table = Table(title=f"Reading documents: {report['store']} vs local disk, 1 thread")
    for header in ("documents", "arm", "ms/document", "MB/s", "x local"):
        table.add_column(header, justify="right")
    for kind, row in report["kinds"].items():
        label = f"{row['documents']} {kind} ({row['bytes'] / row['documents'] / 1024:.0f} KB)"
        for arm, figures in row["arms"].items():
            table.add_row(
                label,
                arm,
                f"{figures['ms_per_document']:.2f}",
                "-" if figures["mb_per_s"] is None else f"{figures['mb_per_s']:.1f}",
                f"{figures['times_local']:.2f}",
            )
            label = ""
    return table


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench storage", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5 documents a kind, 3 rounds")
    parser.add_argument("--documents", type=int, help="documents of each kind")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (median reported)")
    args = parser.parse_args(argv)
    count = args.documents or (5 if args.quick else 30)
    rounds = args.rounds or (3 if args.quick else 5)
    console = Console()
    with console.status("reading ..."):
        report = run(count, rounds)
    report["machine"] = machine_info(packages=("boto3", "moto", "pymupdf"))
    console.print(f"[bold]Machine[/]: {describe(report['machine'])}")
    console.print(results_table(report))
    if not args.quick:
        console.print(f"Results written to {write_results('storage', report)}")
    return report


if __name__ == "__main__":
    main()
