"""Measure the facts quoted in tests/vllm_cpu/README.md (run in the project venv).

    python -m tests.vllm_cpu.measure            # starts its own server
    FOLIO_VLLM_URL=http://127.0.0.1:PORT python -m tests.vllm_cpu.measure

Prints startup time, time to first token, decode tokens/s for 1 and 8 concurrent streams,
and the server's resident memory (own server only).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.vllm_cpu.images import page_image_data_url
from tests.vllm_cpu.server import (
    SERVED_MODEL_NAME,
    VllmServer,
    group_members,
    root_url_of,
)


def stream_once(base_url: str, content: object, max_tokens: int) -> tuple[float, int, float]:
    """(seconds to first content, completion tokens, total seconds) of one greedy stream."""
    body = {
        "model": SERVED_MODEL_NAME,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    began, first, tokens = time.monotonic(), None, 0
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=300) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            if first is None and chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                first = time.monotonic() - began
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return first or 0.0, tokens, time.monotonic() - began


def image_content(width: int) -> list[dict]:
    url = page_image_data_url(width, width * 1414 // 1000)
    return [
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "text", "text": "Transcribe the text on this page."},
    ]


def tokens_per_second(base_url: str, streams: int, max_tokens: int = 512) -> float:
    began = time.monotonic()
    with ThreadPoolExecutor(streams) as pool:
        runs = [pool.submit(stream_once, base_url, "Hello", max_tokens) for _ in range(streams)]
        results = [run.result() for run in runs]
    return sum(tokens for _, tokens, _ in results) / (time.monotonic() - began)


def group_rss_mib(pgid: int) -> float:
    total_kib = 0
    for pid in group_members(pgid):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def report(base_url: str) -> None:
    stream_once(base_url, "Hello", 8)  # warm-up
    ttft_text = min(stream_once(base_url, "Hello", 8)[0] for _ in range(3))
    ttft_new_image = [stream_once(base_url, image_content(1200 + i), 8)[0] for i in range(3)]
    ttft_same_image = stream_once(base_url, image_content(1200), 8)[0]
    print(f"ttft text: {ttft_text * 1000:.0f} ms")
    print(f"ttft new page image: {', '.join(f'{t * 1000:.0f}' for t in ttft_new_image)} ms")
    print(f"ttft same image again: {ttft_same_image * 1000:.0f} ms")
    for streams in (1, 8):
        print(f"decode, {streams} stream(s): {tokens_per_second(base_url, streams):.0f} tokens/s")


def main() -> None:
    url = os.environ.get("FOLIO_VLLM_URL")
    if url:
        report(f"{root_url_of(url)}/v1")
        return
    with VllmServer() as server:
        print(f"startup: {server.startup_seconds:.1f} s")
        report(server.base_url)
        assert server.pid is not None
        print(f"server RSS (process group): {group_rss_mib(server.pid):.0f} MiB")


if __name__ == "__main__":
    main()
