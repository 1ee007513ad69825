"""What the flywheel's trainer (on a GPU) and its CPU bench share: text, glyphs, pages, recipe.

Pages are grids of 40 columns and 1-10 lines of real English prose (the standard library's
docstrings and pydoc's topics, which ship with Python), each character drawn from one glyph
atlas of DejaVu Sans Mono in a 14 x 28 px cell, so one merged Qwen2-VL patch (28 x 28) holds
two characters of one line and a page is `columns / 2 x lines` image tokens. The text is split
by source module: a module's lines are either all training text or all held out.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

COLUMNS = 40
CELL = (28, 14)  # height, width in pixels
MAX_LINES = 10
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_SIZE = 23  # DejaVu Sans Mono's advance is 0.602 em: 13.9 px at 23 px
CHARS = "".join(chr(code) for code in range(32, 127))  # printable ASCII; space is 0
PROMPT = "Transcribe this page."
HELD_OUT_BUCKETS = 5  # one module in five is held out (by the hash of its name)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                  "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]  # fmt: skip
EOS_TOKEN = "<|im_end|>"
TEXT = {"vocab_size": None, "hidden_size": 256, "intermediate_size": 768,
        "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 2048}  # fmt: skip
VISION = {"depth": 4, "embed_dim": 128, "num_heads": 2, "mlp_ratio": 4, "patch_size": 14,
          "spatial_merge_size": 2, "temporal_patch_size": 2}  # fmt: skip
PIXELS = {"shortest_edge": 4 * 28 * 28, "longest_edge": 256 * 28 * 28}


@dataclass(frozen=True)
class Source:
    name: str
    lines: list[str]


def clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return "".join(ch for ch in text if ch in CHARS)


def sources() -> Iterator[Source]:
    """Word-wrapped prose, one source per standard-library module (and pydoc's topics)."""
    from pydoc_data.topics import topics

    from tests.vllm_cpu.build_tiny_model import stdlib_docstrings

    yield Source("pydoc_data.topics", wrap(topics[key] for key in sorted(topics)))
    skipped = frozenset(
        {"test", "tests", "site-packages", "dist-packages", "idlelib", "pydoc_data"}
    )
    for relative, docs in stdlib_docstrings(skipped):
        lines = wrap(doc for doc in docs if len(doc) > 80)
        if lines:
            yield Source(str(relative.with_suffix("")).replace("/", "."), lines)


def wrap(paragraphs: Iterator[str] | Sequence[str]) -> list[str]:
    lines: list[str] = []
    for paragraph in paragraphs:
        for block in re.split(r"\n\s*\n", paragraph):
            text = clean(block)
            if len(text) >= 20:
                lines.extend(textwrap.wrap(text, COLUMNS))
    return lines


def held_out(source: str) -> bool:
    return int(hashlib.sha256(source.encode()).hexdigest(), 16) % HELD_OUT_BUCKETS == 0


@functools.cache
def text_split() -> tuple[dict[str, list[list[str]]], dict[str, list[str]]]:
    """The lines of every source and the sources' names, by side; once a process: parsing the
    standard library's docstrings takes seconds, and they do not change while it runs (the
    smoke tests prepare pages twice in one process)."""
    split: dict[str, list[list[str]]] = {"train": [], "held_out": []}
    names: dict[str, list[str]] = {"train": [], "held_out": []}
    for source in sources():
        side = "held_out" if held_out(source.name) else "train"
        split[side].append(source.lines)
        names[side].append(source.name)
    return split, names


def write_text(path: Path) -> dict[str, object]:
    """The lines file: {"train": [[line, ...] per source], "held_out": [...]} and its hash."""
    split, names = text_split()
    payload = json.dumps(split, separators=(",", ":")).encode()
    path.write_bytes(payload)
    return {
        "sha256": hashlib.sha256(payload).hexdigest(),
        "train_sources": len(names["train"]),
        "train_lines": sum(map(len, split["train"])),
        "held_out_sources": len(names["held_out"]),
        "held_out_lines": sum(map(len, split["held_out"])),
        "held_out_names": list(names["held_out"]),
    }


def glyph_atlas() -> np.ndarray:
    """Ink coverage (0-255) of every printable ASCII character in its 28 x 14 cell."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(FONT, FONT_SIZE)
    height, width = CELL
    atlas = np.zeros((len(CHARS), height, width), dtype=np.uint8)
    for index, char in enumerate(CHARS):
        cell = Image.new("L", (width, height), 0)
        ImageDraw.Draw(cell).text((0, 1), char, fill=255, font=font)
        atlas[index] = np.asarray(cell)
    return atlas


def page_lines(lines: Sequence[str], rng: random.Random, count: int) -> list[str]:
    """`count` consecutive lines from a random place in one source's lines."""
    start = rng.randrange(max(1, len(lines) - count + 1))
    return list(lines[start : start + count])


def with_leaders(lines: Sequence[str], rng: random.Random, share: float) -> list[str]:
    """A contents-page look: each line, with probability `share`, becomes its first 1-3 words,
    a dot leader and a page number filling the 40 columns (`open ........ 212`). The taught
    model never saw leaders (docstrings hardly hold any), and leaders are where real OCR
    models run away with dots; the detector lets fill run to `fill_min_covered` first."""
    out = []
    for line in lines:
        if rng.random() >= share:
            out.append(line)
            continue
        head = " ".join(line.split()[: rng.randint(1, 3)])[:24]
        number = str(rng.randint(1, 400))
        out.append(f"{head} {'.' * (COLUMNS - len(head) - len(number) - 2)} {number}")
    return out


def char_grid(lines: Sequence[str]) -> np.ndarray:
    """Glyph indices, `COLUMNS` wide, or wider (an even width) for a page of longer lines."""
    longest = max((len(line) for line in lines), default=0)
    grid = np.zeros((len(lines), max(COLUMNS, longest + longest % 2)), dtype=np.int64)
    for row, line in enumerate(lines):
        grid[row, : len(line)] = [CHARS.index(ch) for ch in line]
    return grid


def draw(lines: Sequence[str], atlas: np.ndarray) -> np.ndarray:
    """The page's pixels (grey, uint8, white paper): lines x 28 rows, 40 (or more) x 14."""
    grid = char_grid(lines)
    cells = atlas[grid]  # lines, columns, 28, 14
    ink = cells.transpose(0, 2, 1, 3).reshape(len(lines) * CELL[0], grid.shape[1] * CELL[1])
    return 255 - ink


def transcription(lines: Sequence[str]) -> str:
    return "\n".join(lines)


def build_base(folder: Path) -> dict[str, object]:
    """config, character-level tokenizer, chat template and processor of the flywheel's model
    (no weights: `sft.py` initialises them from the config with its seed)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    from tests.vllm_cpu.build_tiny_model import CHAT_TEMPLATE

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.post_processor = processors.ByteLevel(trim_offsets=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + len(SPECIAL_TOKENS),  # bytes only: one token a character
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=alphabet,
        show_progress=False,
    )
    core.train_from_iterator([CHARS], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=EOS_TOKEN, pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE, model_max_length=2048,
    )  # fmt: skip
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    head_dim = TEXT["hidden_size"] // TEXT["num_attention_heads"]  # type: ignore[operator]
    quarter, rest = head_dim // 8, head_dim // 2 - head_dim // 8
    config = Qwen2VLConfig(
        text_config={
            **TEXT,
            "vocab_size": len(tokenizer),
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [quarter, rest // 2, rest - rest // 2]},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids[EOS_TOKEN],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={**VISION, "hidden_size": TEXT["hidden_size"]},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=ids["<|endoftext|>"], eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False,
    )  # fmt: skip
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=PIXELS),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(size=PIXELS),
        chat_template=CHAT_TEMPLATE,
    )
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    processor.save_pretrained(folder)
    return {"vocab_size": len(tokenizer), "eos_token_id": ids[EOS_TOKEN]}


def prepare(folder: Path) -> dict[str, object]:
    """Everything `sft.py` reads, into `folder`: base/ (no weights), text.json, atlas.npy."""
    folder.mkdir(parents=True, exist_ok=True)
    base = build_base(folder / "base")
    text = write_text(folder / "text.json")
    atlas = glyph_atlas()
    np.save(folder / "atlas.npy", atlas)
    return {"base": base, "text": text,
            "atlas_sha256": hashlib.sha256(atlas.tobytes()).hexdigest()}  # fmt: skip
