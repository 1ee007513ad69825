"""Hostile HTTP servers on loopback, for the calls Folio makes to URLs a caller gave
(callbacks, pre-signed result PUTs): one that floods its reply, one that drips it a byte at a
time inside every read timeout, one that cuts it short. Each counts the bytes it managed to
send, so a test bounds what Folio read by counting, not by the memory it took.

Every arrival and end is logged in one shared sequence (`Log`), so a test can say in which
order two servers were answered without measuring time."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_CHUNK = b"\0" * 65536


@dataclass
class Log:
    """(sequence number, server name, event) for every arrival and end, in order."""

    events: list[tuple[int, str, str]] = field(default_factory=list)
    _counter: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, server: str, event: str) -> None:
        with self._lock:
            self.events.append((next(self._counter), server, event))

    def first(self, server: str, event: str) -> int:
        return next(n for n, s, e in self.events if (s, e) == (server, event))

    def count(self, server: str, event: str) -> int:
        return sum(1 for _, s, e in self.events if (s, e) == (server, event))


@dataclass
class Hostile:
    """One server: `mode` is `ok` (a short 200), `flood` (a 200 of `size` bytes), `drip` (a
    200 whose body comes one byte every `interval_s`, `size` bytes in all) or `cut` (a 200
    that promises `size` bytes and closes after a few)."""

    name: str
    url: str
    mode: str
    size: int
    interval_s: float
    log: Log
    bodies: list[bytes] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)  # body bytes sent, per request
    stop: threading.Event = field(default_factory=threading.Event)


def _answer(handler: BaseHTTPRequestHandler, server: Hostile) -> int:
    """Write the reply's body as the mode says; the bytes that went out."""
    sent = 0
    try:
        if server.mode == "ok":
            handler.wfile.write(b"ok")
            return 2
        if server.mode == "cut":
            handler.wfile.write(b"0123456789")
            return 10
        while sent < server.size and not server.stop.is_set():
            piece = _CHUNK[: 1 if server.mode == "drip" else server.size - sent]
            handler.wfile.write(piece)
            handler.wfile.flush()
            sent += len(piece)
            if server.mode == "drip":
                time.sleep(server.interval_s)
    except OSError:  # the client closed: what it took is what went out before
        pass
    return sent


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _any(self) -> None:
        server: Hostile = self.server.hostile  # type: ignore[attr-defined]
        server.bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        server.log.note(server.name, "arrived")
        self.send_response(200)
        self.send_header("Content-Length", str(2 if server.mode == "ok" else server.size))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        server.sent.append(_answer(self, server))
        server.log.note(server.name, "ended")
        self.close_connection = True

    do_GET = do_POST = do_PUT = _any

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def hostile_server(
    name: str, mode: str, log: Log | None = None, size: int = 0, interval_s: float = 0.0
) -> Iterator[Hostile]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    url = f"http://127.0.0.1:{httpd.server_port}/{name}"
    server = Hostile(name, url, mode, size, interval_s, log or Log())
    httpd.hostile = server  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
