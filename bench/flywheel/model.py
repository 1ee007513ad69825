"""The flywheel's model as a folder vLLM serves: the recipe of `data.build_base` plus weights.

`sft.py` leaves bare bf16 weights (a plain `state_dict()`); `assemble` puts them in a
Hugging Face folder with the config, the character tokenizer, the chat template and the two
touches vLLM 0.32 needs (`app.train.layout.finish_layout`: a flat preprocessor_config.json and
a concrete tokenizer class).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench.flywheel import data

COMMITTED = Path(__file__).parent / "model" / "model.safetensors"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble(weights: Path, out: Path) -> dict[str, Any]:
    """A servable folder at `out` (replaced) from `weights`; raises on any missing or extra key."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration

    from app.train.layout import finish_layout

    out.mkdir(parents=True, exist_ok=True)
    data.build_base(out)
    config = AutoConfig.from_pretrained(out)
    config.dtype = "bfloat16"
    model = Qwen2VLForConditionalGeneration(config).to(torch.bfloat16)
    model.load_state_dict(load_file(str(weights)), strict=True)
    model.save_pretrained(out, safe_serialization=True)
    finish_layout(out, out, "qwen2_vl")
    card = {
        "weights": str(weights),
        "weights_sha256": sha256_file(weights),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (out / "flywheel_model.json").write_text(json.dumps(card, indent=1) + "\n")
    return card
