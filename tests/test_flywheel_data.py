"""The flywheel's pages and its SFT batches: what the GPU trainer feeds the model must be what
Qwen2-VL's processor (and so vLLM) makes of the same page, token for token and patch for patch."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from bench.flywheel import data

if TYPE_CHECKING:
    from bench.flywheel.sft import Batches
from tests.test_train_dpo import train_extra_or_skip

LINES = ["from mapping/iterable E and F. If E", "present and has a .keys() method, does:"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train_extra_or_skip()
    folder = tmp_path_factory.mktemp("flywheel") / "base"
    data.build_base(folder)
    return folder


def batches(base: Path) -> Batches:
    from bench.flywheel import sft

    text = {"train": [[*LINES, "Return a new view.", "A last line."]], "held_out": []}
    return sft.Batches(base, text, data.glyph_atlas(), "cpu")


def test_a_page_is_patched_and_prompted_as_the_processor_does(base: Path) -> None:
    import torch
    from PIL import Image
    from transformers import AutoProcessor

    from bench.flywheel import sft

    processor = AutoProcessor.from_pretrained(base)
    pixels = data.draw(LINES, data.glyph_atlas())
    assert pixels.shape == (2 * 28, 40 * 14)
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": data.PROMPT}]}
    ]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    image = Image.fromarray(pixels.astype(np.uint8)).convert("RGB")
    expected = processor(text=[prompt], images=[image], return_tensors="pt")

    mine = sft.patchify(torch.as_tensor(pixels)[None])
    assert mine.shape == expected["pixel_values"].shape
    assert float((mine - expected["pixel_values"]).abs().max()) < 1e-5

    made = batches(base)
    grid = torch.as_tensor(data.char_grid(LINES))[None]
    inputs = made.inputs(grid, torch.tensor([[len(line) for line in LINES]]))
    head = expected["input_ids"][0].tolist()
    assert inputs["input_ids"][0, : len(head)].tolist() == head
    assert inputs["image_grid_thw"].tolist() == expected["image_grid_thw"].tolist()
    answer = inputs["input_ids"][0, len(head) :]
    said = processor.tokenizer.decode(answer)
    assert said == data.transcription(LINES) + data.EOS_TOKEN
    assert int(inputs["labels"][0].ne(-100).sum()) == len(answer)


def test_pages_of_several_lengths_pad_their_answers(base: Path) -> None:
    import torch

    made = batches(base)
    generator = torch.Generator().manual_seed(0)
    drawn = made.draw(3, 2, generator)
    inputs = made.inputs(drawn["grid"], drawn["lengths"])
    kept = inputs["labels"].ne(-100).sum(1).tolist()
    expected = [int(drawn["lengths"][i].sum()) + 1 + 1 for i in range(3)]  # newline, EOS
    assert kept == expected
    head = int(inputs["labels"].shape[1] - inputs["labels"].ne(-100).sum(1).max())
    assert inputs["attention_mask"].sum(1).tolist() == [head + k for k in kept]
    assert inputs["pixel_values"].shape[0] == 3 * 2 * 2 * 40


def test_a_few_steps_on_one_batch_lower_the_loss(base: Path) -> None:
    """The labels line up with the answer: the model can fit one batch. The vision tower is
    frozen, as `folio train-dpo` keeps it: on this CPU build the patch embedding's Conv3d weight
    gradient came back non-finite now and then (4 of 8 runs here, from the 9th step), which
    made this test a coin flip."""
    import torch
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration

    from app.train.trainer import freeze_vision

    torch.manual_seed(0)
    made = batches(base)
    model = Qwen2VLForConditionalGeneration(AutoConfig.from_pretrained(base))
    assert freeze_vision(model) > 0
    drawn = made.draw(2, 1, torch.Generator().manual_seed(1))
    inputs = made.inputs(drawn["grid"], drawn["lengths"])
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=2e-3)
    losses = []
    for _ in range(16):
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.6 * losses[0]


def test_leader_lines_fill_the_page_width() -> None:
    lines = data.with_leaders(LINES * 4, random.Random(3), 0.5)
    leaders = [line for line in lines if " ..." in line]
    assert 0 < len(leaders) < len(lines)
    assert all(len(line) == data.COLUMNS for line in leaders)
    assert all(len(line) <= data.COLUMNS for line in lines)
    assert data.draw(lines, data.glyph_atlas()).shape == (len(lines) * 28, 560)


def test_a_module_is_held_out_whole() -> None:
    names = [f"module{n}" for n in range(200)]
    held = [name for name in names if data.held_out(name)]
    assert 20 < len(held) < 70  # one in five, by the hash of the name
    assert held == [name for name in names if data.held_out(name)]  # the same every time
