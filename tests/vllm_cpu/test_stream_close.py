"""The test server behaves like a GPU server: a closed stream stops its request at once.

On 2 cores, vLLM's engine at the API server's priority starves it for seconds, and a client
close is noticed only after the loop has run to its cap (server.DEFAULT_ENGINE_NICE). With the
engine reniced, as VllmServer does by default, every close must land within a few tokens,
also with the batch busy and the streams long. "After the close" counts from what the server
had sent when the client closed, read or not: a reader that lags the server holds tokens
generated before its close (streams.BatchRun.after_stop).
"""

from __future__ import annotations

import pytest

from tests.vllm_cpu.server import VllmEndpoint
from tests.vllm_cpu.streams import run_looping_batch

pytestmark = pytest.mark.vllm

STREAMS, CLOSE_AFTER, CAP = 8, 256, 2000
# Measured per run of 8 streams (2026-11-23, load average 12-21): 0 tokens after what the
# server had sent at the closes in 15 of 15 runs, while the client still held 8-435 unread ones;
# a close 2 s late: 2,344. One stream that runs on to its cap adds 1,744.
FEW_TOKENS_PER_STREAM = 32


# Seen 2026-11-23 on the idle machine: on a fresh server 5 of 5 runs stop at once; once the server
# has served other requests (8 plain or scripted ones are enough) 1 to 3 of 5 runs fail. Traced on
# an instrumented server (uvicorn's connection_lost, Starlette's disconnect, AsyncLLM.abort): every
# close that met a running request aborted it within 2 ms. The failures are streams whose tokens
# reached the client seconds late (first bytes 2.5 s after the headers; 8 client processes
# instead of threads did not help): vLLM had already sent the whole loop to its cap, or hundreds
# of tokens more than the client could see, before the client had 256 tokens to close on. That is
# the front end lagging (the engine never waits for it), which only an in-engine stop escapes:
# the plugin test in test_engine_stops.py. The client cannot count what the server's socket
# buffers hold, so this test cannot tell that lag from a late close.
@pytest.mark.xfail(
    reason="tokens reach the client seconds behind the engine on a warmed server (front-end lag)",
    strict=False,
)
def test_closed_streams_stop_within_a_few_tokens_in_every_run(
    vllm_endpoint: VllmEndpoint,
) -> None:
    runs = []
    for run_index in range(5):
        run = run_looping_batch(
            vllm_endpoint,
            streams=STREAMS,
            max_tokens=CAP,
            stop_after=CLOSE_AFTER,
            tag=f"close{run_index}",
        )
        assert all(s.finish_reason is None for s in run.streams), "a loop ended by itself"
        runs.append(run)

    # A stream that ran on after its close would add up to CAP - CLOSE_AFTER tokens. Counted
    # from what the server had sent when the client closed (read or still in the client's
    # buffers): tokens generated before the close are no stop's to save.
    worst = max(runs, key=lambda run: run.after_stop)
    assert worst.after_stop <= STREAMS * FEW_TOKENS_PER_STREAM, (
        [(run.after_stop, run.overshoot) for run in runs],
        worst.describe(vllm_endpoint.log_text()),
    )
