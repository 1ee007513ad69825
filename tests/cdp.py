"""Debian's headless Chromium driven over the DevTools protocol, for the console's browser
tests: a WebSocket client on the standard library (RFC 6455, text frames, client-masked) and
the few DevTools commands the tests use. Nothing here downloads a browser; the test skips (or,
under FOLIO_REQUIRE_SERVICES, fails) where `chromium` is not installed."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from tests.api_server import free_port

WAIT_S = 120.0  # the longest any one wait may take on a loaded machine (a cap, not a figure)


class WebSocket:
    """One WebSocket connection: send a text message, receive the next one."""

    def __init__(self, url: str) -> None:
        parts = urlparse(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=WAIT_S)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"no WebSocket at {url}: {head[:200]!r}")

    def send(self, text: str) -> None:
        payload, mask = text.encode(), os.urandom(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 2**16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            data += chunk
        return bytes(data)

    def receive(self) -> str:
        message = bytearray()
        while True:
            first, second = self._exactly(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exactly(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exactly(8))[0]
            payload = self._exactly(size)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Page:
    """One browser tab: navigate, evaluate, wait for a condition, upload files, screenshot."""

    def __init__(self, ws_url: str) -> None:
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        found = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression[:80]}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, expression: str, wait_s: float = WAIT_S) -> Any:
        """The expression's value once it is truthy (polled; `wait_s` is a cap)."""
        deadline = time.monotonic() + wait_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {wait_s} s: {expression}")
            time.sleep(0.1)

    def open(self, url: str) -> None:
        """Go to `url` and wait until its document has loaded."""
        self.evaluate("window.__folioLeft = true")
        self.call("Page.navigate", url=url)
        self.settle()

    def settle(self) -> None:
        """Wait for the document a navigation (a link, a form) led to."""
        self.wait_for(
            "!window.__folioLeft && document.readyState === 'complete' && document.body !== null"
        )

    def click(self, selector: str) -> None:
        """Click what leads to another document (a link, a form's button) and wait for it."""
        self.evaluate("window.__folioLeft = true")
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self.settle()

    def set_files(self, selector: str, files: list[Path]) -> None:
        root = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.call("DOM.setFileInputFiles", nodeId=node, files=[str(f) for f in files])

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.contextmanager
def chromium(binary: str, profile: Path) -> Iterator[Page]:
    """A headless Chromium with one tab, closed after the block."""
    port = free_port()
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        f"--remote-debugging-port={port}",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        tab = _first_tab(f"http://127.0.0.1:{port}", process)
        page = Page(tab)
        try:
            yield page
        finally:
            page.ws.close()
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _first_tab(devtools: str, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + WAIT_S
    while True:
        with contextlib.suppress(httpx.HTTPError):
            tabs = httpx.get(f"{devtools}/json/list", timeout=5).json()
            pages = [t for t in tabs if t.get("type") == "page"]
            if pages:
                return str(pages[0]["webSocketDebuggerUrl"])
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("chromium did not open its DevTools port")
        time.sleep(0.2)
