"""`folio train-dpo` on a GPU: peak memory and tokens/s for Qwen2-VL-2B- and 7B-shaped models.

Random weights (nothing is downloaded), the test tokenizer, pages of 1000 x 1288 px at
Qwen2-VL's default image budget (1,656 image tokens), ~2,400-character chosen and ~3,600-
character looping rejected sides, LoRA r16, a few steps through the real trainer (preflight,
adapter dtype, checkpointing). Each arm reports the measured peak (`max_memory_allocated`)
beside the preflight's estimate, so the estimator is checked on the card it runs on.

`run(dry_run=True)` does the same on CPU with small shapes: it checks the structure, not GPU
figures. `python -m bench gpu` (issue 30) calls `run`; alone: `python -m bench.gpu.train`.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from app.pdf import samples
from app.profiles.request import IMAGE_PLACEHOLDER
from app.train.options import TrainOptions
from tests.vllm_cpu.server import default_model_dir

PAGE_SIZE = (1000, 1288)
QWEN2_VL_MAX_PIXELS = 12845056  # Qwen2-VL-2B/7B-Instruct's preprocessor_config.json
VISION = {"depth": 32, "embed_dim": 1280, "num_heads": 16, "mlp_ratio": 4}
TEXT = {
    "2b": {"hidden_size": 1536, "num_hidden_layers": 28, "intermediate_size": 8960,
           "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936},
    "7b": {"hidden_size": 3584, "num_hidden_layers": 28, "intermediate_size": 18944,
           "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064},
}  # fmt: skip
# Dry mode: the same structure at sizes a CPU runs in seconds.
DRY_TEXT = {"hidden_size": 128, "num_hidden_layers": 2, "intermediate_size": 256,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 16384}  # fmt: skip
DRY_VISION = {"depth": 2, "embed_dim": 64, "num_heads": 2, "mlp_ratio": 2}
# label: (model, options beyond the defaults), most wanted first: a turn cut short keeps those.
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "2b defaults": ("2b", {}),
    "7b defaults": ("7b", {}),
    # As shared/notes/gpu.md section 3 measured it (24.6 GB on an H200): the old behaviour.
    "2b as before": ("2b", {"adapter_dtype": "float32", "release_frozen_vision": False}),
    "2b float32 adapters": ("2b", {"adapter_dtype": "float32"}),
}
PAIRS, DRY_PAIRS, STEPS, DRY_STEPS = 16, 4, 4, 1
SIDE_CHARS, DRY_SIDE_CHARS = (2400, 3600), (400, 600)  # chosen, rejected


def run(dry_run: bool, progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every arm's figures; dry_run: on CPU, small shapes, one step each. `progress` gets the
    figures so far after each arm (a GPU turn cut short keeps the arms it finished)."""
    work = Path(tempfile.mkdtemp(prefix="folio-gpu-train-"))
    try:
        size, chars = ((280, 364), DRY_SIDE_CHARS) if dry_run else (PAGE_SIZE, SIDE_CHARS)
        pairs = write_pairs(work / "pairs", DRY_PAIRS if dry_run else PAIRS, size, chars)
        arms: dict[str, Any] = {}
        report = {
            "dry_run": dry_run,
            "device": device_name(dry_run),
            "pages": list(PAGE_SIZE),
            "arms": arms,
        }
        for label, (model, extra) in ARMS.items():
            arms[label] = guarded_arm(work, pairs, model, extra, dry_run)
            if progress:
                progress(report)
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def guarded_arm(
    work: Path, pairs: list[Any], model: str, extra: dict[str, Any], dry_run: bool
) -> dict[str, Any]:
    """One arm's figures, or its error: one arm out of memory must not lose the others'."""
    try:
        return run_arm(work, pairs, model, extra, dry_run)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
    release_device(dry_run)  # after the except block: its traceback no longer holds the model
    return {"model": model, "error": error}


def run_arm(
    work: Path, pairs: list[Any], model: str, extra: dict[str, Any], dry_run: bool
) -> dict[str, Any]:
    from app.train import trainer
    from app.train.base_model import read_base_config

    base = write_base(work / f"base-{model}", model, dry_run)
    options = TrainOptions(
        max_steps=DRY_STEPS if dry_run else STEPS,
        device="cpu" if dry_run else "cuda",
        learning_rate=1e-4,
        max_length=6144,
        held_out_share=0.0,
        **extra,
    )
    notes: list[str] = []
    began = time.monotonic()
    result = trainer.train(
        base, pairs, options, work / "checkpoints", base_config=read_base_config(base),
        notify=notes.append, load=random_weights,
    )  # fmt: skip
    seconds = time.monotonic() - began
    figures = arm_figures(result, options, seconds, notes)
    del result
    release_device(dry_run)
    return {"model": model, **figures}


