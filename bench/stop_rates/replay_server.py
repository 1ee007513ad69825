"""A local server that streams real pages as vLLM's OpenAI server does, at a GPU's step pace.

    python -m bench.stop_rates.replay_server PORT STEP_MS < scripts.json

`scripts.json` is a list of token-piece lists (one per page, from the served tokenizer) with,
for each, the piece index where Folio's online detector calls its loop (null: healthy). Every
POST /v1/chat/completions gets the next script, round robin. One ticker emits one token per
live stream every STEP_MS, like a decode step at batch = streams in flight, and writes the
chunks as vLLM 0.32 formats them (chat.completion.chunk events over chunked HTTP/1.1, usage on
every chunk with `continuous_usage_stats`, `stream_interval` tokens a chunk when asked).
A closed connection stops its stream at the next step, and what this server emitted is all
it counts. vLLM does more after a close: its API server must first notice the disconnect and
send the abort, which the engine applies only between steps, before it processes the output of
the step in flight (v1/engine/core.py:780-784); under async scheduling one more step is already
queued behind that one (step_with_batch_queue, core.py:698-797), so at least 2 tokens are
computed after the verdict token (discarded, never emitted or counted), and when vLLM's single
API server lags behind 256 streams (~25-45 us of its own work a token) the verdict token
reaches the client late and the abort reaches the engine late: tens of tokens more, generated
and counted (`../shared/notes/gpu.md` section 5, docs/loop-stop-gpu.md). None of that is
modelled here: the tokens this server emits after a verdict are the client's share only;
`bench.gpu_standin` models the queued step and the API server's lag.
GET /stats returns, per finished stream, tokens emitted, the verdict index and the achieved
step interval; POST /reset clears them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

# As vLLM 0.32.0 writes them (recorded from the CPU test server, 2026-11-26): one event per
# HTTP chunk, a role chunk first, `token_ids` null, usage after the choices.
HEAD = '{"id":"chatcmpl-%s","object":"chat.completion.chunk","created":%d,"model":"replay",'
ROLE = (
    '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    '"logprobs":null,"finish_reason":null}]'
)
CONTENT = (
    '"choices":[{"index":0,"delta":{"content":%s},"logprobs":null,'
    '"finish_reason":%s%s,"token_ids":null}]'
)
USAGE = (
    ',"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,'
    '"completion_tokens_details":null}'
)
FINAL_USAGE = '"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}'
PROMPT_TOKENS = 1000


@dataclass
class Stream:
    script: int
    pieces: list[str]
    verdict: int | None
    interval: int
    max_tokens: int
    request_id: str
    transport: asyncio.Transport
    usage: bool
    sent: int = 0  # tokens emitted
    flushed: int = 0  # tokens written to the wire
    closed: bool = False


@dataclass
class Replay:
    scripts: list[dict[str, Any]]
    step_s: float
    streams: list[Stream] = field(default_factory=list)
    finished: list[dict[str, Any]] = field(default_factory=list)
    ticks: list[float] = field(default_factory=list)
    next_script: int = 0
    created: int = field(default_factory=lambda: int(time.time()))

    def open(self, body: dict[str, Any], transport: asyncio.Transport) -> Stream:
        index = self.next_script % len(self.scripts)
        self.next_script += 1
        script = self.scripts[index]
        options = body.get("stream_options") or {}
        stream = Stream(
            script=index,
            pieces=script["pieces"],
            verdict=script["verdict"],
            interval=int(body.get("stream_interval") or 1),
            max_tokens=int(body.get("max_tokens") or 4096),
            request_id=f"{self.next_script:08d}",
            transport=transport,
            usage=bool(options.get("continuous_usage_stats")),
        )
        self.streams.append(stream)
        return stream

    async def tick_forever(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            next_at += self.step_s
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            if self.streams:
                self.ticks.append(loop.time())
                self.step()

    def step(self) -> None:
        live = []
        for stream in self.streams:
            if stream.closed:
                self.finish(stream, closed=True)
                continue
            stream.sent += 1
            last = stream.sent >= min(len(stream.pieces), stream.max_tokens)
            due = stream.sent - stream.flushed >= stream.interval or stream.flushed == 0
            if due or last:
                self.write(stream, last)
            if last:
                self.finish(stream, closed=False)
            else:
                live.append(stream)
        self.streams = live

    def write(self, stream: Stream, last: bool) -> None:
        text = "".join(stream.pieces[stream.flushed : stream.sent])
        stream.flushed = n = stream.sent
        head = HEAD % (stream.request_id, self.created)
        # A page that ends under its cap ends with EOS, as a healthy one does on vLLM.
        reason = '"length"' if stream.sent >= stream.max_tokens else '"stop"'
        finish = (reason, ',"stop_reason":null') if last else ("null", "")
        event = head + CONTENT % (json.dumps(text), *finish)
        if stream.usage:
            event += USAGE % (PROMPT_TOKENS, PROMPT_TOKENS + n, n)
        events = [event + "}"]
        if last:
            events.append(head + FINAL_USAGE % (PROMPT_TOKENS, PROMPT_TOKENS + n, n))
        wire = b"".join(http_chunk(f"data: {e}\n\n") for e in events)
        if last:
            wire += http_chunk("data: [DONE]\n\n") + b"0\r\n\r\n"
        stream.transport.write(wire)

    def finish(self, stream: Stream, closed: bool) -> None:
        self.finished.append(
            {
                "script": stream.script,
                "emitted": stream.sent,
                "verdict": stream.verdict,
                "closed": closed,
                "interval": stream.interval,
            }
        )

    def stats(self) -> dict[str, Any]:
        gaps = sorted(b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False))
        median = gaps[len(gaps) // 2] * 1000 if gaps else None
        return {"streams": self.finished, "step_ms_median": median, "steps": len(self.ticks)}


def http_chunk(event: str) -> bytes:
    raw = event.encode()
    return b"%x\r\n%s\r\n" % (len(raw), raw)


class Http(asyncio.Protocol):
    """Just enough HTTP/1.1 for httpx: keep-alive, Content-Length bodies, chunked replies."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.buffer = b""
        self.stream: Stream | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.stream is not None:
            self.stream.closed = True

    def eof_received(self) -> bool:
        if self.stream is not None:
            self.stream.closed = True
        return False

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, rest = self.buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            size = int(headers.get("content-length", "0"))
            if len(rest) < size:
                return
            self.buffer = rest[size:]
            self.handle(lines[0].split(" ")[:2], rest[:size])

    def handle(self, request: list[str], body: bytes) -> None:
        path = request[1]
        if path.endswith("/chat/completions"):
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
            self.transport.write(head + b"transfer-encoding: chunked\r\n\r\n")
            self.stream = stream = self.replay.open(json.loads(body), self.transport)
            head = HEAD % (stream.request_id, self.replay.created)
            self.transport.write(http_chunk(f"data: {head}{ROLE}}}\n\n"))
            return
        if path == "/reset":
            self.replay.finished.clear()
            self.replay.ticks.clear()
            self.replay.next_script = 0
        reply = json.dumps(self.replay.stats() if path == "/stats" else {"ok": True}).encode()
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(reply), reply)
        )


async def serve(port: int, step_ms: float, scripts: list[dict[str, Any]]) -> None:
    replay = Replay(scripts, step_ms / 1000)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Http(replay), "127.0.0.1", port)
    print("ready", flush=True)
    async with server:
        await replay.tick_forever()


def main() -> None:
    port, step_ms = int(sys.argv[1]), float(sys.argv[2])
    scripts = json.load(sys.stdin)
    asyncio.run(serve(port, step_ms, scripts))


if __name__ == "__main__":
    main()
