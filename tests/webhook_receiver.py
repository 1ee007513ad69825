"""A real HTTP webhook receiver on loopback that answers from a script and keeps what came."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    answered: int


@dataclass
class Receiver:
    url: str
    fail_first: int = 0  # answer 503 to this many requests, then 200
    always: int | None = None  # answer this status to every request
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> int:
        with self.lock:
            if self.always is not None:
                return self.always
            return 503 if len(self.received) < self.fail_first else 200


@contextmanager
def running_receiver(**script: int | None) -> Iterator[Receiver]:
    holder: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver = holder[0]
            status = receiver.answer()
            with receiver.lock:
                receiver.received.append(Received(dict(self.headers), body, status))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(Receiver(f"http://127.0.0.1:{server.server_port}/hook", **script))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
