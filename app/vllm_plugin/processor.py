"""The vLLM V1 logits processor that hosts Folio's per-request behaviours.

Loaded by vLLM through the `vllm.logits_processors` entry point (or `--logits-processors
app.vllm_plugin.processor:FolioLogitsProcessor` when not installed as a package). It sees
token ids only, so each opted-in request gets an incremental detokeniser over the served
model's tokenizer; every step the new text goes to the request's behaviours, and a request
whose behaviour says `end` gets only EOS left possible on that very step. Requests that do
not ask cost one dictionary lookup when they join the batch.

Needs the V1 logits-processor interface: on GPU, vLLM 0.32's Model Runner V2 refuses it, so
serve with VLLM_USE_V2_MODEL_RUNNER=0. Not usable with speculative decoding (vLLM refuses
custom logits processors there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from vllm.logger import init_logger
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from app.vllm_plugin.behaviours import (
    NO_ACTION,
    RequestBehaviour,
    StepAction,
    behaviours_for,
    combine,
)
from app.vllm_plugin.detokenize import Decoding, IncrementalDetokenizer

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

logger = init_logger(__name__)


@dataclass
class _Request:
    output_ids: list[int]  # vLLM's live list of the request's output tokens
    text: IncrementalDetokenizer
    behaviours: list[RequestBehaviour]
    eos_token_id: int
    seen: int = 0
    action: StepAction = field(default=NO_ACTION)

    def advance(self) -> None:
        ids = self.output_ids
        end = len(ids)
        # Async scheduling may hold placeholders (< 0) for tokens not sampled yet.
        while end > self.seen and ids[end - 1] < 0:
            end -= 1
        if end <= self.seen:
            return
        new_ids = ids[self.seen : end]
        new_text = self.text.push(ids[:end] if end < len(ids) else ids)
        self.seen = end
        self.action = combine([b.step(new_ids, new_text) for b in self.behaviours])


class FolioLogitsProcessor(LogitsProcessor):
    """Runs the behaviours a request asks for in its `vllm_xargs` (see `behaviours`)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        if behaviours_for(sampling_params.extra_args) and sampling_params.ignore_eos:
            raise ValueError("Folio's loop stop ends a request with EOS: drop ignore_eos")

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool):
        self._model_config = vllm_config.model_config
        self._tokenizer: Decoding | None = None
        self._eos_fallback: int | None = None
        self._requests: dict[int, _Request] = {}

    def is_argmax_invariant(self) -> bool:
        return False  # forcing EOS changes the greedy choice

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is not None:
            self._apply_batch_update(batch_update)
        for request in self._requests.values():
            request.advance()

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, request in self._requests.items():
            action = request.action
            if action.end:
                logits[index] = float("-inf")
                logits[index, request.eos_token_id] = 0.0
            elif action.banned:
                logits[index, list(action.banned)] = float("-inf")
        return logits

    def _apply_batch_update(self, update: BatchUpdate) -> None:
        requests = self._requests
        for index in update.removed:
            requests.pop(index, None)
        for index, params, _prompt_ids, output_ids in update.added:
            request = self._new_request(params, output_ids)
            if request is None:
                requests.pop(index, None)
            else:
                requests[index] = request
        for a, b, direction in update.moved:
            moved_a, moved_b = requests.pop(a, None), requests.pop(b, None)
            if moved_a is not None:
                requests[b] = moved_a
            if moved_b is not None and direction == MoveDirectionality.SWAP:
                requests[a] = moved_b

    def _new_request(self, params: SamplingParams, output_ids: list[int]) -> _Request | None:
        behaviours = behaviours_for(params.extra_args)
        if not behaviours:
            return None
        tokenizer = self._ensure_tokenizer()
        eos = params.eos_token_id
        if eos is None:
            eos = min(params.all_stop_token_ids, default=self._eos_fallback)
        if eos is None:
            logger.warning("Folio plugin: no EOS token known for a request; left unchanged")
            return None
        for behaviour in behaviours:  # e.g. the n-gram guard's whitelist, as token ids
            bind = getattr(behaviour, "bind_tokenizer", None)
            if bind is not None:
                bind(tokenizer)
        request = _Request(output_ids, IncrementalDetokenizer(tokenizer), behaviours, eos)
        request.advance()  # a resumed (preempted) request already has output
        return request

    def _ensure_tokenizer(self) -> Decoding:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            config: Any = self._model_config
            tokenizer = AutoTokenizer.from_pretrained(
                config.tokenizer,
                revision=config.tokenizer_revision,
                trust_remote_code=config.trust_remote_code,
            )
            self._eos_fallback = getattr(tokenizer, "eos_token_id", None)
            # The Rust tokenizer under a fast tokenizer decodes at a third of the cost of
            # transformers' wrapper, which runs for every opted-in request at every step.
            backend = getattr(tokenizer, "backend_tokenizer", None)
            self._tokenizer = _RustDecoding(backend) if backend is not None else tokenizer
        return self._tokenizer


class _RustDecoding:
    def __init__(self, backend: Any) -> None:
        self._decode = backend.decode

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return str(self._decode(list(token_ids), skip_special_tokens=skip_special_tokens))
