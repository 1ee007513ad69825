"""Helpers for the distributed-mode tests: text PDFs, worker processes, a TCP proxy."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]


def page_text(document: int, page: int) -> str:
    return f"Document {document} page {page}: the quick brown fox jumps over the lazy dog."


def write_text_pdfs(folder: Path, documents: int, pages: int) -> int:
    """`documents` PDFs of `pages` small pages, each with a known text layer; pages written."""
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(1, documents + 1):
        pdf = pymupdf.open()
        for p in range(1, pages + 1):
            page = pdf.new_page(width=200, height=120)
            page.insert_text((10, 30), page_text(d, p), fontsize=5)
        pdf.save(folder / f"doc{d:02d}.pdf")
        pdf.close()
    return documents * pages


def worker_env(database_url: str, broker_url: str, prefix: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env.update(
        FOLIO_DATABASE_URL=database_url,
        FOLIO_BROKER_URL=broker_url,
        FOLIO_QUEUE_PREFIX=prefix,
        FOLIO_ENGINE="textlayer",
        FOLIO_DPI="36",
        FOLIO_CONFIG=str(ROOT / "absent-folio.toml"),
        # Tests run side by side on one machine: no fixed metrics port (the metrics test picks one).
        FOLIO_WORKER_METRICS_PORT="0",
    )
    env.update(extra)
    return env


def start_worker(
    env: dict[str, str], concurrency: int = 4, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """`folio worker --queues cpu,gpu` as a real process (it execs the Celery worker)."""
    command = [str(Path(sys.executable).parent / "folio"), "worker", "--queues", "cpu,gpu"]
    command += ["--concurrency", str(concurrency)]
    out = log.open("ab") if log else subprocess.DEVNULL
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def start_slow_worker(
    env: dict[str, str], delay_s: float, concurrency: int, log: Path
) -> subprocess.Popen[bytes]:
    """A real worker whose text-layer engine sleeps `delay_s` a page (tests/slow_worker.py)."""
    return start_test_worker({**env, "FOLIO_TEST_ENGINE_DELAY_S": str(delay_s)}, concurrency, log)


def start_gated_worker(
    env: dict[str, str],
    gate_after: int,
    gate: Path,
    concurrency: int,
    log: Path,
    release: Path | None = None,
) -> subprocess.Popen[bytes]:
    """A real worker that lets `gate_after` pages through, then holds every other page in flight
    (touching `gate`) until `release` exists; forever when `release` is None (tests/slow_worker.py).
    """
    gated = {**env, "FOLIO_TEST_GATE_AFTER": str(gate_after), "FOLIO_TEST_GATE_FILE": str(gate)}
    if release is not None:
        gated["FOLIO_TEST_RELEASE_FILE"] = str(release)
    return start_test_worker(gated, concurrency, log)


def start_test_worker(env: dict[str, str], concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    """`folio worker`'s Celery command line on both queues, with the test engine."""
    prefix = env["FOLIO_QUEUE_PREFIX"]
    command = [sys.executable, str(ROOT / "tests" / "slow_worker.py"), "worker"]
    command += ["-Q", f"{prefix}.cpu,{prefix}.gpu", "-P", "threads", "-c", str(concurrency)]
    command += ["-l", "INFO", "-n", f"slow-{uuid.uuid4().hex[:6]}@%h"]
    command += ["--without-gossip", "--without-mingle"]
    out = log.open("ab")
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    describe: Callable[[], str] = lambda: "",
) -> None:
    """Poll until `condition()`; a generous timeout only stops a hung test."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} {describe()}")
        time.sleep(0.1)


def unique_prefix() -> str:
    return f"folio-test-{uuid.uuid4().hex[:10]}"


class TcpProxy:
    """Forwards a local port to a target; `pause()` drops every connection and refuses new ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._server: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def pause(self) -> None:
        with self._lock:
            server, self._server = self._server, None
            conns, self._conns = self._conns, []
        if server:
            # shutdown wakes the thread blocked in accept(): a bare close would leave it to
            # take one more connection on Linux
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                readable, _, _ = select.select([a, b], [], [], 1.0)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):  # ValueError: pause() closed a socket under select()
            return
        finally:
            a.close()
            b.close()
