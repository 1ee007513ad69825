"""The stand-in for vLLM (bench/vllm_standin): in its GPU mode its pacing reproduces the measured
tables, and as a real HTTP server it batches, streams, stops and counts as vLLM does; in its
replay mode it hands the scripts out in turn and lists what each request was written. (Its
scripted mode runs under tests/test_false_alarms.py and tests/test_resume_past_loop.py.)"""

from __future__ import annotations

import base64
import io
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import httpx
import pytest
from PIL import Image

from app.domain import AttemptStatus
from app.retry.plan import LoopStop, PastAttempt, resume_prefix, same_stop
from bench.vllm_standin.answers import AnswerBook, Script, continued, tokenize
from bench.vllm_standin.pacing import FLOOR_MS, GpuPace
from tests.distributed_support import ROOT, wait_until

SLOWDOWN = 0.05  # 20x faster than the GPU: counts and orders, never timings, are asserted


def test_steps_reproduce_the_measured_tables() -> None:
    h100 = GpuPace("h100", "7b")
    assert h100.decode_ms(256, 256 * 1536) == pytest.approx(15.14)
    assert h100.decode_ms(128, 128 * 3072) == pytest.approx(13.98, rel=0.03)  # section 6
    assert GpuPace("h100", "3b").decode_ms(256, 256 * 6144) == pytest.approx(23.56, rel=0.03)
    assert GpuPace("h200", "3b").decode_ms(64, 64 * 1536) == FLOOR_MS[("h200", "3b")][1]
    # a loop's KV slows the step it shares; more sequences, longer steps
    assert h100.decode_ms(200, 200 * 1536 + 8000) > h100.decode_ms(200, 200 * 1536)
    assert h100.decode_ms(100, 100 * 1536) < h100.decode_ms(200, 200 * 1536)
    assert h100.vision_ms(1000, 1288) == pytest.approx(45, rel=0.05)


KEYS = [f"page {n}".encode() for n in range(60)]


def read(book: AnswerBook, key: bytes, temperature: float) -> tuple[str, str | None]:
    answer = book.answer(key, temperature)
    return "".join(answer.pieces[:600]), answer.loop


def stop_at_loop(book: AnswerBook, key: bytes, temperature: float) -> LoopStop:
    """Where a stop lands on this read: 200 characters into its loop (the text so far)."""
    answer = book.answer(key, temperature)
    script = next(s for s in book.loops if s.name == answer.loop)
    onset = len("".join(answer.pieces)) - len("".join(script.loop_tokens))
    text = "".join(answer.pieces)[: onset + 200]
    return LoopStop("cycle", onset, text)


def test_a_sticky_loop_comes_back_at_the_same_place_after_text_that_is_not_identical() -> None:
    book = AnswerBook(loop_rate=1.0, sticky_share=1.0, moving_share=0.0)
    changed = 0
    for key in KEYS:
        first, retry, hotter = (stop_at_loop(book, key, t) for t in (0.1, 0.2, 0.5))
        assert book.answer(key, 0.5).loop == book.answer(key, 0.1).loop is not None
        # Folio's own rule calls the retries the same stop as the first read
        assert same_stop(first, retry) and same_stop(first, hotter)
        changed += first.text != retry.text
    # the healthy text before the loop differs wherever there is healthy text to change
    assert changed >= len(KEYS) * 2 // 3


def test_a_moving_loop_comes_back_elsewhere_and_a_once_loop_not_at_all() -> None:
    moving = AnswerBook(loop_rate=1.0, sticky_share=0.0, moving_share=1.0)
    once = AnswerBook(loop_rate=1.0, sticky_share=0.0, moving_share=0.0)
    for key in KEYS:
        shapes = {moving.answer(key, t).loop for t in (0.1, 0.2, 0.5)}
        assert None not in shapes and len(shapes) >= 2
        assert not same_stop(stop_at_loop(moving, key, 0.1), stop_at_loop(moving, key, 0.2))
        assert once.answer(key, 0.1).loop and once.answer(key, 0.2).loop is None


def test_a_resumed_retry_goes_on_from_the_kept_text_as_each_kind_of_loop_does() -> None:
    """A retry that keeps the first read's text up to its loop's line (Folio's own
    resume_prefix) and continues at 0.2: a sticky loop comes back at the same place (Folio's
    rule says so), a moving one on another unit elsewhere, a loop that went away reads on
    healthily to its EOS; each generates what a full read at 0.2 writes past the kept text's
    length."""
    books = {
        kind: AnswerBook(loop_rate=1.0, sticky_share=sticky, moving_share=moving)
        for kind, sticky, moving in (("sticky", 1.0, 0.0), ("moving", 0.0, 1.0), ("once", 0, 0))
    }
    for kind, book in books.items():
        for key in KEYS[:20]:
            first = stop_at_loop(book, key, 0.1)
            past = [past_cut(first)]
            kept = resume_prefix(past)
            assert kept and len(kept) <= first.onset
            full = book.answer(key, 0.2)
            rest = continued(full, kept)
            assert rest.pieces == full.pieces[len(full.pieces) - len(rest.pieces) :]
            skipped = full.pieces[: len(full.pieces) - len(rest.pieces)]
            assert 0 <= len("".join(skipped)) - len(kept) < len(skipped[-1])  # within a piece
            joined = kept + "".join(rest.pieces)
            if kind == "once":
                assert rest.loop is None and rest.eos and len(joined) >= len(kept)
                continue
            again = stop_at_loop(book, key, 0.2)  # where the full re-read loops
            onset = max(len(kept), again.onset)
            assert rest.loop == full.loop is not None
            assert same_stop(first, LoopStop("cycle", onset, joined[: onset + 200])) == (
                kind == "sticky"
            )


