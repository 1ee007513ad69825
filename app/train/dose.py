"""How many pairs a training run needs, from the flywheel bench's dose curve.

`python -m bench flywheel-dose` trains plain DPO at 36, 100 and 300 of a batch's own loops,
three training seeds each, on the committed flywheel base, and reads every tuned model on the
same 1,200 held-out pages (bench/results/flywheel_dose.json, docs/training.md). Below the
recommended dose the training seed moved the loop rate more than the method did (36 pairs:
11.5 / 8.7 / 3.6% by seed against the base's 7.8%), so a run there is a draw, not a result.
"""

from __future__ import annotations

from typing import Any

RECOMMENDED_PAIRS = 300  # the curve's top dose


def dose_note(pairs: int) -> dict[str, Any]:
    """The training card's `dose`: the pairs trained on against the dose the curve needs."""
    return {"pairs": pairs, "recommended": RECOMMENDED_PAIRS, "below": pairs < RECOMMENDED_PAIRS}


def dose_warning(pairs: int) -> str | None:
    """What a person is told before a run below the recommended dose."""
    if pairs >= RECOMMENDED_PAIRS:
        return None
    return (
        f"{pairs} training pairs, below the {RECOMMENDED_PAIRS} the flywheel bench's dose curve "
        "needs: below it the training seed moved the loop rate more than training did. Export "
        "more jobs' loops, or train several seeds (--seeds 3) and let the gate choose."
    )
