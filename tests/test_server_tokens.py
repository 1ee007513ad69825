"""Server-side token accounting: readings of a server's counters against the tokens attempts
received; the sampler that takes them; the report and Prometheus figures."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from sqlalchemy import select

from app.db.engine import Database
from app.db.models import ServerSample
from app.report.build import build_report
from app.report.metrics import FolioMetrics
from app.report.rows import ServerSampleRow
from app.report.server_tokens import server_tokens
from app.servermetrics.counters import (
    ServerCounters,
    ServerMetricsUnavailable,
    parse_counters,
)
from app.servermetrics.sampler import ServerSampler
from app.settings import Settings, VlmEndpoint, metrics_url_of
from tests.report_scenario import T0, Spec, attempt_row, insert_job

VLLM_PAGE = """\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1234.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 99.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 3.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 4.0
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e9
"""


def reading(
    phase: str, at: float, tokens: float, worker: str = "w1", started: float = 1.0
) -> ServerSampleRow:
    return ServerSampleRow(
        "gpu",
        "http://s/metrics",
        worker,
        phase,
        T0 + timedelta(seconds=at),
        tokens,
        None,
        None,
        started,
    )


def gpu(page: int, status: str, start: float, end: float, tokens: int, aborted: bool = False):  # type: ignore[no-untyped-def]
    spec = Spec(("x", page), "s", "vlm", "m", "gpu", status, start, end, 10, tokens, 1000, aborted)
    return attempt_row(page * 10 + int(start), page, spec)


def test_vllm_counters_are_summed_over_labels() -> None:
    counters = parse_counters(VLLM_PAGE)
    assert counters == ServerCounters(1234.0, 99.0, 7.0, 1.7e9)
    with pytest.raises(ServerMetricsUnavailable):
        parse_counters("# nothing\nother_total 3\n")


def test_metrics_url_defaults_to_the_server_root() -> None:
    endpoint = VlmEndpoint(base_url="http://h:8000/v1/", model="m")
    assert metrics_url_of(endpoint) == "http://h:8000/metrics"
    assert metrics_url_of(endpoint.model_copy(update={"metrics_url": "off"})) is None
    other = endpoint.model_copy(update={"metrics_url": "http://h:9000/m"})
    assert metrics_url_of(other) == "http://h:9000/m"


def test_tokens_no_attempt_received_are_lost_aborts_up_to_the_aborted_headroom() -> None:
    attempts = [gpu(1, "degenerate", 0, 2, 100, aborted=True), gpu(2, "ok", 0, 4, 300)]
    samples = [reading("start", -1, 1000), reading("end", 5, 1000 + 400 + 250)]
    [figures] = server_tokens(samples, attempts)
    assert (figures.tokens_received, figures.tokens_unreceived) == (400, 250)
    assert figures.tokens_generated == 650 and figures.tokens_lost_aborts == 250
    assert figures.degenerate_share == pytest.approx((100 + 250) / 650)
    # More unreceived than the aborted request could have made: the rest is other clients'.
    samples = [reading("start", -1, 1000), reading("end", 5, 1000 + 400 + 5000)]
    [figures] = server_tokens(samples, attempts)
    assert (figures.tokens_unreceived, figures.tokens_lost_aborts) == (5000, 900)


def test_workers_reading_one_server_are_merged_not_summed() -> None:
    attempts = [gpu(1, "ok", 0, 4, 300), gpu(2, "ok", 2, 8, 200)]
    samples = [
        reading("start", -1, 1000, "w1"),
        reading("end", 5, 1300, "w1"),
        reading("start", 1, 1100, "w2"),
        reading("end", 9, 1500, "w2"),
    ]
    [figures] = server_tokens(samples, attempts)
    assert figures.window_tokens == 500 and figures.tokens_unreceived == 0
    # One server per worker behind the same URL (distinct start times): windows add up.
    separate = [
        reading("start", -1, 1000, "w1", started=1.0),
        reading("end", 5, 1300, "w1", started=1.0),
        reading("start", 1, 50, "w2", started=2.0),
        reading("end", 9, 250, "w2", started=2.0),
    ]
    [figures] = server_tokens(separate, attempts)
    assert figures.window_tokens == 500 and figures.tokens_unreceived == 0


def test_an_overlapping_job_takes_its_tokens_and_its_share_of_the_rest() -> None:
    mine = [gpu(1, "ok", 0, 10, 300)]
    theirs = [gpu(9, "ok", 5, 15, 200)]  # half of it inside my window [0, 10]
    samples = [reading("start", 0, 0), reading("end", 10, 300 + 100 + 400)]
    [figures] = server_tokens(samples, mine, theirs)
    assert figures.other_jobs_tokens == pytest.approx(100)
    assert figures.tokens_unreceived == pytest.approx(400 * 300 / 400)


@pytest.mark.parametrize(
    ("samples", "reason"),
    [
        ([], "no server readings"),
        (
            [ServerSampleRow("gpu", "u", "w", "start", T0, None, error="u: ConnectError: refused")],
            "refused",
        ),
        ([reading("start", 0, 10)], "no reading after a page"),
        ([reading("start", 0, 500), reading("end", 5, 20)], "went back"),
        ([reading("start", 0, 500, started=1), reading("end", 5, 20, started=2)], "restarted"),
    ],
)
def test_no_figures_without_a_usable_pair_of_readings(
    samples: list[ServerSampleRow], reason: str
) -> None:
    [figures] = server_tokens(samples, [gpu(1, "ok", 0, 4, 300)])
    assert figures.tokens_generated is None and figures.tokens_unreceived is None
    assert reason in (figures.reason or "")


class CountingServer:
    """Stands in for `read_counters`: a server whose counter grows by 100 per reading."""

    def __init__(self, fail: bool = False) -> None:
        self.tokens = 0.0
        self.fail = fail

    def __call__(self, url: str) -> ServerCounters:
        if self.fail:
            raise ServerMetricsUnavailable(f"{url}: ConnectError: refused")
        self.tokens += 100
        return ServerCounters(self.tokens, 0.0, 0.0, 42.0)


def test_sampler_records_a_baseline_and_the_latest_reading(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    job_id = insert_job(db, [Spec(("a", 1), "s", "vlm", "m", "gpu", "ok", 0, 1, 1, 300)])
    sampler = ServerSampler(db, {"gpu": "http://s/metrics"}, "w1", read=CountingServer())
    for _ in range(3):
        sampler.before_page(job_id, {"gpu", "unknown"})
        sampler.after_page(job_id, {"gpu"})
    settings = Settings(database_url=sqlite_url)
    report = build_report(db, settings, job_id).report
    # Start reading 100, then 200, 300, 400 after pages: the last one counts: 300 generated.
    assert [(s.endpoint, s.window_tokens) for s in report.server_endpoints] == [("gpu", 300)]
    assert report.server_tokens_generated == 300 and report.server_tokens_unreceived == 0


def test_unreadable_metrics_give_null_figures_with_the_reason(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    job_id = insert_job(db, [Spec(("a", 1), "s", "vlm", "m", "gpu", "ok", 0, 1, 1, 300)])
    sampler = ServerSampler(db, {"gpu": "http://s/metrics"}, "w1", read=CountingServer(True))
    sampler.before_page(job_id, {"gpu"})
    sampler.after_page(job_id, {"gpu"})
    report = build_report(db, Settings(database_url=sqlite_url), job_id).report
    assert report.server_tokens_generated is None
    assert "refused" in (report.server_tokens_reason or "")


def test_prometheus_exposes_a_finished_jobs_server_tokens(tmp_path: Path) -> None:
    attempts = [gpu(1, "degenerate", 0, 2, 100, aborted=True), gpu(2, "ok", 0, 4, 300)]
    samples = [reading("start", -1, 1000), reading("end", 5, 1650)]
    metrics = FolioMetrics()
    metrics.observe_server_tokens(server_tokens(samples, attempts))
    text = generate_latest(metrics.registry).decode()
    assert 'folio_server_tokens_total{endpoint="gpu",kind="unreceived"} 250.0' in text
    assert 'folio_server_tokens_total{endpoint="gpu",kind="generated"} 650.0' in text


class SlowServer(CountingServer):
    """A /metrics that answers slowly, and remembers which pages had ended when it was read."""

    def __init__(self) -> None:
        super().__init__()
        self.ended = 0
        self.seen_by_reading: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, url: str) -> ServerCounters:
        with self.lock:
            ended = self.ended
        time.sleep(0.005)
        self.seen_by_reading.append(ended)
        return super().__call__(url)


def test_page_threads_share_readings_and_the_last_one_follows_every_page(
    sqlite_url: str,
) -> None:
    db = Database(sqlite_url)
    job_id = insert_job(db, [Spec(("a", 1), "s", "vlm", "m", "gpu", "ok", 0, 1, 1, 300)])
    server = SlowServer()
    sampler = ServerSampler(db, {"gpu": "http://s/metrics"}, "w1", read=server)

    def page() -> None:
        sampler.before_page(job_id, {"gpu"})
        with server.lock:
            server.ended += 1
        sampler.after_page(job_id, {"gpu"})

    threads = [threading.Thread(target=page) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The last reading stored came after all 16 pages had ended.
    assert server.seen_by_reading[-1] == 16
    with db.session() as session:
        end = session.scalar(
            select(ServerSample.generation_tokens).where(ServerSample.phase == "end")
        )
    assert end == server.tokens