def past_cut(stop: LoopStop) -> PastAttempt:
    """The first attempt as Folio keeps it: cut by a verdict at `stop`."""
    return PastAttempt(0, AttemptStatus.DEGENERATE, 100, stop=stop)


def test_shares_are_drawn_as_asked_and_a_retry_rereads_a_healthy_page_a_little_changed() -> None:
    book = AnswerBook(loop_rate=0.5, sticky_share=0.5, moving_share=0.25)
    keys = [f"draw {n}".encode() for n in range(2000)]
    kinds = [book.answer(key, 0.1).comeback for key in keys]
    assert 0.45 < sum(k is not None for k in kinds) / len(keys) < 0.55
    assert 0.2 < kinds.count("sticky") / len(keys) < 0.3
    assert 0.08 < kinds.count("moving") / len(keys) < 0.17
    healthy = next(key for key, kind in zip(keys, kinds, strict=True) if kind is None)
    first, retry = read(book, healthy, 0.1)[0], read(book, healthy, 0.5)[0]
    assert first != retry and len(first) == len(retry)
    assert sum(a != b for a, b in zip(first, retry, strict=True)) <= 8
    assert first.startswith("---\n") and retry.split("---")[1] == first.split("---")[1]
    with pytest.raises(ValueError, match="shares"):
        AnswerBook(loop_rate=0.1, sticky_share=0.8, moving_share=0.4)
    assert isinstance(book.loops[0], Script)


@pytest.fixture(scope="module")
def standin() -> Iterator[str]:
    """The stand-in as its own process, 20x faster than the GPU it models, 4 slots."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "bench.vllm_standin", "--port", str(port)]
    command += ["--loop-rate", "1.0", "--sticky-share", "0", "--moving-share", "0"]
    command += ["--max-num-seqs", "4", "--slowdown", str(SLOWDOWN)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _healthy(url), 60, "the stand-in to start")
        yield url
    finally:
        server.terminate()
        server.wait(10)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def page_url(seed: int) -> str:
    image = Image.new("RGB", (900, 1200), (seed % 256, 255, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def body(seed: int, temperature: float, max_tokens: int = 400, **extra: object) -> dict:
    content = [{"type": "text", "text": "Read this page."}]
    content.append({"type": "image_url", "image_url": {"url": page_url(seed)}})  # type: ignore[dict-item]
    return {
        "model": "m",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        **extra,
    }


def stream(url: str, request: dict, close_after: int | None = None) -> list[dict]:
    chunks = []
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=request, timeout=60) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: {"):
                chunks.append(json.loads(line[6:]))
                usage = chunks[-1].get("usage") or {}
                if close_after and usage.get("completion_tokens", 0) >= close_after:
                    break
    return chunks


def counters(url: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("vllm:"):
            name = line.split("{")[0]
            found[name] = found.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def test_a_healthy_read_streams_a_real_page_in_the_profiles_format(standin: str) -> None:
    chunks = stream(standin, body(1, temperature=0.5, max_tokens=4000))
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1]
    assert text.startswith("---\nprimary_language: en")  # olmOCR's YAML front matter
    assert finish == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 50


def test_a_loop_runs_to_its_cap_unless_stopped(standin: str) -> None:
    chunks = stream(standin, body(2, temperature=0.1, max_tokens=300))
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 300


def test_a_closed_stream_computes_at_least_two_more_tokens_then_stops(standin: str) -> None:
    """...which vLLM's counter leaves out (the API server had aborted the request)."""
    before = counters(standin)["vllm:generation_tokens_total"]
    computed_before = httpx.get(f"{standin}/standin/stats").json()["computed_tokens"]
    stream(standin, body(3, temperature=0.1, max_tokens=3000), close_after=40)
    stats: dict = {}
    for _ in range(200):  # until the engine has dropped the request
        stats = httpx.get(f"{standin}/standin/stats").json()
        if stats["aborted"]:
            break
        threading.Event().wait(0.05)
    counted = counters(standin)["vllm:generation_tokens_total"] - before
    computed = stats["computed_tokens"] - computed_before
    assert stats["aborted"] == 1 and min(stats["tokens_after_close"]) >= 2
    assert 40 <= counted <= computed - 2 and computed < 3000


