"""Why a tuned model loops less, or not: its readings of the validation pairs beside the base's.

For each validation pair (pages never trained on) the tuned model and the base score the chosen
and the rejected answer (the sum of the completion's token log-probabilities, the answer as the
pair holds it, without an end token), giving DPO's implicit reward margin
`beta * ((tuned - base)(chosen) - (tuned - base)(rejected))` and its accuracy (margin > 0),
and the mean log-probability of the loop's first period right at its onset given the text
before it (`rejected_verdict.onset` and `.period`, characters; the base's tokens are bytes), so
a run that learned to avoid the loop shows it there, and one that only moved other text does
not.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean, median
from typing import Any

VALIDATION = "pairs/truth-validation/train.jsonl"
SIDES = ("chosen", "rejected")


def diagnose(work: Path, label: str, beta: float) -> dict[str, Any]:
    rows = [json.loads(line) for line in (work / VALIDATION).read_text("utf-8").splitlines()]
    if not rows:
        return {"pairs": 0}
    base = _Scorer(work / "models" / "base")
    tuned = _Scorer(work / "models" / label)
    margins, onsets, chosen, rejected = [], [], [], []
    for row in rows:
        (tc, bc), (tr, br) = [(tuned.score(row, s), base.score(row, s)) for s in SIDES]
        margins.append(beta * ((tc - bc) - (tr - br)))
        chosen.append(tc - bc)
        rejected.append(tr - br)
        at = onset_span(row)
        if at is not None:
            onsets.append((tuned.mean_logprob(row, *at), base.mean_logprob(row, *at)))
    moved = [t - b for t, b in onsets]
    return {
        "pairs": len(rows),
        "reward_margin_mean": round(fmean(margins), 4),
        "reward_accuracy": round(sum(m > 0 for m in margins) / len(margins), 4),
        # each side's summed log-probability, tuned minus base: DPO may widen the gap by
        # lowering both, which an SFT term on the chosen side is there to stop
        "chosen_change_mean": round(fmean(chosen), 4),
        "rejected_change_mean": round(fmean(rejected), 4),
        "onset_pairs": len(onsets),
        "onset_logprob_base": round(fmean(b for _, b in onsets), 4) if onsets else None,
        "onset_logprob_tuned": round(fmean(t for t, _ in onsets), 4) if onsets else None,
        "onset_logprob_change_median": round(median(moved), 4) if moved else None,
        "onset_less_likely_share": round(sum(m < 0 for m in moved) / len(moved), 4)
        if moved
        else None,
    }


def onset_span(row: dict[str, Any]) -> tuple[int, int] | None:
    """The rejected answer's loop onset and the end of its first period (characters)."""
    verdict = row["metadata"].get("rejected_verdict") or {}
    start, period = verdict.get("onset"), verdict.get("period")
    if start is None or not period:
        return None
    return int(start), int(start) + int(period)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


class _Scorer:
    """One model in float32 on the CPU, scoring completions of the pairs' prompts."""

    def __init__(self, folder: Path) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.processor = AutoProcessor.from_pretrained(folder)
        self.model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
        self.model.eval()
        self.folder = folder.parent.parent  # the work folder: images are relative to pairs/

    def _logprobs(self, row: dict[str, Any], prefix: str, span: str) -> list[float]:
        """Log-probabilities of the tokens of `span` after the prompt and `prefix`."""
        import torch
        from PIL import Image

        image = Image.open(self._image(row)).convert("RGB")
        prompt = self.processor.apply_chat_template(
            row["prompt"], add_generation_prompt=True, tokenize=False
        )
        head = self.processor(text=[prompt + prefix], images=[image], return_tensors="pt")
        full = self.processor(text=[prompt + prefix + span], images=[image], return_tensors="pt")
        ids = full["input_ids"]
        start = head["input_ids"].shape[1]
        with torch.no_grad():
            logits = self.model(**full).logits[0, :-1].float()
        picked = torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None])[:, 0]
        return [float(x) for x in picked[start - 1 :]]

    def _image(self, row: dict[str, Any]) -> Path:
        found = sorted(self.folder.glob(f"pairs/*/{row['images'][0]}"))
        return found[0]

    def score(self, row: dict[str, Any], side: str) -> float:
        return sum(self._logprobs(row, "", _text(row[side][0])))

    def mean_logprob(self, row: dict[str, Any], start: int, end: int) -> float:
        rejected = _text(row["rejected"][0])
        values = self._logprobs(row, rejected[:start], rejected[start:end])
        return fmean(values) if values else 0.0
