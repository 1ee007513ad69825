"""Retry strategies to compare with `folio eval --strategies ENDPOINT`: the same greedy first
attempt, then each family's way of retrying a page that looped. No fallback engine, so
"recovered" means recovered by the VLM itself."""

from __future__ import annotations

from app.errors import ConfigError
from app.evaluate.arms import Arm
from app.settings import PlanStep, Settings

# olmOCR's pipeline raises the temperature on each retry of a page.
OLMOCR_TEMPERATURES = (0.1, 0.2, 0.3, 0.5, 0.8)
# DeepSeek-OCR's recipe: no repeated 20-gram within the last 90 tokens, table cells exempt.
GUARD_NGRAM, GUARD_WINDOW = 20, 90


def strategy_plans(endpoint: str) -> dict[str, list[PlanStep]]:
    def vlm(name: str, **decoding: float | int) -> PlanStep:
        return PlanStep(name=name, engine="vlm", endpoint=endpoint, **decoding)  # type: ignore[arg-type]

    greedy = vlm("greedy", temperature=0.0)
    return {
        "greedy-only": [greedy],
        "repetition-penalty": [
            greedy,
            vlm("penalized", temperature=0.3, repetition_penalty=1.15, seed=1234),
        ],
        "temperature-ladder": [
            greedy,
            *(
                vlm(f"t{t}", temperature=t, seed=1234 + i)
                for i, t in enumerate(OLMOCR_TEMPERATURES)
            ),
        ],
        "ngram-guard": [
            greedy,
            vlm("guarded", temperature=0.0, ngram_guard=GUARD_NGRAM, ngram_window=GUARD_WINDOW),
        ],
    }


def with_strategies(settings: Settings, endpoint: str) -> tuple[Settings, list[Arm]]:
    """`settings` with the strategy plans added (as `strategy:NAME`), and one arm per strategy."""
    if endpoint not in settings.vlm_endpoints:
        known = sorted(settings.vlm_endpoints)
        raise ConfigError(f"--strategies: unknown endpoint {endpoint!r} ({known})")
    plans = {f"strategy:{name}": steps for name, steps in strategy_plans(endpoint).items()}
    arms = [Arm(name.removeprefix("strategy:"), name) for name in plans]
    return settings.model_copy(update={"plans": {**settings.plans, **plans}}), arms
