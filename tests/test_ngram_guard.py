"""The decode-time guard: a windowed no-repeat n-gram ban run by Folio's vLLM plugin, asked
for per request by a plan step (`ngram_guard`), with table-cell markup exempt."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from PIL import Image
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app
from app.db.engine import Database
from app.db.models import Attempt
from app.domain import PageInput
from app.engines.vlm import VlmEngine
from app.pdf import samples
from app.report.load import load_job_rows
from app.settings import PlanStep, VlmEndpoint
from app.vllm_plugin.behaviours import LOOP_STOP_ARG, behaviours_for
from app.vllm_plugin.guard import GUARD_ARG, WHITELIST_ARG, WINDOW_ARG, NgramGuard
from tests.vllm_cpu.images import page_image_data_url
from tests.vllm_cpu.profiles import TINY_PROFILE
from tests.vllm_cpu.server import VllmEndpoint


class CharTokenizer:
    """One token per character (id = code point)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


def feed(guard: NgramGuard, text: str) -> frozenset[int]:
    banned: frozenset[int] = frozenset()
    for ch in text:
        banned = guard.step([ord(ch)], ch).banned
    return banned


def test_the_token_that_would_repeat_an_ngram_is_banned() -> None:
    guard = NgramGuard(3, window=64, whitelist=[])
    assert feed(guard, "abcxab") == {ord("c")}, "'ab' was followed by 'c': 'abc' again is banned"
    assert NgramGuard(3, 64, []).step([1, 2], "").banned == frozenset()


def test_only_the_recent_window_counts() -> None:
    far = NgramGuard(3, window=8, whitelist=[])
    assert feed(far, "abc" + "0123456" + "ab") == frozenset(), "'abc' left the 8-token window"
    near = NgramGuard(3, window=16, whitelist=[])
    assert feed(near, "abc" + "0123456" + "ab") == {ord("c")}


def test_table_markup_is_never_banned() -> None:
    guard = NgramGuard(2, window=64, whitelist=["|"])
    guard.bind_tokenizer(CharTokenizer())
    assert feed(guard, "a|b|a") == frozenset(), "'a|' repeats, but '|' is table markup"
    assert feed(guard, "xyx") == {ord("y")}


def test_requests_opt_in_with_their_args() -> None:
    assert behaviours_for({LOOP_STOP_ARG: 1}) and not any(
        isinstance(b, NgramGuard) for b in behaviours_for({LOOP_STOP_ARG: 1})
    )
    (guard,) = behaviours_for({GUARD_ARG: 20, WINDOW_ARG: 90, WHITELIST_ARG: ["<td>"]})
    assert isinstance(guard, NgramGuard) and (guard.n, guard.window) == (20, 90)
    assert guard.whitelist_text == ("<td>",)
    (default,) = behaviours_for({GUARD_ARG: "4"})
    assert isinstance(default, NgramGuard) and "</td>" in default.whitelist_text
    assert behaviours_for({GUARD_ARG: 0}) == []
    for bad in ({GUARD_ARG: 1}, {GUARD_ARG: 8, WINDOW_ARG: 4}, {GUARD_ARG: "x"}):
        with pytest.raises(ValueError):
            behaviours_for(bad)


def test_a_plan_step_sends_the_guard_with_its_request() -> None:
    endpoint = VlmEndpoint(base_url="http://127.0.0.1:9/v1", model="m", engine_plugin="off")
    engine = VlmEngine("p", endpoint)
    guarded = PlanStep(name="g", engine="vlm", endpoint="p", ngram_guard=20, ngram_window=90)
    body = engine.request_body(_page(), guarded)
    assert body["vllm_xargs"] == {GUARD_ARG: 20, WINDOW_ARG: 90}
    plain = engine.request_body(_page(), PlanStep(name="p", engine="vlm", endpoint="p"))
    assert "vllm_xargs" not in plain
    assert guarded.sampling() == {"ngram_guard": 20, "ngram_window": 90}


def _page() -> PageInput:
    return PageInput(
        raster=Image.new("RGB", (64, 64), "white"), text_layer="", text_layer_usable=False
    )


