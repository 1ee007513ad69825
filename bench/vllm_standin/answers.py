"""What the stand-in answers: real OCR pages in the profile's own format, and, at a chosen rate,
real loop shapes that run on to the request's token cap. Pure, apart from reading the corpus.

A page is known by its image: the same image and temperature always get the same answer, so
arms of a benchmark that send the same pages get the same work. Of the pages that loop
(`loop_rate`), a share loops on every read, whatever its temperature, at the same place on the
same unit (`sticky_share`: the same loop shape each time); a share loops on every read but
each temperature on another shape (`moving_share`: another unit, another place); the rest loop
only on their first, greedy rung (temperature at most `loop_max_temperature`), as in
`bench.tax.workload`, and a retry reads them healthily. A read above that temperature changes
the healthy text a little, as a sampler would (`perturbed`): a letter pair swapped in a few
words, more the hotter it runs, never in the profile's front matter nor in the loop itself; so
a sticky loop comes back at the same place after a text that is not byte-identical.

Healthy texts are `bench.ocr.text.healthy_pages` (olmOCR's own transcriptions and the dev
corpus's healthy outputs); loops are `bench.scripted_loops.build_shapes` (loop families built
from those pages, and every real degenerate tail of the dev corpus continued with its own last
cycle).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property

from app.profiles import resolve_profile
from app.profiles.answer import write_answer
from bench.ocr.text import OcrText, degenerate_tails, healthy_pages
from bench.scripted_loops import LoopShape, build_shapes

# The stand-in's tokens: a word piece of up to 7 letters, up to 3 digits, a run of white space,
# a run of up to 16 of one symbol (`---`, `....`: BPE merges them), or one other character (a
# CJK character a token, as Qwen2's tokenizer mostly has it). About 3 characters a token on the
# corpus pages (Markdown, tables, CJK among them). vLLM's repetition_detection at 16/4 fires on
# 6 of the 39 healthy pages with these tokens, as it did with the real tokenizer
# (docs/loop-stop.md: 6 of 39 at 16/4); with one token per symbol it fired on 20.
TOKEN = re.compile(r" ?[^\W\d_]{1,7}| ?\d{1,3}|\s+|([^\w\s])\1{0,15}|.", re.DOTALL)
LOOP_CHARS = 60_000  # a loop's text: longer than any cap it is asked to run to
WORD = re.compile(r"[A-Za-z]{4,}")

# Of the looping pages, the shares whose loop comes back on every later read. The defaults are
# the one measurement there is: Folio's ladder (greedy, then 0.1, 0.2, 0.5) over the flywheel's
# base model on 252 held-out pages (bench/results/flywheel_arms.json, arm base.ladder): of 17
# pages that looped, 12 looped again at the same place on the same text (a confirming attempt
# ran, to the cap), 2 looped again where the rule did not call it the same place (no
# confirming attempt; the repeat cap ended them), 3 did not (1 read healthily on a retry, and
# 2 were false alarms the confirming attempt kept). A 6M-parameter model, char-run loops only.
STICKY_SHARE = 12 / 17
MOVING_SHARE = 2 / 17
# Words changed per word of healthy text per degree of temperature above the first read's:
# 2% (0.2% at a retry 0.1 hotter), at least one word a read. An assumption, not a
# measurement: enough that no two reads are byte-identical, within what Folio's "same text"
# rule allows (app/retry/plan.py SAME_TEXT_F1: about four changed places in 1,200 characters).
WORDS_CHANGED_PER_DEGREE = 0.02


def tokenize(text: str) -> list[str]:
    return [match.group(0) for match in TOKEN.finditer(text)]


@dataclass(frozen=True)
class Answer:
    """What the engine streams for one request, in any mode."""

    pieces: list[str]  # tokens to stream, then EOS (a loop reaches its cap first)
    loop: str | None = None  # the loop shape's name and source, for a looping answer
    comeback: str | None = None  # a looping page's kind: "sticky", "moving" or "once"
    # EOS is a token of its own, counted in the usage, as vLLM counts it (a page read here);
    # False: the last piece ends the answer (scripted and replayed answers, whose token counts
    # tests and committed results quote as the pieces alone)
    eos: bool = True
    script: int | None = None  # which of a replay's scripts it is


@dataclass(frozen=True)
class Script:
    """One answer text, split where a retry's temperature may change it: `head` (the profile's
    front matter, then the healthy text from `editable` on) and the loop's own tokens."""

    name: str
    head: str
    editable: int
    loop_tokens: list[str]


