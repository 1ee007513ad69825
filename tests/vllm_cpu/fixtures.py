"""Fixtures for tests that need a real vLLM server.

`vllm_endpoint` uses the server at FOLIO_VLLM_URL when set (e.g. one shared server that
CI started with serve.sh), else starts one for the whole test session with VllmServer. Without the
venv or the tiny model the tests skip, or fail when CI or FOLIO_REQUIRE_VLLM=1 is set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.vllm_cpu.server import VllmEndpoint, VllmServer, missing_prerequisites, root_url_of


def vllm_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("FOLIO_REQUIRE_VLLM") == "1"


@pytest.fixture(scope="session")
def vllm_endpoint() -> Iterator[VllmEndpoint]:
    url = os.environ.get("FOLIO_VLLM_URL")
    if url:
        yield VllmEndpoint(root_url=root_url_of(url))
        return
    reason = missing_prerequisites()
    if reason:
        if vllm_required():
            pytest.fail(f"vLLM server required (CI or FOLIO_REQUIRE_VLLM=1): {reason}")
        pytest.skip(reason)
    with VllmServer() as server:
        yield VllmEndpoint(root_url=server.root_url, server=server)
