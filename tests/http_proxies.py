"""Small HTTP proxies, each run as a process of its own (`ProxyProcess`), for the tests of the
close-liveness probe and of the stream reader's proxy settings.

- `pass`: a reverse proxy that closes its upstream connection when its client leaves, as nginx
  does by default (`proxy_ignore_client_abort off`): a close reaches the server.
- `hold`: a reverse proxy that keeps its upstream connection open after its client leaves and
  reads the reply to its end, as nginx does with `proxy_ignore_client_abort on` (and as any
  proxy that buffers whole replies does): the server never sees the close.
- `buffer`: a reverse proxy that reads the whole reply before it sends any of it (response
  buffering at its extreme): the client sees the first token once the server has finished.
- `forward`: a forward proxy (`HTTP_PROXY`): absolute-form requests and CONNECT tunnels. It
  passes a close through, and logs one line per request it carries (`--log`).

    python -m tests.http_proxies MODE --port-file FILE [--upstream HOST:PORT] [--log FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

_READ = 1 << 16
REPO = Path(__file__).resolve().parents[1]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF or a broken connection."""
    with contextlib.suppress(OSError):
        while data := await reader.read(_READ):
            writer.write(data)
            await writer.drain()


async def _downstream(
    upstream: asyncio.StreamReader, client: asyncio.StreamWriter, hold: bool
) -> None:
    """The reply to the client; once the client is gone, read on to the end (hold)."""
    try:
        while data := await upstream.read(_READ):
            client.write(data)
            await client.drain()
    except OSError:
        if hold:
            await _drain(upstream)


async def _drain(reader: asyncio.StreamReader) -> int:
    """Read to the end and throw it away: what a holding proxy does after its client left."""
    total = 0
    with contextlib.suppress(OSError):
        while data := await reader.read(_READ):
            total += len(data)
    return total


async def _buffered(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """The request on, then the whole reply, sent once the server has ended it."""
    (c_reader, c_writer), (u_reader, u_writer) = client, upstream
    up = asyncio.create_task(_pipe(c_reader, u_writer))
    reply = b""
    with contextlib.suppress(OSError):
        while data := await u_reader.read(_READ):
            reply += data
    with contextlib.suppress(OSError):
        c_writer.write(reply)
        await c_writer.drain()
    up.cancel()
    for writer in (u_writer, c_writer):
        writer.close()


async def _relay(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    hold: bool,
) -> None:
    """Both directions until the reply ends or the client leaves; then close upstream (pass)
    or first read the reply to its end (hold)."""
    (c_reader, c_writer), (u_reader, u_writer) = client, upstream
    up = asyncio.create_task(_pipe(c_reader, u_writer))  # ends when the client leaves
    down = asyncio.create_task(_downstream(u_reader, c_writer, hold))
    done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    if down not in done:  # the client left first
        down.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await down
        if hold:
            await _drain(u_reader)
    up.cancel()
    for writer in (u_writer, c_writer):
        writer.close()


async def _reverse(upstream: tuple[str, int], mode: str, port_file: Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up = await asyncio.open_connection(*upstream)
        if mode == "buffer":
            await _buffered((reader, writer), up)
        else:
            await _relay((reader, writer), up, hold=mode == "hold")

    await _serve(handle, port_file)


async def _forward(port_file: Path, log: Path | None) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.partition(b"\r\n")
        method, target, version = line.decode("latin-1").split(" ", 2)
        if log is not None:
            with log.open("a") as out:
                out.write(f"{method} {target}\n")
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            up = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
        else:
            parts = urlsplit(target)
            up = await asyncio.open_connection(parts.hostname, parts.port or 80)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            up[1].write(f"{method} {path} {version}\r\n".encode("latin-1") + rest)
        await _relay((reader, writer), up, hold=False)

    await _serve(handle, port_file)


async def _serve(handle: object, port_file: Path) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)  # type: ignore[arg-type]
    port = server.sockets[0].getsockname()[1]
    port_file.write_text(str(port))
    async with server:
        await server.serve_forever()


class ProxyProcess:
    """One proxy of `mode` in a process of its own; `url` once it listens."""

    def __init__(
        self, mode: str, tmp: Path, upstream: str | None = None, log: Path | None = None
    ) -> None:
        self.port_file = tmp / f"proxy-{mode}-{os.getpid()}-{id(self)}.port"
        args = [
            sys.executable,
            "-m",
            "tests.http_proxies",
            mode,
            "--port-file",
            str(self.port_file),
        ]
        args += ["--upstream", upstream] if upstream else []
        args += ["--log", str(log)] if log else []
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._proc = subprocess.Popen(args, env=env, cwd=REPO)
        deadline = time.monotonic() + 60
        while not self.port_file.exists() or not self.port_file.read_text():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {mode} proxy did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port_file.read_text()}"

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("pass", "hold", "buffer", "forward"))
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--upstream", help="HOST:PORT (pass, hold, buffer)")
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    if args.mode == "forward":
        asyncio.run(_forward(args.port_file, args.log))
        return
    host, _, port = args.upstream.rpartition(":")
    asyncio.run(_reverse((host, int(port)), args.mode, args.port_file))


if __name__ == "__main__":
    main()
