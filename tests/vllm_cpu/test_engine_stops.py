"""Stops that end a loop inside vLLM, checked on a busy batch of real loops.

Each test fails when a stopped loop keeps generating: the tiny model's greedy loops run to
their 2,000-token cap unless something ends them, and the server's
`vllm:generation_tokens_total` counts every token generated, read or not.
"""

from __future__ import annotations

from functools import partial

import httpx
import pytest

from tests.vllm_cpu.fixtures import vllm_required
from tests.vllm_cpu.server import VllmEndpoint
from tests.vllm_cpu.streams import (
    looping_body,
    run_concurrently,
    wait_until_stable,
    watch_stream,
)

pytestmark = pytest.mark.vllm

LOOPS, FILLERS, CAP = 8, 4, 2000


def plugin_loaded(endpoint: VllmEndpoint) -> bool:
    """Folio's plugin validates its args: a bad value is refused only where it is loaded."""
    body = looping_body(endpoint, 0, 1, stream=False, vllm_xargs={"folio_loop_stop": "probe"})
    body.pop("stream_options")
    response = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=60)
    return response.status_code == 400 and "folio_loop_stop" in response.text


def filler_body(endpoint: VllmEndpoint, index: int) -> dict:
    """A long request that does not loop and does not ask for the stop: the batch stays busy."""
    return looping_body(
        endpoint, 100 + index, 400, temperature=0.8, seed=index, repetition_penalty=1.3
    )


def test_plugin_ends_each_loop_on_the_step_it_is_found(vllm_endpoint: VllmEndpoint) -> None:
    if not plugin_loaded(vllm_endpoint):
        reason = "Folio's vLLM plugin is not installed in the server's venv (setup_env.sh)"
        if vllm_required():
            pytest.fail(reason)
        pytest.skip(reason)
    before = wait_until_stable(vllm_endpoint.generation_tokens_total, hold=1.0)
    loops = [
        partial(
            watch_stream,
            vllm_endpoint,
            looping_body(vllm_endpoint, i, CAP, vllm_xargs={"folio_loop_stop": 1}),
        )
        for i in range(LOOPS)
    ]
    fillers = [
        partial(watch_stream, vllm_endpoint, filler_body(vllm_endpoint, i)) for i in range(FILLERS)
    ]
    results = run_concurrently(loops + fillers)
    generated = wait_until_stable(vllm_endpoint.generation_tokens_total) - before

    looped = results[:LOOPS]
    assert all(r.finish_reason == "stop" for r in looped), looped
    # Folio's own detector, on the text the client read, calls the loop at most a few tokens
    # before the server stopped (the plugin decodes on its own; the EOS is one more token).
    assert all(r.tokens_at_verdict is not None for r in looped), looped
    assert max(r.completion_tokens - r.tokens_at_verdict for r in looped) <= 4, looped
    # Nothing ran on unseen: every generated token reached a client.
    assert generated == sum(r.completion_tokens for r in results)
