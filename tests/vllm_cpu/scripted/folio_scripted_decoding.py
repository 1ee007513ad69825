"""Scripted decoding for the vLLM CPU test server (TEST ONLY, never shipped).

A request whose `vllm_xargs` carry `folio_script` (a text) gets that text forced token by
token, then EOS: every other token is masked to -inf before sampling. The server still runs
its real forward passes and holds real KV cache, so a scripted page costs what a page of
that length costs, while its output is a real OCR text or a real loop shape instead of the
tiny random model's gibberish. Requests without the argument are left alone.

A row whose logits another processor has already cut down to EOS alone (a stop, such as
Folio's engine plugin) is left as it is, whatever the order the processors run in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

if TYPE_CHECKING:
    from vllm.config import VllmConfig

SCRIPT_ARG = "folio_script"


class ScriptedDecoding(LogitsProcessor):
    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool):
        from transformers import AutoTokenizer

        self._tokenizer: Any = AutoTokenizer.from_pretrained(vllm_config.model_config.tokenizer)
        self._eos: int = self._tokenizer.eos_token_id
        # batch row -> (script token ids, the request's live output token id list)
        self._rows: dict[int, tuple[list[int], list[int]]] = {}

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        script = (sampling_params.extra_args or {}).get(SCRIPT_ARG)
        if script is not None and not isinstance(script, str):
            raise ValueError(f"vllm_xargs.{SCRIPT_ARG} must be a string")

    def is_argmax_invariant(self) -> bool:
        return False  # it decides the token, greedy or not

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self._rows, batch_update, self._new_row)

    def _new_row(
        self, params: SamplingParams, _prompt: list[int] | None, output: list[int]
    ) -> tuple[list[int], list[int]] | None:
        script = (params.extra_args or {}).get(SCRIPT_ARG)
        if not isinstance(script, str):
            return None
        return self._tokenizer.encode(script, add_special_tokens=False), output

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for row, (script, output) in self._rows.items():
            step = len(output)
            token = script[step] if step < len(script) else self._eos
            values = logits[row]
            if _only_eos_left(values, self._eos):
                continue  # another processor ended this request: let it end
            values.fill_(float("-inf"))
            values[token] = 0.0
        return logits


def _only_eos_left(values: torch.Tensor, eos: int) -> bool:
    finite = torch.isfinite(values)
    return bool(finite[eos]) and int(finite.sum()) == 1