def test_a_continued_answer_goes_on_from_the_assistant_message_it_was_given(standin: str) -> None:
    """vLLM's continue_final_message: a page's own text up to a point, then the rest of it."""
    whole = stream(standin, body(5, temperature=0.5, max_tokens=4000))
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in whole if c["choices"])
    kept = text[: len(text) // 2]
    request = body(5, temperature=0.5, max_tokens=4000, continue_final_message=True)
    request["messages"].append({"role": "assistant", "content": kept})
    refused = httpx.post(
        f"{standin}/v1/chat/completions", json=request | {"add_generation_prompt": True}
    )
    assert refused.status_code == 400 and "continue_final_message" in refused.text
    rest = stream(standin, request | {"add_generation_prompt": False})
    more = "".join(c["choices"][0]["delta"].get("content", "") for c in rest if c["choices"])
    assert 0 < len(more) < len(text) and text.endswith(more)
    assert abs(len(kept) + len(more) - len(text)) <= 8  # to within one piece
    # the kept text is prefilled (in the prompt, as the tokens it was written in), not generated
    prompt, generated = (rest[-1]["usage"][k] for k in ("prompt_tokens", "completion_tokens"))
    assert prompt == whole[-1]["usage"]["prompt_tokens"] + len(tokenize(kept))
    assert generated < whole[-1]["usage"]["completion_tokens"] - len(tokenize(kept)) + 8


def test_repetition_detection_is_checked_and_stops_exact_repeats(standin: str) -> None:
    bad = body(4, 0.1) | {"stream": False, "repetition_detection": {"max_pattern_size": "x"}}
    refused = httpx.post(f"{standin}/v1/chat/completions", json=bad, timeout=30)
    assert refused.status_code == 400 and "repetition_detection" in refused.text
    rule = {"max_pattern_size": 256, "min_count": 3}
    finishes = set()
    for seed in range(10, 30):  # loops of several shapes; some repeat exactly within 256 tokens
        chunks = stream(standin, body(seed, 0.1, max_tokens=1500, repetition_detection=rule))
        finishes.add([c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1])
    assert "repetition" in finishes


def test_requests_beyond_max_num_seqs_wait_for_a_slot(standin: str) -> None:
    """Four greedy loops hold the four slots (each runs to a cap it cannot reach while the test
    waits), then six more requests arrive: they wait until the loops are closed. The overlap is
    the test's doing, not a race between threads."""
    before = httpx.get(f"{standin}/standin/stats").json()
    release = threading.Event()

    def hold(seed: int) -> None:
        with httpx.stream(
            "POST", f"{standin}/v1/chat/completions", json=body(seed, 0.0, 16384), timeout=60
        ) as reply:
            for _ in reply.iter_lines():
                if release.is_set():
                    break

    def one(seed: int) -> None:
        stream(standin, body(100 + seed, temperature=0.5, max_tokens=60))

    holders = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
    for t in holders:
        t.start()
    wait_until(lambda: counters(standin)["vllm:num_requests_running"] == 4, 60, "4 loops running")
    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    wait_until(
        lambda: httpx.get(f"{standin}/standin/stats").json()["queued_s"] > before["queued_s"],
        60,
        "a step while requests waited",
    )
    release.set()
    for t in [*holders, *threads]:
        t.join(60)
    after = httpx.get(f"{standin}/standin/stats").json()
    assert after["queued_s"] > before["queued_s"]  # steps ran while requests waited
    assert (
        after["queued_slot_s"] - before["queued_slot_s"]
        <= 4 * (after["queued_s"] - before["queued_s"]) + 0.01
    )  # stats are rounded to ms


def test_a_replay_hands_out_its_scripts_in_turn_and_lists_what_each_stream_got() -> None:
    """`--mode replay`: one script a request, round robin, ending on its last piece (no EOS
    token); a stream the client leaves is listed as closed with the tokens written before."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "bench.vllm_standin", "--mode", "replay"]
    command += ["--port", str(port), "--step-ms", "5"]
    scripts = [{"pieces": ["Hello", " page", "."]}, {"pieces": ["loop "] * 3000}]
    server = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(scripts))
    server.stdin.close()
    url = f"http://127.0.0.1:{port}"
    try:
        assert server.stdout.readline().strip() == "ready"
        first = stream(url, body(1, 0.0, max_tokens=100))
        # left after 20 tokens: 15 s of steps (3,000 pieces) before its end, whatever the load
        stream(url, body(1, 0.0, max_tokens=4000), close_after=20)
        third = stream(url, body(1, 0.0, max_tokens=100, stream_interval=2))
        stats = httpx.get(f"{url}/standin/stats").json()
        assert httpx.get(f"{url}/metrics").status_code == 404  # as before: Folio probes none
    finally:
        server.terminate()
        server.wait(10)
    for chunks in (first, third):
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert text == "Hello page." and chunks[-1]["usage"]["completion_tokens"] == 3
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    # the role, the first token alone (as vLLM sends it), then 2 tokens a chunk
    assert [c["choices"][0]["delta"].get("content") for c in third if c["choices"]] == [
        "",
        "Hello",
        " page.",
    ]
    assert [r["script"] for r in stats["requests"]] == [0, 1, 0]
    closed = stats["requests"][1]
    assert closed["finish"] == "client_closed" and 20 <= closed["tokens"] < 4000
    assert stats["requests"][2]["stream_interval"] == 2
