"""How many pairs a training run needs, from the flywheel bench's dose curve.

`python -m bench flywheel-dose` trains plain DPO at 36, 100 and 300 of a batch's own loops,
three training seeds each, on the committed flywheel base, and reads every tuned model on the
same 1,200 held-out pages (docs/training.md; the study so far in
bench/results/flywheel_dose_partial.json.gz). Below the recommended dose the training seed moved
the loop rate more than the method did (36 pairs: 11.5 / 8.7 / 3.6% by seed against the base's
7.8%), and at it too (300 pairs at the learning rate the validation pages chose: 0.0% with
one seed, 11.8% and 12.3% with the other two, against 7.7%), so plain DPO is a draw. DPO with
an SFT term on the chosen side (`--sft-weight 1`, the default), same pairs and steps: 0.33%,
0.17% and 0.33% with the three seeds; several seeds with the gate choosing stays the safe way.
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
        f"{pairs} training pairs, below the {RECOMMENDED_PAIRS} at which every training seed "
        "of the flywheel bench's recipe (DPO with the SFT term) cut the loops; below it the seed "
        "moved the loop rate more than training did. Export more jobs' loops, and train "
        "several seeds (--seeds 3) so the gate chooses."
    )
