"""Build a tiny, randomly initialised Qwen2-VL checkpoint that vLLM can serve on CPU.

Run with the vLLM venv's python (see setup_env.sh); nothing is downloaded:

    ~/.cache/folio/vllm-venv/bin/python tests/vllm_cpu/build_tiny_model.py [--out DIR]

The weights are seeded, so the same recipe gives byte-identical files. A stamp with the
recipe hash makes a second run a no-op. Greedy decoding on this model loops, which is
what the degeneration tests need.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SEED = 1234
STAMP_NAME = "folio-recipe.json"
DEFAULT_DIR = Path.home() / ".cache" / "folio" / "tiny-qwen2vl"

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
EOS_TOKEN = "<|im_end|>"
# 256 byte symbols + merges + special tokens. Trained on English prose (below), 16,384 entries
# give 3.0-3.3 characters per token on English OCR text, near what GPU models' tokenizers give
# (about 4): `repetition_detection`'s max_pattern_size then spans as many characters as it
# would on a GPU server.
BPE_VOCAB_SIZE = 16384
# Caps the image so a full page is at most 64 merged patches, i.e. under 100 prompt tokens.
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 64 * 28 * 28

TRAINING_TEXT = [
    "You are a helpful assistant.",
    "Transcribe the text on this page. Return plain text only.",
    "The quick brown fox jumps over the lazy dog. 0123456789",
    "Invoice number 2024-0917, total due: 1,234.56 EUR. Page 3 of 12.",
    "Chapter 1. Introduction. Optical character recognition turns images into text.",
    "system user assistant",
]

# Qwen2-VL's chat template (one image placeholder per image part).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def recipe_hash() -> str:
    """Hash of this script plus the versions that shape the files (the Python version
    fixes the stdlib text the tokenizer is trained on)."""
    import tokenizers
    import torch
    import transformers

    digest = hashlib.sha256(Path(__file__).read_bytes())
    versions = (torch.__version__, transformers.__version__, tokenizers.__version__, sys.version)
    for version in versions:
        digest.update(version.encode())
    return digest.hexdigest()[:16]


def english_text() -> Iterator[str]:
    """English prose that ships with every Python: pydoc's help topics and the standard
    library's docstrings (about 2 MB). Nothing is downloaded, and the same Python gives the
    same text, so the tokenizer is the same on every machine."""
    from pydoc_data.topics import topics

    yield from (topics[key] for key in sorted(topics))
    for _, docstrings in stdlib_docstrings():
        yield from docstrings


def stdlib_docstrings(
    skipped: frozenset[str] = frozenset(
        {"test", "tests", "site-packages", "dist-packages", "idlelib"}
    ),
) -> Iterator[tuple[Path, list[str]]]:
    """Each standard-library module (path under the stdlib, in sorted order) with its non-empty
    docstrings in `ast.walk` order; modules under a `skipped` folder are left out."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for path in sorted(stdlib.rglob("*.py")):
        relative = path.relative_to(stdlib)
        if skipped & set(relative.parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        nodes = (node for node in ast.walk(tree) if isinstance(node, documented))
        yield relative, [doc for node in nodes if (doc := ast.get_docstring(node))]


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator([*TRAINING_TEXT * 4, *english_text()], trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=EOS_TOKEN,
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=2048,
    )


def build_model(tokenizer):
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in SPECIAL_TOKENS}
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,  # head_dim 32: vLLM's CPU attention needs 32, 64, 80...
            "num_key_value_heads": 2,
            "max_position_embeddings": 2048,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1000000.0,
                "mrope_section": [4, 6, 6],  # sums to head_dim / 2
            },
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids[EOS_TOKEN],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "embed_dim": 64,
            "hidden_size": 128,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(SEED)
    model = Qwen2VLForConditionalGeneration(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = ids[EOS_TOKEN]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    return model


def build_processor(tokenizer):
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

    size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    return Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(size=size),
        chat_template=CHAT_TEMPLATE,
    )


def build(out_dir: Path) -> dict:
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    processor = build_processor(tokenizer)
    tmp_dir = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    model.save_pretrained(tmp_dir)
    processor.save_pretrained(tmp_dir)
    info = {
        "recipe": recipe_hash(),
        "eos_token_id": tokenizer.convert_tokens_to_ids(EOS_TOKEN),
        "vocab_size": len(tokenizer),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (tmp_dir / STAMP_NAME).write_text(json.dumps(info, indent=2) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp_dir.rename(out_dir)
    return info


def read_stamp(out_dir: Path) -> dict | None:
    try:
        return json.loads((out_dir / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("FOLIO_VLLM_MODEL_DIR", DEFAULT_DIR))
    parser.add_argument("--out", type=Path, default=default, help=f"default: {default}")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args(argv)
    out_dir = args.out.expanduser().resolve()

    stamp = read_stamp(out_dir)
    if not args.force and stamp and stamp.get("recipe") == recipe_hash():
        print(f"tiny model up to date at {out_dir} (recipe {stamp['recipe']})")
    else:
        print(f"building tiny Qwen2-VL into {out_dir}")
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        stamp = build(out_dir)
        print(f"built: {stamp['parameters']} parameters, vocab {stamp['vocab_size']}")
    print(f"eos_token_id={stamp['eos_token_id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
