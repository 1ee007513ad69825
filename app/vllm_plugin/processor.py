"""The vLLM V1 logits processor that hosts Folio's per-request behaviours.

Optional on a GPU server: Folio's default loop stop is its own client (docs/loop-stop-gpu.md).
Where it is used on a GPU it must be named on the command line, `--logits-processors
app.vllm_plugin.processor:FolioLogitsProcessor`: under async scheduling (vLLM's GPU default)
vLLM writes the real token ids into the output lists only for processors named there
(gpu_model_runner.py:697-736), and an entry-point instance alone would see `-1` placeholders
for ever. So an instance refuses to start where it would be blind (async scheduling, not
named on the command line) and where vLLM would drop it (speculative decoding); installed both
by entry point and by flag, only the last instance built does the work. Model Runner V2
refuses V1-interface processors by itself: serve with VLLM_USE_V2_MODEL_RUNNER=0.

It sees token ids only, so each opted-in request gets an incremental detokeniser over the
served model's tokenizer; every step the new text goes to the request's behaviours, and a
request whose behaviour says `end` gets only EOS left possible on that very step. `apply`
writes the logits with fills and `index_fill_` only: a Python scalar written into a CUDA
tensor element blocks the CPU until the GPU's queue drains. Requests that do not ask cost one
dictionary lookup when they join the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from vllm.logger import init_logger
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from app.vllm_plugin.actions import NO_ACTION, RequestBehaviour, StepAction, combine
from app.vllm_plugin.behaviours import behaviours_for
from app.vllm_plugin.deployment import check_deployment
from app.vllm_plugin.detokenize import Decoding, IncrementalDetokenizer
from app.vllm_plugin.logits import ban, force_eos

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
        new_text = self.text.push(ids, end)
        self.seen = end
        self.action = combine([b.step(new_ids, new_text) for b in self.behaviours])


class FolioLogitsProcessor(LogitsProcessor):
    """Runs the behaviours a request asks for in its `vllm_xargs` (see `behaviours`)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        if behaviours_for(sampling_params.extra_args) and sampling_params.ignore_eos:
            raise ValueError("Folio's loop stop ends a request with EOS: drop ignore_eos")

    # Per engine configuration, the last instance built: the one that works (vLLM builds one
    # per entry point and one per --logits-processors name, with no de-duplication).
    _latest: ClassVar[dict[int, FolioLogitsProcessor]] = {}

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool):
        check_deployment(vllm_config)
        self._model_config = vllm_config.model_config
        self._config_key = id(vllm_config)
        self._latest[self._config_key] = self
        self._active: bool | None = None  # settled at the first step, once all are built
        self._tokenizer: Decoding | None = None
        self._eos_fallback: int | None = None
        self._requests: dict[int, _Request] = {}

    def is_argmax_invariant(self) -> bool:
        return False  # forcing EOS changes the greedy choice

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if self._active is None:
            self._active = self._latest.get(self._config_key) is self
        if not self._active:
            return
        if batch_update is not None:
            self._apply_batch_update(batch_update)
        for request in self._requests.values():
            request.advance()

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, request in self._requests.items():
            action = request.action
            if action.end:
                force_eos(logits, index, request.eos_token_id)
            elif action.banned:
                ban(logits, index, action.banned)
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
        self._encode = backend.encode

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """For the n-gram guard's whitelist, once per request that asks for it."""
        return list(self._encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return str(self._decode(list(token_ids), skip_special_tokens=skip_special_tokens))
