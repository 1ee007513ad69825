"""The gate's reading: one model answers the held-out pages greedily, in this process.

Each page is asked as the batch asked it (the exported chat prompt and image), decoded
greedily up to a token cap, and stopped the way Folio's engine stops a loop: the online
detector watches the text as it grows and ends the answer at its first verdict. The finished
answer is then judged by `score_output` (the online verdict plus the offline signals), so a
page counts as looped exactly when a batch's first attempt would have. Imports torch and
transformers (the `folio[train]` extra); only `app.train.run` imports it, after training.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import StoppingCriteria, StoppingCriteriaList

from app.degeneration import LoopDetector, LoopVerdict, score_output
from app.evaluate.quality import cer
from app.train.gate import PageReading
from app.train.gate_pages import GatePage
from app.train.trainer import load_model

CHECK_EVERY = 8  # tokens between two looks of the detector (a loop runs on at most this much)


class LoopStop(StoppingCriteria):
    """Stops one greedy answer at the online detector's first verdict."""

    def __init__(self, decode: Callable[[Any], str], prompt_tokens: int) -> None:
        self._decode, self._start = decode, prompt_tokens
        self._detector, self._fed = LoopDetector(), ""
        self.verdict: LoopVerdict | None = None

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        generated = input_ids.shape[1] - self._start
        if self.verdict is None and generated % CHECK_EVERY == 0:
            text = self._decode(input_ids[0, self._start :]).removesuffix("\ufffd")
            if text.startswith(self._fed):
                self.verdict = self._detector.feed(text[len(self._fed) :])
                self._fed = text
        return torch.full((input_ids.shape[0],), self.verdict is not None, dtype=torch.bool)


def read_pages(
    model_dir: Path,
    processor: Any,
    pages: Sequence[GatePage],
    device: str,
    max_tokens: int,
    notify: Callable[[str], None] = print,
) -> list[PageReading]:
    """Every page read by the model in `model_dir`; the model is freed afterwards."""
    model = load_model(model_dir, device).eval()
    try:
        readings = []
        for number, page in enumerate(pages, start=1):
            readings.append(read_page(model, processor, page, device, max_tokens))
            if number % 25 == 0:
                notify(f"gate: {model_dir.name}: {number} of {len(pages)} pages read")
        return readings
    finally:
        del model
        gc.collect()


@torch.inference_mode()
def read_page(
    model: Any, processor: Any, page: GatePage, device: str, max_tokens: int
) -> PageReading:
    text = processor.apply_chat_template(page.prompt, add_generation_prompt=True, tokenize=False)
    images = [Image.open(p).convert("RGB") for p in page.images]
    inputs = processor(text=[text], images=images, return_tensors="pt").to(device)
    start = int(inputs["input_ids"].shape[1])
    tokenizer = processor.tokenizer

    def decode(ids: Any) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=True))

    stop = LoopStop(decode, start)
    output = model.generate(
        **inputs,
        max_new_tokens=max_tokens,
        do_sample=False,
        stopping_criteria=StoppingCriteriaList([stop]),
    )
    ids = output[0, start:]
    tokens = int(ids.shape[0])
    said = decode(ids)
    ended = bool(tokens) and int(ids[-1]) == tokenizer.eos_token_id
    finish = "stop" if ended else ("loop" if stop.verdict else "length")
    score = score_output(said, finish, tokens, max_tokens)
    kind = stop.verdict.kind if stop.verdict else score.kind
    looped = stop.verdict is not None or score.degenerate
    return PageReading(page.key, looped, kind if looped else None, cer(said, page.answer), tokens)
