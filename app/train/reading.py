"""The gate's reading: one model answers the held-out pages greedily, in this process.

Each page is asked as the batch asked it (the exported chat prompt and image), decoded
greedily up to a token cap, and stopped the way Folio's engine stops a loop: the online
detector watches each answer as it grows and ends it at its first verdict. Pages are read a
few at a time (left-padded batches): one at a time, `generate` spends most of a GPU's time in
Python. The finished
answer is then judged by `score_output` (the online verdict plus the offline signals), so a
page counts as looped exactly when a batch's first attempt would have. Imports torch and
transformers (the `folio[train]` extra); only `app.train.run` imports it, after training.
"""

from __future__ import annotations

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
from app.train.trainer import load_model, release_memory

CHECK_EVERY = 8  # tokens between two looks of the detector (a loop runs on at most this much)


class LoopStop(StoppingCriteria):
    """Stops each answer of a batch at the online detector's first verdict on it."""

    def __init__(self, decode: Callable[[Any], str], prompt_tokens: int, rows: int, eos: set[int]):
        self._decode, self._start, self._eos = decode, prompt_tokens, eos
        self._detectors = [LoopDetector() for _ in range(rows)]
        self._fed = [""] * rows
        self.verdicts: list[LoopVerdict | None] = [None] * rows
        self.stopped_at: list[int | None] = [None] * rows  # tokens generated at the verdict
        self._ended = [False] * rows  # an end-of-sequence token came first

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        generated = input_ids.shape[1] - self._start
        for row in range(input_ids.shape[0]):
            if self.verdicts[row] is None and not self._ended[row]:
                self._look(row, input_ids[row, self._start :], generated)
        done = [verdict is not None for verdict in self.verdicts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    def _look(self, row: int, ids: Any, generated: int) -> None:
        if int(ids[-1]) in self._eos:
            self._ended[row] = True
        if generated % CHECK_EVERY and not self._ended[row]:
            return
        text = self._decode(ids).removesuffix("\ufffd")
        if text.startswith(self._fed[row]):
            self.verdicts[row] = self._detectors[row].feed(text[len(self._fed[row]) :])
            self._fed[row] = text
            if self.verdicts[row] is not None:
                self.stopped_at[row] = generated


def read_pages(
    model_dir: Path,
    processor: Any,
    pages: Sequence[GatePage],
    device: str,
    max_tokens: int,
    notify: Callable[[str], None] = print,
    batch: int = 8,
) -> list[PageReading]:
    """Every page read by the model in `model_dir`, `batch` at a time; the model is freed
    afterwards."""
    model = load_model(model_dir, device).eval()
    try:
        readings: list[PageReading] = []
        for first in range(0, len(pages), batch):
            readings += read_batch(
                model, processor, pages[first : first + batch], device, max_tokens
            )
            notify(f"gate: {model_dir.name}: {len(readings)} of {len(pages)} pages read")
        return readings
    finally:
        del model
        release_memory()


@torch.inference_mode()
def read_batch(
    model: Any, processor: Any, pages: Sequence[GatePage], device: str, max_tokens: int
) -> list[PageReading]:
    tokenizer = processor.tokenizer
    tokenizer.padding_side = "left"  # the answers start where the prompts end, in every row
    texts = [
        processor.apply_chat_template(p.prompt, add_generation_prompt=True, tokenize=False)
        for p in pages
    ]
    images = [Image.open(path).convert("RGB") for page in pages for path in page.images]
    inputs = processor(text=texts, images=images, return_tensors="pt", padding=True).to(device)
    start = int(inputs["input_ids"].shape[1])
    eos = _ids(model.generation_config.eos_token_id) | _ids(tokenizer.eos_token_id)

    def decode(ids: Any) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=True))

    stop = LoopStop(decode, start, len(pages), eos)
    output = model.generate(
        **inputs,
        max_new_tokens=max_tokens,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        stopping_criteria=StoppingCriteriaList([stop]),
    )
    return [
        _reading(page, output[row, start:], stop, row, eos, decode, max_tokens)
        for row, page in enumerate(pages)
    ]


def _reading(
    page: GatePage,
    ids: Any,
    stop: LoopStop,
    row: int,
    eos: set[int],
    decode: Callable[[Any], str],
    max_tokens: int,
) -> PageReading:
    """One row's answer: cut where it ended (its verdict, its end-of-sequence token, or the
    cap), judged as a batch's first attempt is."""
    listed = [int(t) for t in ids]
    ended = next((n + 1 for n, token in enumerate(listed) if token in eos), None)
    tokens = stop.stopped_at[row] or ended or len(listed)
    said = decode(ids[:tokens])
    verdict = stop.verdicts[row]
    finish = "loop" if verdict else ("stop" if ended else "length")
    score = score_output(said, finish, tokens, max_tokens)
    looped = verdict is not None or score.degenerate
    kind = (verdict.kind if verdict else score.kind) if looped else None
    return PageReading(page.key, looped, kind, cer(said, page.answer), tokens)


def _ids(value: Any) -> set[int]:
    if value is None:
        return set()
    return {int(v) for v in value} if isinstance(value, list | tuple) else {int(value)}
