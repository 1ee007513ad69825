"""Real pages as the token pieces a vLLM server streams, and where Folio's detector fires.

Pieces come from the served tokenizer (the CPU test model's, `tokenizers` only) through the
plugin's own incremental detokeniser, i.e. the text each token adds, as vLLM's detokeniser
sends it; without the tiny model, from a regular split of about four characters a piece.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.degeneration import LoopDetector
from app.vllm_plugin.detokenize import IncrementalDetokenizer
from tests.vllm_cpu.server import default_model_dir

_FALLBACK_PIECES = re.compile(r"\s*\S{1,4}|\s+")


@dataclass(frozen=True)
class Script:
    source: str
    pieces: list[str]
    verdict: int | None  # index of the piece at which the online detector calls a loop

    def as_json(self) -> dict[str, Any]:
        return {"pieces": self.pieces, "verdict": self.verdict}


class _Decoding:
    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return str(self._tokenizer.decode(list(token_ids), skip_special_tokens=skip_special_tokens))


def load_tokenizer(model_dir: Path | None = None) -> Any | None:
    path = (model_dir or default_model_dir()) / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def token_pieces(text: str, tokenizer: Any | None) -> list[str]:
    """The text each token adds, in order (what vLLM streams at stream_interval 1)."""
    if tokenizer is None:
        return _FALLBACK_PIECES.findall(text)
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    detokenizer = IncrementalDetokenizer(_Decoding(tokenizer))
    pieces = [detokenizer.push(ids, end) for end in range(1, len(ids) + 1)]
    return [piece for piece in pieces if piece] or [text]


def verdict_index(pieces: Sequence[str], per_chunk: int = 1) -> int | None:
    """The piece at which the detector fires when fed `per_chunk` pieces at a time."""
    detector = LoopDetector()
    for start in range(0, len(pieces), per_chunk):
        if detector.feed("".join(pieces[start : start + per_chunk])) is not None:
            return min(len(pieces) - 1, start + per_chunk - 1)
    return None


def script(source: str, text: str, tokenizer: Any | None) -> Script:
    pieces = token_pieces(text, tokenizer)
    return Script(source, pieces, verdict_index(pieces))
