"""Fixtures for tests that need a real vLLM server.

`vllm_endpoint` uses the server at FOLIO_VLLM_URL when set (e.g. one shared server that
CI started with serve.sh), else starts one for the whole test session with VllmServer. Without the
venv or the tiny model the tests skip, or fail when CI or FOLIO_REQUIRE_VLLM=1 is set.

The session's server traces its close path (trace_site: logging only, nothing else changes) so
that the close test needs no server of its own, and the one test that kills a server kills this
one, last of its tests, and starts it again on the same port. Only tests that need what a request cannot choose start
their own: vLLM's dev routes (an environment variable), speculative decoding (a server flag),
another model (a trained one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vllm_cpu.server import VllmEndpoint, VllmServer, missing_prerequisites, root_url_of

TRACE_SITE = Path(__file__).parent / "trace_site"


def trace_env(log: Path) -> dict[str, str]:
    """The environment that makes a server trace its close path into `log`."""
    return {"PYTHONPATH": str(TRACE_SITE), "FOLIO_TRACE_LOG": str(log)}


def vllm_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("FOLIO_REQUIRE_VLLM") == "1"


@pytest.fixture(scope="session")
def vllm_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmEndpoint]:
    url = os.environ.get("FOLIO_VLLM_URL")
    if url:
        yield VllmEndpoint(root_url=root_url_of(url))
        return
    reason = missing_prerequisites()
    if reason:
        if vllm_required():
            pytest.fail(f"vLLM server required (CI or FOLIO_REQUIRE_VLLM=1): {reason}")
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("vllm-trace") / "close-path.jsonl"
    with VllmServer(env=trace_env(log)) as server:
        yield VllmEndpoint(root_url=server.root_url, server=server, trace_log=log)
