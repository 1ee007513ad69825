"""The token counts of the pairs, read through the base model's processor (no torch import).

The longest prompt (image tokens included) must fit `--max-length`; the memory estimate needs
the largest image's tokens and patches and the longest completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from app.errors import TrainInputError
from app.train.memory import Shapes
from app.train.pairs import Pair

SIDES = ("chosen", "rejected")
# The chat template wraps each side in a few tokens (role, end of turn).
COMPLETION_EXTRA_TOKENS = 5


def measure_shapes(processor: Any, pairs: Sequence[Pair], max_length: int) -> Shapes:
    """The token counts the memory estimate needs; raises when max_length would cut an image."""
    shapes = Shapes(0, 0, 0, 0)
    for pair in pairs:
        text = processor.apply_chat_template(pair.record["prompt"], add_generation_prompt=True)
        images = [Image.open(p).convert("RGB") for p in pair.image_paths]
        inputs = processor(text=[text], images=images, return_tensors="pt")
        image_tokens, patches = _image_tokens(inputs, processor)
        chosen, rejected = (_completion_tokens(processor, pair.record[k]) for k in SIDES)
        shapes = shapes.widen(
            Shapes(int(inputs["input_ids"].shape[-1]), image_tokens, max(chosen, rejected), patches)
        )
    if shapes.prompt_tokens >= max_length:
        raise TrainInputError(
            f"--max-length {max_length} would cut the image tokens: the longest prompt is "
            f"{shapes.prompt_tokens} tokens with its image; raise --max-length or lower "
            "the image size (--max-image-tokens)"
        )
    return shapes


def _image_tokens(inputs: Any, processor: Any) -> tuple[int, int]:
    """Merged image tokens and vision patches of the largest image of one prompt."""
    grid = inputs.get("image_grid_thw")
    if grid is None:
        return 0, 0
    patches = max(int(t * h * w) for t, h, w in grid.tolist())
    merge = int(getattr(processor.image_processor, "merge_size", 1) or 1)
    return patches // (merge * merge), patches


def _completion_tokens(processor: Any, messages: Any) -> int:
    text = "".join(
        part.get("text", "") for message in messages for part in _parts(message["content"])
    )
    return len(processor.tokenizer(text)["input_ids"]) + COMPLETION_EXTRA_TOKENS


def _parts(content: Any) -> list[dict[str, Any]]:
    return [{"text": content}] if isinstance(content, str) else list(content)