def token_ids(endpoint: VllmEndpoint, xargs: dict[str, object] | None) -> list[int]:
    body: dict[str, object] = {
        "model": endpoint.model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": page_image_data_url(560, 792)}},
                    {"type": "text", "text": "Transcribe the text on this page."},
                ],
            }
        ],
        "temperature": 0,
        "max_tokens": 160,
        "logprobs": True,
        "return_tokens_as_token_ids": True,
    }
    if xargs:
        body["vllm_xargs"] = xargs
    # a cap, not a timing: under load the reniced engine took over 120 s for these 160 tokens
    response = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=600)
    response.raise_for_status()
    content = response.json()["choices"][0]["logprobs"]["content"]
    return [int(item["token"].split(":", 1)[1]) for item in content]


def repeats(ids: list[int], n: int, window: int, exempt: set[int]) -> int:
    """Positions whose token completes an n-gram seen in the `window` tokens before it."""
    count = 0
    for end in range(n, len(ids) + 1):
        gram, start = ids[end - n : end], max(0, end - 1 - window)
        earlier = {tuple(ids[i : i + n]) for i in range(start, end - n)}
        count += tuple(gram) in earlier and gram[-1] not in exempt
    return count


@pytest.mark.vllm
def test_greedy_loops_and_the_guard_stops_exact_repeats(vllm_endpoint: VllmEndpoint) -> None:
    plain = token_ids(vllm_endpoint, None)
    guarded = token_ids(vllm_endpoint, {GUARD_ARG: 4, WINDOW_ARG: 64, WHITELIST_ARG: []})
    assert repeats(plain, 4, 64, set()) > 50, "greedy on the tiny model loops"
    assert repeats(guarded, 4, 64, set()) == 0
    assert len(guarded) == 160 and guarded[:3] == plain[:3], "same decoding until a repeat"
    # The default whitelist (table markup) is encoded with the served tokenizer in the engine.
    with_markup_exempt = token_ids(vllm_endpoint, {GUARD_ARG: 4, WINDOW_ARG: 64})
    assert len(with_markup_exempt) == 160
    assert token_ids(vllm_endpoint, None) == plain, "the engine is still up and deterministic"


@pytest.mark.vllm
def test_eval_compares_retry_strategies_on_the_same_pages(
    vllm_endpoint: VllmEndpoint, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    pages = [samples.page_text(n, paragraphs=1) for n in (1, 2)]
    (folder / "scan.pdf").write_bytes(samples.scanned_pdf(pages))
    endpoint = {
        "base_url": vllm_endpoint.base_url,
        "model": vllm_endpoint.model,
        "max_tokens": 300,
        "profile": TINY_PROFILE.id,  # the random model's answers at the cap count as healthy
    }
    env = {
        "FOLIO_DATABASE_URL": f"sqlite:///{tmp_path / 'folio.db'}",
        "FOLIO_VLM_ENDPOINTS": json.dumps({"primary": endpoint}),
        "FOLIO_PROFILES": json.dumps({TINY_PROFILE.id: TINY_PROFILE.model_dump()}),
    }
    args = ["eval", str(folder), "--strategies", "primary", "--out", str(tmp_path / "eval")]
    result = CliRunner(env=env).invoke(app, args)
    assert result.exit_code == 0, result.output
    arms = {
        a["label"]: a for a in json.loads((tmp_path / "eval" / "eval.json").read_text())["arms"]
    }
    assert list(arms) == ["greedy-only", "repetition-penalty", "temperature-ladder", "ngram-guard"]
    db = Database(env["FOLIO_DATABASE_URL"])
    for label, arm in arms.items():
        assert arm["pages"] == 2 and arm["degeneration_rate_first_attempt"] == 1.0, label
        rows = load_job_rows(db, arm["job_id"])
        assert arm["attempts"] == len(rows.attempts)
        retried_ok = {
            a.page_id for a in rows.attempts if a.step_name != "greedy" and a.status == "ok"
        }
        assert arm["pages_recovered"] == len(retried_ok), label
        still_looping = arm["degeneration_rate_final"] * 2
        assert still_looping == pytest.approx(2 - len(retried_ok)) or arm["pages_failed"], label
    assert arms["greedy-only"]["attempts"] == 2
    with db.session() as session:
        guarded = session.scalars(
            select(Attempt.params).where(
                Attempt.job_id == arms["ngram-guard"]["job_id"], Attempt.step_name == "guarded"
            )
        ).all()
    assert guarded and all(p["vllm_xargs"][GUARD_ARG] == 20 for p in guarded)
