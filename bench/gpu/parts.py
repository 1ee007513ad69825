"""The parts of `python -m bench gpu` (bench/gpu/benchmark.py): each `part(dry_run) -> dict`.

Only torch, the pure detector and the plugin's torch-only parts: a GPU machine has neither
vLLM nor Folio's own dependencies. Text is generated (bench.detector.mixed_text), tokenised by a
byte-level BPE trained here when `tokenizers` is installed, else by UTF-8 bytes.
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import torch

from app.degeneration import LoopDetector
from app.vllm_plugin.behaviours import LoopStop
from app.vllm_plugin.detokenize import IncrementalDetokenizer
from app.vllm_plugin.logits import ban, force_eos
from bench.detector import mixed_text
from bench.gpu import decode as gpu_decode
from bench.vllm_standin.stream import ChunkEncoder

QUEUED_MS = 32.0  # GPU work queued ahead of a logits write (one decode step or so)


def host() -> dict[str, Any]:
    cuda = torch.cuda.is_available()
    return {
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }


def decode_floor(dry_run: bool) -> dict[str, Any]:
    if dry_run:
        rows = gpu_decode.floor_rows(gpu_decode.TOY, [2, 4], 16, torch.device("cpu"), 1)
        return {"kv_len": 16, "rows": rows}
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device"}
    device, batches = torch.device("cuda"), [32, 64, 128, 256]
    rows = [
        row
        for shape in gpu_decode.SHAPES
        for row in gpu_decode.floor_rows(shape, batches, 1536, device, 20)
    ]
    return {"kv_len": 1536, "rows": rows}


def pages(count: int, chars: int, seed: int = 30) -> list[str]:
    """Generated OCR-like pages (prose, tables, contents, CJK), `chars` long each."""
    rng = random.Random(seed)
    parts = (mixed_text.prose, mixed_text.table, mixed_text.contents, mixed_text.cjk)
    texts = []
    for _ in range(count):
        text = ""
        while len(text) < chars:
            text += rng.choice(parts)(rng)
        texts.append(text)
    return texts


class _Bytes:
    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


class _Bpe:
    def __init__(self, texts: list[str]) -> None:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=4096, show_progress=False)
        tokenizer.train_from_iterator(texts, trainer)
        self._tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text).ids)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens))


def tokenizer_for(texts: list[str]) -> Any:
    try:
        return _Bpe(texts)
    except ImportError:
        return _Bytes()


def stop_engine_cost(dry_run: bool) -> dict[str, Any]:
    """Thread CPU per engine step of today's plugin work (every request opted in)."""
    steps = 16 if dry_run else 256
    texts = pages(8 if dry_run else 32, 16 * steps)
    tokenizer = tokenizer_for(pages(8, 4000, seed=31))  # trained on other pages than it reads
    streams = [tokenizer.encode(text) for text in texts]
    steps = min(steps, *map(len, streams))
    found: dict[str, Any] = {"tokenizer": type(tokenizer).__name__.strip("_"), "steps": steps}
    for batch in [4] if dry_run else [64, 256]:
        ids = [streams[i % len(streams)] for i in range(batch)]
        outputs: list[list[int]] = [[] for _ in range(batch)]
        requests = [(IncrementalDetokenizer(tokenizer), LoopStop()) for _ in range(batch)]
        began = time.thread_time()
        for step in range(steps):
            for stream, output, (detok, stop) in zip(ids, outputs, requests, strict=True):
                output.append(stream[step])
                stop.step(output[-1:], detok.push(output))
        per_step = (time.thread_time() - began) * 1e6 / steps
        found[str(batch)] = {
            "plugin_today_us_per_step": round(per_step, 1),
            "plugin_today_us_per_request_step": round(per_step / batch, 2),
            "client_stop_us_per_step": 0.0,
        }
    return found


def logits_writes(dry_run: bool) -> dict[str, Any]:
    """CPU ms of each logits-write form behind QUEUED_MS of queued GPU work."""
    cuda = torch.cuda.is_available() and not dry_run
    device = torch.device("cuda" if cuda else "cpu")
    logits = torch.zeros(256 if cuda else 8, 151936 if cuda else 512, device=device)
    banned = list(range(100, 140))
    forms = {
        "scalar_eos (old)": lambda: logits.__setitem__((3, 2), 0.0),
        "list_ban (old)": lambda: logits.__setitem__((4, banned), float("-inf")),
        "force_eos (fills)": lambda: force_eos(logits, 3, 2),
        "ban (index_fill_)": lambda: ban(logits, 4, banned),
    }
    found: dict[str, Any] = {"device": device.type, "queued_ms": QUEUED_MS if cuda else 0}
    for name, write in forms.items():
        times = []
        for _ in range(3):
            _queue_gpu_work(device)
            began = time.perf_counter()
            write()
            times.append((time.perf_counter() - began) * 1000)
            if cuda:
                torch.cuda.synchronize()
        found[name] = {"cpu_ms_median": round(sorted(times)[1], 3)}
    return found


def _queue_gpu_work(device: torch.device) -> None:
    """Enqueue about QUEUED_MS of matrix products (sized on the first call)."""
    if device.type != "cuda":
        return
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    a @ a
    end.record()
    end.synchronize()
    for _ in range(max(1, round(QUEUED_MS / max(start.elapsed_time(end), 1e-3)))):
        a @ a


def client_parse(dry_run: bool) -> dict[str, Any]:
    """CPU per token of Folio's client parsing vLLM's SSE chunks and detecting loops."""
    from app.engines.sse import sse_chunks, sse_lines
    from app.engines.vlm_stream import StreamOutcome, absorb_chunk

    texts = pages(2 if dry_run else 16, 3000)
    tokenizer = tokenizer_for(pages(8, 4000, seed=31))
    events = [list(_events(text, tokenizer)) for text in texts]
    tokens = sum(len(e) for e in events)

    async def read(stream: list[str]) -> None:
        outcome, detector = StreamOutcome(), LoopDetector()
        async for chunk in sse_chunks(sse_lines(_source(stream))):
            absorb_chunk(chunk, outcome, detector, 0.0)

    began = time.thread_time()
    for stream in events:
        asyncio.run(read(stream))
    spent = time.thread_time() - began
    return {"tokens": tokens, "us_per_token": round(spent * 1e6 / max(1, tokens), 2)}


def _events(text: str, tokenizer: Any) -> Any:
    """`text` as vLLM streams it, one token a chunk with continuous usage (the stand-in's own
    encoder, `bench.vllm_standin.stream`)."""
    ids = tokenizer.encode(text)
    detok = IncrementalDetokenizer(tokenizer)
    encoder = ChunkEncoder("chatcmpl-x", "model", 1000, continuous_usage=True)
    for end in range(1, len(ids) + 1):
        yield encoder.content(detok.push(ids, end), None, end).decode()


async def _source(stream: list[str]) -> AsyncIterator[str]:
    for event in stream:
        yield event
