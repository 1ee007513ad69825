"""Fixtures for tests that need a real vLLM server.

`vllm_endpoint` uses the server at FOLIO_VLLM_URL when set (e.g. one shared server that
CI started with serve.sh), else starts one for the whole test session with VllmServer. Without the
venv or the tiny model the tests skip, or fail when CI or FOLIO_REQUIRE_VLLM=1 is set.

The session's server traces its close path (server_site/close_trace.py: logging only, nothing
else changes) so that the close test needs no server of its own, and the one test that kills a
server kills this one, last of its tests, and starts it again on the same port.

What a request cannot choose takes a server of its own: `dev_speculative_endpoint` is one
server, for the session, with vLLM's dev routes (an environment variable) and speculative
decoding (a server flag), shared by the abort-route tests and the plugin-liveness tests; and
another model (a trained one) takes its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vllm_cpu.server import VllmEndpoint, VllmServer, missing_prerequisites, root_url_of


def trace_env(log: Path) -> dict[str, str]:
    """The environment that makes a server trace its close path into `log`
    (server_site/close_trace.py)."""
    return {"FOLIO_TRACE_LOG": str(log)}


# n-gram speculation: in vLLM 0.32 it drops entry-point logits processors from the engine
# while the API server still validates their args (test_stop_liveness).
SPECULATIVE = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}


def vllm_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("FOLIO_REQUIRE_VLLM") == "1"


def require_prerequisites() -> None:
    reason = missing_prerequisites()
    if reason:
        if vllm_required():
            pytest.fail(f"vLLM server required (CI or FOLIO_REQUIRE_VLLM=1): {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def vllm_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmEndpoint]:
    url = os.environ.get("FOLIO_VLLM_URL")
    if url:
        yield VllmEndpoint(root_url=root_url_of(url))
        return
    require_prerequisites()
    log = tmp_path_factory.mktemp("vllm-trace") / "close-path.jsonl"
    with VllmServer(env=trace_env(log)) as server:
        yield VllmEndpoint(root_url=server.root_url, server=server, trace_log=log)


@pytest.fixture(scope="session")
def dev_speculative_endpoint() -> Iterator[VllmEndpoint]:
    """A second server: vLLM's dev routes (POST /abort_requests) and speculative decoding,
    so Folio's plugin is installed there but blind. The two do not meet in what the tests
    check: an abort ends a request whatever decodes it, and the tests of the blind plugin pin
    the abort call off where the engine would otherwise rely on it."""
    require_prerequisites()
    args = ["--speculative-config", json.dumps(SPECULATIVE)]
    with VllmServer(extra_args=args, env={"VLLM_SERVER_DEV_MODE": "1"}) as server:
        yield VllmEndpoint(root_url=server.root_url, server=server)
