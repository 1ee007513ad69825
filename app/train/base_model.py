"""Checks on the base model folder that need no torch: is it there, and is it a VLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.errors import TrainInputError

PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")


def read_base_config(folder: Path) -> dict[str, Any]:
    """The base model's config.json; raises TrainInputError unless it is a vision-language model."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise TrainInputError(f"{folder}: no config.json (a local Hugging Face model folder)")
    try:
        config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise TrainInputError(f"{config_path}: not JSON ({exc})") from exc
    if "vision_config" not in config:
        kind = config.get("model_type", "unknown")
        raise TrainInputError(
            f"{folder} is not a vision-language model (model_type {kind!r}, no vision_config): "
            "the pairs are page images"
        )
    if not any((folder / name).is_file() for name in PROCESSOR_FILES):
        raise TrainInputError(f"{folder}: no processor config ({' or '.join(PROCESSOR_FILES)})")
    return config
