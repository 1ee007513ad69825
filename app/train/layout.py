"""The last touches that make a saved folder servable by vLLM 0.32 as it is.

transformers 5 nests the image processor inside processor_config.json and names the tokenizer
class generically; vLLM 0.32 reads a flat preprocessor_config.json and wants a concrete
tokenizer class for Qwen2-VL (measured: shared/notes/dpo-on-cpu.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

QWEN_TYPES = ("qwen2_vl", "qwen2_5_vl")
COPIED_FROM_BASE = ("chat_template.jinja", "chat_template.json", "generation_config.json")


def finish_layout(base: Path, dest: Path, model_type: str | None) -> None:
    for name in COPIED_FROM_BASE:
        if (base / name).is_file() and not (dest / name).is_file():
            shutil.copy2(base / name, dest / name)
    _flat_preprocessor_config(dest)
    if model_type in QWEN_TYPES:
        _concrete_tokenizer_class(dest, "Qwen2Tokenizer")


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _flat_preprocessor_config(dest: Path) -> None:
    nested = dest / "processor_config.json"
    flat = dest / "preprocessor_config.json"
    if flat.is_file() or not nested.is_file():
        return
    processor = _read(nested)
    image = processor.get("image_processor")
    if isinstance(image, dict):
        extra = (
            {"processor_class": processor["processor_class"]}
            if "processor_class" in processor
            else {}
        )
        _write(flat, {**image, **extra})


def _concrete_tokenizer_class(dest: Path, name: str) -> None:
    path = dest / "tokenizer_config.json"
    if not path.is_file():
        return
    config = _read(path)
    if config.get("tokenizer_class") in (None, "TokenizersBackend", "PreTrainedTokenizerFast"):
        _write(path, {**config, "tokenizer_class": name})
