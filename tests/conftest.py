"""Shared fixtures: real databases (SQLite file, fresh Postgres database per test) and PDFs."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import settings as hypothesis_settings
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.db.engine import dispose_engines, upgrade
from tests.distributed_support import unique_prefix
from tests.vllm_cpu.fixtures import dev_speculative_endpoint, vllm_endpoint

POSTGRES_URL = os.environ.get(
    "FOLIO_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("FOLIO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
SHARED = Path(os.environ.get("FOLIO_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
# One template per test session: concurrent sessions on one server never share it.
_TEMPLATE = f"folio_test_template_{uuid.uuid4().hex[:8]}"
# Property tests draw the same examples on every run and keep no example database between runs:
# CI is deterministic, and a failure found once is a test case written down, not a replay.
hypothesis_settings.register_profile("folio", derandomize=True, database=None)
hypothesis_settings.load_profile("folio")
# one server for the session, shared by every vllm test; one more for dev routes + speculation
__all__ = ["dev_speculative_endpoint", "vllm_endpoint"]


def services_required() -> bool:
    """In CI a missing service is a failure, never a skip."""
    return bool(os.environ.get("CI")) or os.environ.get("FOLIO_REQUIRE_SERVICES") == "1"


def unavailable(reason: str) -> None:
    if services_required():
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """A migrated template database, cloned cheaply for each test."""
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{_TEMPLATE}"'))
    except Exception as exc:
        admin.dispose()
        unavailable(f"PostgreSQL at {POSTGRES_URL}: {exc}")
    url = make_url(POSTGRES_URL).set(database=_TEMPLATE).render_as_string(hide_password=False)
    upgrade(url)
    dispose_engines()  # a template must have no open connections to be cloned
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{_TEMPLATE}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_template: str) -> Iterator[str]:
    name = f"folio_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"'))
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    yield url
    dispose_engines()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'folio.db'}"
    dispose_engines()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs on SQLite and on the local PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(name))


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's folio.toml or FOLIO_* variables, or writes to the user's
    data folder (~/.local/share/folio): state a test does not place goes under its tmp_path."""
    for key in list(os.environ):
        if key.startswith("FOLIO_") and not key.startswith(("FOLIO_TEST_", "FOLIO_SHARED")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("FOLIO_CONFIG", str(tmp_path / "absent-folio.toml"))
    monkeypatch.setenv("FOLIO_DATA_DIR", str(tmp_path / "folio-data"))


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real S3 API server process (moto's server mode) for the session: tests/s3_server.py."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as exc:
        unavailable(f"moto[server] and boto3 (the dev extra): {exc}")
    from tests.s3_server import S3Server

    with pytest.MonkeyPatch.context() as mp:
        _without_own_aws(mp)
        server = S3Server(tmp_path_factory.mktemp("s3") / "moto.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A second moto server, without IAM: somebody else's bucket, reached by pre-signed URLs."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as exc:
        unavailable(f"moto[server] and boto3 (the dev extra): {exc}")
    from tests.s3_server import S3Server

    with pytest.MonkeyPatch.context() as mp:
        _without_own_aws(mp)
        server = S3Server(tmp_path_factory.mktemp("s3open") / "moto.log", enforce_iam=False)
    yield server
    server.stop()


@pytest.fixture
def bucket(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket; this process reads it as the reader, through the AWS chain's variables."""
    _without_own_aws(monkeypatch)
    name = f"folio-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    for key, value in s3_server.reader.env(s3_server.endpoint).items():
        monkeypatch.setenv(key, value)
    return name


def _without_own_aws(mp: pytest.MonkeyPatch) -> None:
    """The developer's own AWS setup (profile, config files, session) stays out of the tests."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        mp.delenv(key, raising=False)
    mp.setenv("AWS_CONFIG_FILE", os.devnull)
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture
def prefix() -> Iterator[str]:
    """A queue prefix of our own; its Redis keys are deleted afterwards (never FLUSHALL)."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis at {REDIS_URL}: {exc}")
    name = unique_prefix()
    yield name
    keys = list(client.scan_iter(f"{name}:*"))
    if keys:
        client.delete(*keys)
    client.close()


def pytest_configure() -> None:
    """pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, which
    Rich reads once, when the CLI's module-level console is made: a test's own COLUMNS would be
    ignored. A worker drops them, as a plain pytest run has none."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for `make test`'s two workers (pytest-xdist, `--dist loadgroup`): the tests on the
    session's vLLM server (`vllm_endpoint`) run in one group, on one worker, in file order, so
    the server starts once and the test that kills it runs after the others, as in one process;
    the tests on the second session server (`dev_speculative_endpoint`) run in one group too,
    else each worker would start its own; every other module stays whole on one worker (its
    module fixtures made once). A module that starts a server of its own (one at a time) runs
    beside them: two or three servers at most, about 3.4 GB each."""

    def group(item: pytest.Item) -> str:
        if "vllm_endpoint" in item.fixturenames:
            return "vllm"
        if "dev_speculative_endpoint" in item.fixturenames:
            return "vllm-dev-speculative"
        return item.nodeid.split("::")[0]

    for item in items:
        item.add_marker(pytest.mark.xdist_group(group(item)))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the longest groups go out first
        items.sort(key=lambda item: LONGEST_FIRST.get(group(item), len(LONGEST_FIRST)))


# Groups handed out before the rest, longest first, as timed in a quiet CI run (2026-11-27):
# the session server's group (40% of the suite), then every other over 15 s. A long one that
# went out last left the other worker idle at the end: the speculative server's for 50 s when
# file order had it, test_train_memory.py's (27 s) for 21 s when only the servers' were listed.
LONGEST_FIRST = {
    group: rank
    for rank, group in enumerate(
        (
            "vllm",
            "tests/test_flywheel_smoke.py",
            "tests/test_distributed.py",
            "tests/test_bench_scale.py",
            "tests/test_corpus_run.py",
            "tests/test_alerts_live.py",  # 45-70 s alone on a loaded machine (2026-11-27)
            "vllm-dev-speculative",
            "tests/test_train_memory.py",
            "tests/test_resume.py",
            "tests/test_bench_gpu.py",
            "tests/test_storage_distributed.py",
            "tests/test_leases.py",
            "tests/test_api.py",
            "tests/test_page_path.py",
            "tests/test_train_dpo.py",
        )
    )
}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's controller, once per worker
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Stop, never run on, when the groups did not take: each worker would start a session vLLM
    server and kill its own (pytest 9.2 ignores how pytest-xdist 3.8 names its groups)."""
    if node.config.getvalue("dist") == "loadgroup" and ids and "@" not in ids[0]:
        pytest.exit("pytest-xdist --dist loadgroup did not group the tests", returncode=3)
