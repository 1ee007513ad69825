"""Which stop ended an attempt, and which stops an endpoint gets: pure tables.

The probes themselves run against the real vLLM server (tests/vllm_cpu/test_engine_stops.py).
"""

from __future__ import annotations

import asyncio

import pytest

from app.engines.vlm_close_probe import CloseLiveness, CloseProbe
from app.engines.vlm_stops import EndpointStops, StopRecord, choose_stops, stop_record

PLUGIN = EndpointStops(plugin=True)
ABORT = EndpointStops(abort_path="/abort_requests")
NONE = EndpointStops()


@pytest.mark.parametrize(
    ("verdict", "finish", "stops", "abort_sent", "final", "at", "expected"),
    [
        (True, "stop", PLUGIN, False, 33, 32, StopRecord("engine_plugin", 1)),
        (True, "abort", ABORT, True, 300, 256, StopRecord("abort_call", 44)),
        (True, "repetition", NONE, False, 20, 20, StopRecord("server_repetition", 0)),
        (
            True,
            None,
            NONE,
            False,
            16,
            16,
            StopRecord("client_close", None, "stream closed: the server's count is not sent"),
        ),
        # The plugin was asked for but the server did not stop in time: the client closed.
        (
            True,
            None,
            PLUGIN,
            False,
            90,
            16,
            StopRecord("client_close", None, "stream closed: the server's count is not sent"),
        ),
        (
            True,
            "stop",
            PLUGIN,
            False,
            None,
            16,
            StopRecord("engine_plugin", None, "no token counts in the stream"),
        ),
        (
            False,
            "repetition",
            NONE,
            False,
            8,
            None,
            StopRecord("server_repetition", None, "server stopped; Folio saw no loop"),
        ),
        (False, "length", PLUGIN, False, 500, None, StopRecord("none")),
        (False, "stop", NONE, False, 80, None, StopRecord("none")),
    ],
)
def test_stop_record(
    verdict: bool,
    finish: str | None,
    stops: EndpointStops,
    abort_sent: bool,
    final: int | None,
    at: int | None,
    expected: StopRecord,
) -> None:
    record = stop_record(
        verdict=verdict,
        finish_reason=finish,
        stops=stops,
        abort_sent=abort_sent,
        final_tokens=final,
        tokens_at_verdict=at,
    )
    assert record == expected


FOUND = EndpointStops(
    plugin=True, abort_path="/inference/v1/abort_requests", repetition_detection=True
)


@pytest.mark.parametrize(
    ("found", "switches", "expected"),
    [
        # Beside the plugin, vLLM's exact-repeat stop only adds false stops on healthy pages.
        (FOUND, ("auto", "auto", "auto"), EndpointStops(True, "/inference/v1/abort_requests")),
        (
            EndpointStops(repetition_detection=True),
            ("auto", "auto", "auto"),
            EndpointStops(repetition_detection=True),
        ),
        (FOUND, ("auto", "auto", True), FOUND),
        (NONE, ("auto", "auto", "auto"), NONE),
        (FOUND, (False, False, False), NONE),
        (NONE, (True, True, True), EndpointStops(True, "/abort_requests", True)),
        (FOUND, (True, "auto", False), EndpointStops(True, "/inference/v1/abort_requests")),
    ],
)
def test_settings_override_what_the_probe_found(
    found: EndpointStops, switches: tuple, expected: EndpointStops
) -> None:
    assert choose_stops(found, *switches) == expected


def test_the_close_probe_runs_once_and_again_only_while_unverified_and_idle() -> None:
    verdicts = iter(["unverified", "unverified", "live"])
    runs: list[str] = []

    async def run() -> CloseProbe:
        runs.append(verdict := next(verdicts))
        return CloseProbe(verdict, verdict, 16.0)  # type: ignore[arg-type]

    async def scenario() -> list[CloseProbe | None]:
        liveness = CloseLiveness()
        seen = [await liveness.ensure(run, idle=True)]  # before the first page: runs
        seen.append(await liveness.ensure(run, idle=True))  # unverified, but too soon
        liveness.REPROBE_S = 0.0
        seen.append(await liveness.ensure(run, idle=False))  # a stream is open: not now
        seen.append(await liveness.ensure(run, idle=True))  # unverified again
        seen.append(await liveness.ensure(run, idle=True))  # live
        seen.append(await liveness.ensure(run, idle=True))  # live: never again
        assert liveness.params() == {"loop_stop_close": "live", "loop_stop_close_probe": "live"}
        return seen

    seen = asyncio.run(scenario())
    assert runs == ["unverified", "unverified", "live"]
    # Only the call that ran a probe gets it back (its tokens go on that call's attempt).
    assert [probe.verdict if probe else None for probe in seen] == [
        "unverified",
        None,
        None,
        "unverified",
        "live",
        None,
    ]