@dataclass
class AnswerBook:
    """Answers for pages, chosen by the page image's hash."""

    profile_id: str = "olmocr2"
    loop_rate: float = 0.0
    loop_max_temperature: float = 0.1
    sticky_share: float = STICKY_SHARE
    moving_share: float = MOVING_SHARE
    words_changed_per_degree: float = WORDS_CHANGED_PER_DEGREE
    healthy: list[OcrText] = field(default_factory=healthy_pages)
    tails: list[OcrText] = field(default_factory=degenerate_tails)
    _tokens: dict[tuple[str, int], list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shares = (self.sticky_share, self.moving_share)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError("sticky and moving shares: each >= 0, together <= 1")

    @cached_property
    def loops(self) -> list[Script]:
        """Every loop shape as a script in the profile's format."""
        built = build_shapes(self.healthy, self.tails, LOOP_CHARS)
        return [self._script(s) for s in built]

    @property
    def shapes(self) -> list[tuple[str, str]]:
        """(name, text) of every loop shape, in the profile's format."""
        return [(s.name, s.head + "".join(s.loop_tokens)) for s in self.loops]

    def answer(self, image_key: bytes, temperature: float | None) -> Answer:
        """The answer to the page whose image hashes to `image_key` at `temperature`."""
        heat = max(0.0, (temperature or 0.0) - self.loop_max_temperature)
        draw = _fraction(image_key)
        if draw < self.loop_rate:
            kind = self.comeback(draw / self.loop_rate)
            index = int(draw / self.loop_rate * len(self.loops)) % len(self.loops)
            if kind == "moving" and heat > 0:
                index = self._moved(index, image_key, temperature)
            if heat == 0 or kind != "once":
                script = self.loops[index]
                head = self.perturbed(script, image_key, temperature, heat)
                return Answer(tokenize(head) + script.loop_tokens, script.name, kind)
        index = int(_fraction(image_key + b"healthy") * len(self.healthy))
        script = self._healthy(index)
        if heat == 0:
            return Answer(self._pieces("healthy", index, script.head))
        return Answer(tokenize(self.perturbed(script, image_key, temperature, heat)))

    def comeback(self, share: float) -> str:
        """Whether a looping page drawn at `share` (in [0, 1)) loops again on later reads."""
        if share < self.sticky_share:
            return "sticky"
        return "moving" if share < self.sticky_share + self.moving_share else "once"

    def perturbed(
        self, script: Script, image_key: bytes, temperature: float | None, heat: float
    ) -> str:
        """`script`'s head as a read `heat` degrees hotter than the first writes it: a few
        words' inner letters swapped, the same length, chosen by the image and temperature."""
        if heat <= 0:
            return script.head
        words = list(WORD.finditer(script.head, script.editable))
        if not words:
            return script.head
        changes = max(1, round(self.words_changed_per_degree * heat * len(words)))
        seed = image_key + repr(temperature).encode()
        chosen = {int(_fraction(seed + n.to_bytes(4, "big")) * len(words)) for n in range(changes)}
        text = list(script.head)
        for n in sorted(chosen):
            start, end = words[n].span()
            at = start + 1 + int(_fraction(seed + b"at" + n.to_bytes(4, "big")) * (end - start - 2))
            while at + 2 < end and text[at] == text[at + 1]:  # a pair that changes when swapped
                at += 1
            text[at], text[at + 1] = text[at + 1], text[at]
        return "".join(text)

    def _moved(self, index: int, image_key: bytes, temperature: float | None) -> int:
        """Another shape than `index`, chosen by the image and the temperature."""
        step = 1 + int(_fraction(image_key + repr(temperature).encode()) * (len(self.loops) - 1))
        return (index + step) % len(self.loops)

    def _script(self, shape: LoopShape) -> Script:
        """`shape` in the profile's format, split at its loop's onset."""
        formatted = self._formatted(shape.text)
        front = _front(formatted, shape.text)
        lead = len(shape.text) - len(shape.text.lstrip())
        split = front + max(0, _onset(shape, self.healthy) - lead)
        name = f"{shape.name} ({shape.source})"
        return Script(name, formatted[:split], front, tokenize(formatted[split:]))

    def _healthy(self, index: int) -> Script:
        text = self.healthy[index].text.strip()
        head = self._formatted(text)
        return Script(self.healthy[index].source, head, _front(head, text), [])

    def _formatted(self, markdown: str) -> str:
        written = write_answer(resolve_profile(self.profile_id, ""), markdown.strip(), {})
        return written if written is not None else markdown

    def _pieces(self, kind: str, index: int, text: str) -> list[str]:
        key = (kind, index)
        if key not in self._tokens:
            self._tokens[key] = tokenize(text)
        return self._tokens[key]


def continued(answer: Answer, prefix: str) -> Answer:
    """What is left of `answer` (the page read at the request's temperature) past a `prefix`
    the request's last assistant message already holds (vLLM's `continue_final_message`): its
    pieces from as many characters on, so the joined answer is as long as a full read at that
    temperature and only the rest is generated. A retry that keeps the first read's text up to
    its loop's line so goes on from there: a sticky loop comes back at its place (or at once,
    where the kept text reaches into it); a moving one comes back on another shape's unit, past
    its own onset or the kept text's end, whichever is later; a loop that does not come back
    reads on healthily to the page's end (the healthy page the floor and a full re-read write,
    from the kept text's length on) and its EOS."""
    written = 0
    for n, piece in enumerate(answer.pieces):
        if written >= len(prefix):
            return Answer(answer.pieces[n:], answer.loop, answer.comeback)
        written += len(piece)
    return Answer([], answer.loop, answer.comeback)


def _onset(shape: LoopShape, healthy: list[OcrText]) -> int:
    """Where `shape`'s loop starts: past the healthy page it opens with (a built shape), or,
    for a real tail, where its text turns periodic, walking back from the tail's end."""
    for page in healthy:
        if page.source == shape.source and shape.name != "real-tail":
            same = 0
            for a, b in zip(shape.text, page.text, strict=False):
                if a != b:
                    break
                same += 1
            return same
    period, at = shape.period_chars, len(shape.text) - LOOP_CHARS
    at = max(0, min(at, len(shape.text) - period))
    while at > 0 and shape.text[at - 1] == shape.text[at - 1 + period]:
        at -= 1
    return at


def _front(formatted: str, markdown: str) -> int:
    """Characters of `formatted` before `markdown`'s text: the profile's front matter."""
    body = markdown.strip()[:200]
    found = formatted.find(body) if body else len(formatted)
    return found if found >= 0 else len(formatted)


def image_key(image_url: str) -> bytes:
    return hashlib.sha1(image_url.encode()).digest()


def _fraction(key: bytes) -> float:
    """A number in [0, 1) drawn from `key` (the same key, the same number)."""
    return int.from_bytes(hashlib.sha1(key).digest()[:8], "big") / 2**64