def arm_figures(
    result: Any, options: TrainOptions, seconds: float, notes: list[str]
) -> dict[str, Any]:
    memory, last = result.memory, (result.curves[-1] if result.curves else {})
    train_s = float(last.get("train_runtime") or seconds)
    tokens = float(last.get("num_tokens") or 0)
    peak, estimated = memory["measured_peak_bytes"], memory["preflight"]["estimated_peak_bytes"]
    return {
        "parameters": sum(p.numel() for p in result.model.parameters()),
        "options": {
            "adapter_dtype": options.adapter_dtype,
            "release_frozen_vision": options.release_frozen_vision,
            "lora_rank": options.lora_rank,
        },
        "batch_size": memory["preflight"]["batch_size"],
        "grad_accum": memory["preflight"]["grad_accum"],
        "steps": int(last.get("step") or 0),
        "shapes": memory["shapes"],
        "peak_bytes": peak,
        "estimated_peak_bytes": estimated,
        "estimate_over_measured": round(estimated / peak, 3) if peak else None,
        "measured_by": memory["measured_by"],
        "seconds": round(seconds, 1),
        "tokens": tokens,
        "tokens_per_s": round(tokens / train_s, 1) if tokens and train_s else None,
        "preflight_note": notes[-1] if notes else "",
    }


def random_weights(base: Path, device: str) -> Any:
    """The model of `base`'s config with fresh random weights, made on the device itself."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from app.train.trainer import model_dtype

    config = AutoConfig.from_pretrained(base)
    torch.manual_seed(0)
    with torch.device(device):
        return AutoModelForImageTextToText.from_config(config, dtype=model_dtype(device))


def write_base(folder: Path, model: str, dry_run: bool) -> Path:
    """config.json of the shape, with the test model's tokenizer, template and processor."""
    tiny = default_model_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for path in tiny.iterdir():
        if path.suffix in (".json", ".jinja") and path.name != "config.json":
            shutil.copy2(path, folder / path.name)
    config = json.loads((tiny / "config.json").read_text())
    text, vision = (DRY_TEXT, DRY_VISION) if dry_run else (TEXT[model], VISION)
    config["text_config"] = {**config["text_config"], **text}
    config["text_config"].pop("layer_types", None)
    head_dim = text["hidden_size"] // text["num_attention_heads"]
    quarter = head_dim // 8
    rest = head_dim // 2 - quarter
    config["text_config"]["rope_parameters"]["mrope_section"] = [
        quarter,
        rest // 2,
        rest - rest // 2,
    ]
    config["vision_config"] = {
        **config["vision_config"],
        **vision,
        "hidden_size": text["hidden_size"],
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if not dry_run:
        set_image_budget(folder, QWEN2_VL_MAX_PIXELS)
    return folder


def set_image_budget(folder: Path, max_pixels: int) -> None:
    path = folder / "processor_config.json"
    processor = json.loads(path.read_text())
    for key in ("image_processor", "video_processor"):
        processor[key]["size"] = {**processor[key]["size"], "longest_edge": max_pixels}
    path.write_text(json.dumps(processor, indent=2))
    (folder / "preprocessor_config.json").unlink(missing_ok=True)


def write_pairs(
    folder: Path, count: int, size: tuple[int, int], chars: tuple[int, int]
) -> list[Any]:
    """Pages with their text drawn on them: the text chosen, a loop of it rejected."""
    from app.train.pairs import load_pairs

    (folder / "images").mkdir(parents=True)
    lines = []
    for number in range(1, count + 1):
        text = " ".join(samples.page_text(number + k, paragraphs=3) for k in range(4))[: chars[0]]
        loop = (text[:300] + " " + text[200:260] * 80)[: chars[1]]
        name = f"page-{number}.png"
        draw_page(text, size).save(folder / "images" / name)
        lines.append(json.dumps(pair_record(name, number, text, loop)))
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    return load_pairs([folder])


def draw_page(text: str, size: tuple[int, int]) -> Image.Image:
    image = Image.new("RGB", size, "white")
    draw, width = ImageDraw.Draw(image), max(20, size[0] // 7)
    rows = [text[i : i + width] for i in range(0, len(text), width)]
    for row, line in enumerate(rows):
        draw.text((20, 20 + 14 * row), line, fill="black")
    return image


def pair_record(name: str, number: int, chosen: str, rejected: str) -> dict[str, Any]:
    def said(words: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": [{"type": "text", "text": words}]}]

    prompt = [
        {"role": "user", "content": [IMAGE_PLACEHOLDER, {"type": "text", "text": "Transcribe."}]}
    ]
    meta = {"job_id": "bench", "page_id": number, "document": "bench", "page": number}
    return {"images": [f"images/{name}"], "prompt": prompt, "chosen": said(chosen),
            "rejected": said(rejected), "metadata": meta}  # fmt: skip


def device_name(dry_run: bool) -> str:
    import torch

    if dry_run or not torch.cuda.is_available():
        return "cpu"
    return str(torch.cuda.get_device_name(0))


def release_device(dry_run: bool) -> None:
    gc.collect()
    if not dry_run:
        import torch

        torch.cuda.empty_cache()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = list(sys.argv[1:] if argv is None else argv)
    report = run(dry_run="--dry-run" in args)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
