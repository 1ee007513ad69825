"""What the stand-in answers: real OCR pages in the profile's own format, and, at a chosen rate,
real loop shapes that run on to the request's token cap. Pure, apart from reading the corpus.

A page is known by its image: the same image (and temperature) always gets the same answer, so
arms of a benchmark that send the same pages get the same work. A page loops only on its first,
greedy rung (temperature at most `loop_max_temperature`), as in `bench.tax.workload`: a retry
at a higher temperature reads it healthily. Healthy texts are `bench.ocr.text.healthy_pages`
(olmOCR's own transcriptions and the dev corpus's healthy outputs); loops are
`bench.scripted_loops.build_shapes` (loop families built from those pages, and every real
degenerate tail of the dev corpus continued with its own last cycle).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property

from app.profiles import resolve_profile
from app.profiles.answer import write_answer
from bench.ocr.text import OcrText, degenerate_tails, healthy_pages
from bench.scripted_loops import build_shapes

# The stand-in's tokens: a word piece of up to 7 letters, up to 3 digits, a run of white space,
# a run of up to 16 of one symbol (`---`, `....`: BPE merges them), or one other character (a
# CJK character a token, as Qwen2's tokenizer mostly has it). About 3 characters a token on the
# corpus pages (Markdown, tables, CJK among them). vLLM's repetition_detection at 16/4 fires on
# 6 of the 39 healthy pages with these tokens, as it did with the real tokenizer
# (docs/loop-stop.md: 6 of 39 at 16/4); with one token per symbol it fired on 20.
TOKEN = re.compile(r" ?[^\W\d_]{1,7}| ?\d{1,3}|\s+|([^\w\s])\1{0,15}|.", re.DOTALL)
LOOP_CHARS = 60_000  # a loop's text: longer than any cap it is asked to run to


def tokenize(text: str) -> list[str]:
    return [match.group(0) for match in TOKEN.finditer(text)]


@dataclass(frozen=True)
class Answer:
    pieces: list[str]  # tokens to stream, then EOS (a loop reaches its cap first)
    loop: str | None = None  # the loop shape's name and source, for a looping answer


@dataclass
class AnswerBook:
    """Answers for pages, chosen by the page image's hash."""

    profile_id: str = "olmocr2"
    loop_rate: float = 0.0
    loop_max_temperature: float = 0.1
    healthy: list[OcrText] = field(default_factory=healthy_pages)
    tails: list[OcrText] = field(default_factory=degenerate_tails)
    _tokens: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    @cached_property
    def shapes(self) -> list[tuple[str, str]]:
        """(name, text) of every loop shape, in the profile's format."""
        built = build_shapes(self.healthy, self.tails, LOOP_CHARS)
        return [(f"{s.name} ({s.source})", self._formatted(s.text)) for s in built]

    def answer(self, image_key: bytes, temperature: float | None) -> Answer:
        """The answer to the page whose image hashes to `image_key` at `temperature`."""
        draw = _fraction(image_key)
        if (temperature or 0.0) <= self.loop_max_temperature and draw < self.loop_rate:
            index = int(draw / self.loop_rate * len(self.shapes)) % len(self.shapes)
            name, text = self.shapes[index]
            return Answer(self._pieces("loop", index, text), loop=name)
        index = int(_fraction(image_key + repr(temperature).encode()) * len(self.healthy))
        text = self._formatted(self.healthy[index].text)
        return Answer(self._pieces("healthy", index, text))

    def _formatted(self, markdown: str) -> str:
        written = write_answer(resolve_profile(self.profile_id, ""), markdown.strip(), {})
        return written if written is not None else markdown

    def _pieces(self, kind: str, index: int, text: str) -> list[str]:
        key = (kind, index)
        if key not in self._tokens:
            self._tokens[key] = tokenize(text)
        return self._tokens[key]


def image_key(image_url: str) -> bytes:
    return hashlib.sha1(image_url.encode()).digest()


def _fraction(key: bytes) -> float:
    """A number in [0, 1) drawn from `key` (the same key, the same number)."""
    return int.from_bytes(hashlib.sha1(key).digest()[:8], "big") / 2**64
