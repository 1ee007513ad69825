"""The stand-in in its scripted mode, in-process: each request gets what a Python function
picks for it, at no pace, so Folio's real engine and pipeline run over real HTTP without a
model (`bench false-alarms`, the tests of the confirming attempt and the resumed retry).

A `ScriptedAnswer` is its text, then, for a loop, its unit over and over, token by token, until
the request's max_tokens (finish "length"); an answer that ends first ends with finish "stop"
on its last piece (no EOS token: the token counts the tests and results quote are the pieces
alone). A token here is a piece of at most 4 characters of one class (word characters, other
symbols, whitespace): about the 3-4 characters a token of BPE tokenizers write on such text,
which is all the pipeline's counts need. The client closing the stream at a verdict ends it.
`requests` keeps every request's decoding fields, the tokens written and the finish reason
("client_closed" where the client left first); `repetition_detection` is recorded, never
applied (the script alone says where an answer ends), and there is no `/metrics`.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.vllm_standin.answers import Answer
from bench.vllm_standin.engine import Engine
from bench.vllm_standin.http import Connection
from bench.vllm_standin.pacing import FixedPace
from bench.vllm_standin.server import StandInApi

_PIECE = re.compile(r"\s{1,4}|\w{1,4}|[^\w\s]{1,4}")
UNBOUNDED = 1_000_000  # slots and prefill budget: every request at once


def pieces(text: str) -> list[str]:
    """`text` as the stand-in's tokens ("".join(pieces(t)) == t)."""
    return _PIECE.findall(text)


@dataclass(frozen=True)
class ScriptedAnswer:
    """What the server writes: `text`, then `loop` over and over up to the cap (a loop that
    does not end), or `copies` times and then the end (a loop that ends), or nothing more when
    `loop` is empty."""

    text: str
    loop: str = ""
    copies: int | None = None

    def answer(self, max_tokens: int) -> Answer:
        """The engine's answer under `max_tokens`: one piece past the cap where it runs on, so
        the engine ends it there with "length"."""
        written = pieces(self.text)
        if self.loop and self.copies is not None:
            written += pieces(self.loop) * self.copies
        elif self.loop:
            written += itertools.islice(itertools.cycle(pieces(self.loop)), max_tokens + 1)
        return Answer(written[: max_tokens + 1], eos=False)


AnswerFor = Callable[[dict[str, Any]], ScriptedAnswer]


@dataclass
class StandIn:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def serving(answer_for: AnswerFor, model: str = "stand-in") -> Iterator[StandIn]:
    """The stand-in on a free local port, on a thread of its own, while the block runs."""
    stand_in = StandIn("")
    engine = Engine(FixedPace(0.0), UNBOUNDED, UNBOUNDED)

    def engine_answer(body: dict[str, Any]) -> Answer:
        return answer_for(body).answer(int(body.get("max_tokens") or 4096))

    api = StandInApi(engine, engine_answer, model, scripted=True, requests=stand_in.requests)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        loop.create_server(lambda: Connection(api.handle), "127.0.0.1", 0)
    )
    running = loop.create_task(engine.run())
    thread = threading.Thread(target=loop.run_forever, daemon=True, name="stand-in-vlm")
    thread.start()
    stand_in.base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        yield stand_in
    finally:

        async def shut() -> None:
            running.cancel()
            server.close()

        asyncio.run_coroutine_threadsafe(shut(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
