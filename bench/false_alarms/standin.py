"""A stand-in for an OpenAI-compatible VLM server (vLLM's chat completions), streaming scripted
answers, so Folio's real engine and pipeline run over real HTTP without a model.

Each POST /v1/chat/completions gets the `Answer` that `answer_for(body)` picks: its text, then,
for a loop, its unit over and over, token by token, until the request's max_tokens (finish
"length"); an answer that ends first ends with finish "stop" (EOS). Events are written as vLLM
0.32 writes them: one `chat.completion.chunk` a token, the final usage when
`stream_options.include_usage` asks, then `data: [DONE]`; usage on every chunk with
`continuous_usage_stats`. A token here is a piece of at most 4 characters of one class (word
characters, other symbols, whitespace): about the 3-4 characters a token of BPE tokenizers
write on such text, which is all the pipeline's counts need. The reply has no length and ends
with the connection (HTTP/1.0), as Folio's streaming client reads it; the client closing the
connection at a verdict ends the stream. `requests` keeps every request's decoding fields,
the tokens written and the finish reason.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PIECE = re.compile(r"\s{1,4}|\w{1,4}|[^\w\s]{1,4}")
PROMPT_TOKENS = 1000  # a page image and the prompt, as the usage reports them
_KEPT = (
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "repetition_detection",
    "vllm_xargs",
    "continue_final_message",
    "add_generation_prompt",
)


def pieces(text: str) -> list[str]:
    """`text` as the stand-in's tokens ("".join(pieces(t)) == t)."""
    return _PIECE.findall(text)


@dataclass(frozen=True)
class Answer:
    """What the server writes: `text`, then `loop` over and over up to the cap (a loop that
    does not end), or `copies` times and then EOS (a loop that ends), or nothing more (EOS)
    when `loop` is empty."""

    text: str
    loop: str = ""
    copies: int | None = None

    def tokens(self, max_tokens: int) -> tuple[list[str], str]:
        """The tokens written under `max_tokens`, and the finish reason."""
        written = pieces(self.text)
        if self.loop and self.copies is not None:
            written += pieces(self.loop) * self.copies
        elif self.loop:
            written += itertools.islice(itertools.cycle(pieces(self.loop)), max_tokens)
        if len(written) > max_tokens:
            return written[:max_tokens], "length"
        return written, "stop"


AnswerFor = Callable[[dict[str, Any]], Answer]


@dataclass
class StandIn:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def serving(answer_for: AnswerFor, model: str = "stand-in") -> Iterator[StandIn]:
    """A stand-in server on a free local port while the block runs."""
    stand_in = StandIn("")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            if not self.path.endswith("/chat/completions") or not body.get("stream"):
                self.send_error(404, "only streamed chat completions here")
                return
            tokens, finish = answer_for(body).tokens(int(body.get("max_tokens") or 4096))
            record = {k: body[k] for k in _KEPT if k in body} | {"tokens": 0, "finish": None}
            with lock:
                stand_in.requests.append(record)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.end_headers()
            try:
                self._stream(body, tokens, finish, record)
            except (BrokenPipeError, ConnectionResetError):
                record["finish"] = "client_closed"

        def _stream(
            self, body: dict[str, Any], tokens: list[str], finish: str, record: dict[str, Any]
        ) -> None:
            options = body.get("stream_options") or {}
            every = bool(options.get("continuous_usage_stats"))
            head = {"id": f"chatcmpl-{len(stand_in.requests)}", "object": "chat.completion.chunk"}
            head |= {"created": int(time.time()), "model": model}
            for n, token in enumerate(tokens, start=1):
                last = n == len(tokens)
                delta = {"index": 0, "delta": {"content": token}}
                event = head | {"choices": [delta | {"finish_reason": finish if last else None}]}
                if every:
                    event["usage"] = _usage(n)
                self._send(event)
                record["tokens"] = n
            if options.get("include_usage"):
                self._send(head | {"choices": [], "usage": _usage(len(tokens))})
            self.wfile.write(b"data: [DONE]\n\n")
            record["finish"] = finish

        def _send(self, event: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="stand-in-vlm")
    thread.start()
    stand_in.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _usage(completion: int) -> dict[str, int]:
    total = PROMPT_TOKENS + completion
    return {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": completion, "total_tokens": total}
