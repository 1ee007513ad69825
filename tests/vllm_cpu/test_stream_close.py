"""The test server behaves like a GPU server: a closed stream stops its request at once.

On 2 cores, vLLM's engine at the API server's priority starves it for seconds, and a client
close is noticed only after the loop has run to its cap (server.DEFAULT_ENGINE_NICE). With the
engine reniced, as VllmServer does by default, every close must land within a few tokens,
also with the batch busy and the streams long.
"""

from __future__ import annotations

import pytest

from tests.vllm_cpu.server import VllmEndpoint
from tests.vllm_cpu.streams import run_looping_batch

pytestmark = pytest.mark.vllm

STREAMS, CLOSE_AFTER, CAP = 8, 256, 2000
# Measured per run of 8 streams: 0-74 tokens at load average 8, 0-225 at 18-30 (other
# helpers' vLLM servers on the same 2 cores); one stream that runs on to its cap adds 1,744.
FEW_TOKENS_PER_STREAM = 32


@pytest.mark.xfail(
    strict=False,
    reason="known, open in issue 20: on the 16k-vocabulary tiny model, with the engine reniced "
    "and the machine otherwise idle, 2-3 of 5 runs still let several closed streams run to "
    "their cap while the API server used 6-14% of a core (so not starvation); the in-engine "
    "plugin and the abort call hold (tests/vllm_cpu/test_engine_stops.py)",
)
def test_closed_streams_stop_within_a_few_tokens_in_every_run(
    vllm_endpoint: VllmEndpoint,
) -> None:
    overshoots = []
    for run_index in range(5):
        run = run_looping_batch(
            vllm_endpoint,
            streams=STREAMS,
            max_tokens=CAP,
            stop_after=CLOSE_AFTER,
            tag=f"close{run_index}",
        )
        assert all(s.finish_reason is None for s in run.streams), "a loop ended by itself"
        overshoots.append(run.overshoot)

    # A stream that ran on after its close would add up to CAP - CLOSE_AFTER tokens.
    assert max(overshoots) <= STREAMS * FEW_TOKENS_PER_STREAM, overshoots
