"""Incremental detokenisation of a growing list of token ids (pure; any HF-style tokenizer).

Each step decodes a few tokens around the read position, never the whole output: a token
that ends inside a multi-byte character is held back until the character completes (as
vLLM's own detokeniser does), but never more than `max_pending` tokens, since a model can
emit invalid byte sequences for ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

_REPLACEMENT = "\ufffd"


class Decoding(Protocol):
    """The one tokenizer method needed (transformers' `decode`)."""

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...


class IncrementalDetokenizer:
    """Turns the tokens appended to a request's output into the text they add."""

    def __init__(self, tokenizer: Decoding, *, max_pending: int = 6) -> None:
        self._tokenizer = tokenizer
        self._max_pending = max_pending
        self._prefix = 0  # tokens before this are settled and out of the context window
        self._read = 0  # tokens before this have been turned into text

    def push(self, token_ids: Sequence[int], end: int | None = None) -> str:
        """All output ids so far (a growing list; only the first `end` when given) -> the text
        added since the last call. Reads only the ids after the settled prefix."""
        end = len(token_ids) if end is None else end
        if end <= self._read:
            return ""
        decode = self._tokenizer.decode
        window = list(token_ids[self._prefix : end])
        settled = decode(window[: self._read - self._prefix], skip_special_tokens=True)
        full = decode(window, skip_special_tokens=True)
        pending = end - self._read
        if full.endswith(_REPLACEMENT) and pending < self._max_pending:
            return ""  # a character still being spelled out byte by byte
        self._prefix, self._read = self._read, end
        return full[len(settled) :]
