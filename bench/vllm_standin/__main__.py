"""`python -m bench.vllm_standin --port 8000 [--mode gpu|replay] ...`: serve the stand-in for
vLLM until interrupted.

- `--mode gpu` (the default): pages read at a measured GPU's pace ([--gpu h100|h200]
  [--shape 3b|7b] [--loop-rate R] [--sticky-share S] [--moving-share M]);
- `--mode replay --step-ms MS`: the scripts on standard input (a JSON list of
  `{"pieces": [...]}`), one to each request in turn, one token per stream every MS; prints
  `ready` once it listens, and `/standin/stats` lists each request's outcome.
Scripted answers (a Python function per request) are served in-process: `scripted.serving`."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.vllm_standin.answers import MOVING_SHARE, STICKY_SHARE, Answer, AnswerBook
from bench.vllm_standin.engine import MAX_NUM_BATCHED_TOKENS, MAX_NUM_SEQS, Engine
from bench.vllm_standin.http import Connection
from bench.vllm_standin.pacing import FixedPace, GpuPace
from bench.vllm_standin.server import AnswerFor, StandInApi, page_answers

UNBOUNDED = 1_000_000  # a replay's slots and prefill budget: every stream at once


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--mode", choices=("gpu", "replay"), default="gpu")
    p.add_argument("--gpu", choices=("h100", "h200"), default="h100")
    p.add_argument("--shape", choices=("3b", "7b"), default="7b")
    p.add_argument("--model", default="allenai/olmOCR-2-7B-1025-FP8")
    p.add_argument("--profile", default="olmocr2", help="Answers in this profile's format.")
    p.add_argument("--loop-rate", type=float, default=0.0, help="Share of pages that loop.")
    p.add_argument(
        "--sticky-share",
        type=float,
        default=STICKY_SHARE,
        help="Of the looping pages, the share that loops again on every read, at the same place "
        "on the same unit (default 12/17: the flywheel base's ladder, answers.py).",
    )
    p.add_argument(
        "--moving-share",
        type=float,
        default=MOVING_SHARE,
        help="Of the looping pages, the share that loops again on every read, each temperature "
        "on another shape (default 2/17, the same source).",
    )
    p.add_argument("--max-num-seqs", type=int, default=MAX_NUM_SEQS)
    p.add_argument("--max-num-batched-tokens", type=int, default=MAX_NUM_BATCHED_TOKENS)
    p.add_argument(
        "--slowdown", type=float, default=1.0, help="Wall seconds per simulated GPU second."
    )
    p.add_argument("--step-ms", type=float, default=8.0, help="Replay: one step's wall time.")
    p.add_argument("--step-log", type=Path, help="Write one JSON line per step here.")
    return p


def replayed(scripts: list[dict[str, Any]]) -> AnswerFor:
    """Each request the next script, round robin; it ends where its pieces end."""
    turns = itertools.cycle(range(len(scripts)))

    def answer_for(body: dict[str, Any]) -> Answer:
        index = next(turns)
        return Answer(list(scripts[index]["pieces"]), eos=False, script=index)

    return answer_for


async def serve(args: argparse.Namespace, ready: asyncio.Event | None = None) -> None:
    log = args.step_log.open("a", encoding="utf-8") if args.step_log else None
    record = (lambda row: log.write(json.dumps(row) + "\n")) if log else None
    if args.mode == "replay":
        engine = Engine(FixedPace(args.step_ms), UNBOUNDED, UNBOUNDED, 1.0, record)
        api = StandInApi(engine, replayed(json.load(sys.stdin)), args.model, True, [])
    else:
        pace = GpuPace(args.gpu, args.shape)
        engine = Engine(pace, args.max_num_seqs, args.max_num_batched_tokens, args.slowdown, record)
        book = AnswerBook(
            args.profile,
            args.loop_rate,
            sticky_share=args.sticky_share,
            moving_share=args.moving_share,
        )
        _ = book.loops  # built before the first request, not during it
        api = StandInApi(engine, page_answers(book), args.model)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(api.handle), args.host, args.port)
    if args.mode == "replay":
        print("ready", flush=True)
    if ready:
        ready.set()
    try:
        await asyncio.gather(engine.run(), server.serve_forever())
    finally:
        server.close()
        if log:
            log.close()


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.mode == "gpu":
        where = f"http://{args.host}:{args.port}/v1"
        print(f"GPU stand-in on {where} ({args.gpu}, {args.shape})", flush=True)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
