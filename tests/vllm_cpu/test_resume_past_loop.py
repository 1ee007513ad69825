"""A retry that resumes past the loop on the vLLM CPU server (issue 51 part 5).

vLLM's chat API continues the assistant turn Folio sends (`continue_final_message`): the
scripted server writes the rest of a real healthy page after the text the looping read kept,
and the joined answer is the page, for fewer generated tokens than reading it again.
"""

from __future__ import annotations

import pytest

from app.settings import VlmEndpoint
from bench.false_alarms.resume import Continuing, one_page, pages
from bench.scripted import require_scripted_server
from tests.vllm_cpu.server import SERVED_MODEL_NAME, VllmEndpoint

pytestmark = pytest.mark.vllm


def test_a_resumed_retry_writes_only_the_rest_of_the_page(vllm_endpoint: VllmEndpoint) -> None:
    require_scripted_server(vllm_endpoint.base_url, SERVED_MODEL_NAME)
    endpoint = VlmEndpoint(
        base_url=vllm_endpoint.base_url,
        model=SERVED_MODEL_NAME,
        max_image_side=256,
        server_repetition_detection=False,
    )
    engine = Continuing("primary", endpoint)
    try:
        page = pages(1)[1]  # the loop half way down a real healthy page
        row = one_page(engine, page)
    finally:
        engine.close()
    assert row is not None, "the looping read was not cut"
    full, resumed = row["full"], row["resume"]
    assert full["answer_is_the_page"] and resumed["answer_is_the_page"], row
    assert (full["status"], resumed["status"]) == ("ok", "ok")
    # it generated only the page after the kept text, which it read as prompt instead
    assert resumed["completion_tokens"] < full["completion_tokens"]
    assert resumed["prompt_tokens"] > full["prompt_tokens"]
