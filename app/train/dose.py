"""How many pairs a training run needs, from the flywheel bench's dose curve.

`python -m bench flywheel-dose` trains on 36, 100 and 300 of a batch's own loops, three training
seeds each, on the committed flywheel base, and reads every tuned model on the same 1,200
held-out pages (docs/training.md; bench/results/flywheel_dose.json). With the default loss (DPO
plus the SFT term on the chosen side) and 2 epochs, against the base's 7.67% first-attempt
loops: 36 pairs (18 steps) 9.75 / 9.58 / 8.25% by seed, worse in every seed; 100 pairs (50
steps) 0.25% in every seed; 300 pairs (150 steps) 0.33 / 0.17 / 0.33%. Plain DPO was a draw
even at 300 (0.0 / 11.8 / 12.3%). So the recommended dose is the lowest at which every seed
held; the curve has no point between 36 and 100, and pairs and steps grew together.
"""

from __future__ import annotations

from typing import Any

RECOMMENDED_PAIRS = 100  # the lowest dose of the curve at which every seed cut the loops


def dose_note(pairs: int) -> dict[str, Any]:
    """The training card's `dose`: the pairs trained on against the dose the curve needs."""
    return {"pairs": pairs, "recommended": RECOMMENDED_PAIRS, "below": pairs < RECOMMENDED_PAIRS}


def dose_warning(pairs: int) -> str | None:
    """What a person is told before a run below the recommended dose."""
    if pairs >= RECOMMENDED_PAIRS:
        return None
    return (
        f"{pairs} training pairs, below the {RECOMMENDED_PAIRS} at which every training seed "
        "of the flywheel bench's recipe (DPO with the SFT term) cut the loops; at 36 every seed "
        "looped more than the base. Export more jobs' loops, and train several seeds "
        "(--seeds 3) so the gate chooses."
    )
