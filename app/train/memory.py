"""How much memory a DPO step will need, from the model's config and the pairs' token counts.

Pure arithmetic (no torch), so it runs before anything is loaded and is tested as a table.
What it counts, for TRL's DPOTrainer (policy and reference in one batch of chosen + rejected
sequences, the reference being the same weights with the adapter off):
- weights; for LoRA the adapters, their gradients and AdamW's two moments; for a full tune the
  gradients, the moments and a second copy of the weights as the reference model;
- the language model's saved activations for the backward pass: every layer's, or with gradient
  checkpointing each layer's input plus one layer recomputed;
- TRL's chunked log-prob head: 4,096 tokens by 32,768 vocabulary entries at a time (on CUDA only
  the completion tokens, in one buffer; on CPU every token, through torch ops that keep several
  float32 copies of the tile);
- PEFT's float32 copy of each adapted layer's input when the adapters are float32 and the model
  is not (the decoder-MLP blow-up in shared/notes/gpu.md section 3).
The per-token factors were checked against measured peaks (tests/test_train_memory.py, and the
H200 runs in docs/training-gpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

Device = Literal["cpu", "cuda"]
TOKEN_TILE = 4096  # trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE
VOCAB_TILE = 32768  # trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE
CPU_TILE_COPIES = 8  # float32 tile-sized temporaries of the torch path, fitted on CPU runs
GIB = 1024**3
# Memory the runtime takes beside the tensors counted here (allocator slack, kernels' scratch).
OVERHEAD = {"cpu": 64 * 1024**2, "cuda": 512 * 1024**2}


@dataclass(frozen=True)
class Shapes:
    """Token counts of the largest pair: what sizes the activations."""

    prompt_tokens: int  # the longest prompt, image tokens included
    image_tokens: int  # merged image tokens of the largest image
    completion_tokens: int  # the longest chosen or rejected side
    patches: int  # vision patches of the largest image, before merging

    def widen(self, other: Shapes) -> Shapes:
        return Shapes(
            max(self.prompt_tokens, other.prompt_tokens),
            max(self.image_tokens, other.image_tokens),
            max(self.completion_tokens, other.completion_tokens),
            max(self.patches, other.patches),
        )

    def with_image_tokens(self, image_tokens: int) -> Shapes:
        """The same pages at another image budget (the prompt shrinks with its image)."""
        ratio = self.patches / self.image_tokens if self.image_tokens else 0
        return replace(
            self,
            prompt_tokens=self.prompt_tokens - self.image_tokens + image_tokens,
            image_tokens=image_tokens,
            patches=round(image_tokens * ratio),
        )


@dataclass(frozen=True)
class Run:
    """What the step looks like: method, batch, lengths, precision and checkpointing."""

    device: Device
    method: Literal["lora", "full"]
    batch_size: int
    max_length: int
    gradient_checkpointing: bool
    lora_rank: int = 16
    train_vision: bool = False
    # TRL's require-grad hook left on a frozen tower's patch embedding (checkpointing + PEFT):
    # the tower then keeps its activations. Folio's trainer removes it (app.train.fitting).
    vision_hook: bool = False
    weight_bytes: int = 2  # bf16 on CUDA, float32 (4) on CPU
    adapter_bytes: int = 2  # the adapters' dtype: the model's, or float32 (4)


@dataclass(frozen=True)
class TextShape:
    hidden: int
    layers: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool


@dataclass(frozen=True)
class VisionShape:
    width: int
    depth: int
    heads: int
    mlp: int
    out: int
    merge: int
    patch_inputs: int  # channels x temporal patch x patch x patch


@dataclass(frozen=True)
class Estimate:
    """Peak bytes of one training step, by part."""

    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def gib(self) -> float:
        return round(self.total / GIB, 2)


def text_shape(config: dict[str, Any]) -> TextShape:
    text = config.get("text_config") or config
    hidden, heads = int(text["hidden_size"]), int(text["num_attention_heads"])
    return TextShape(
        hidden=hidden,
        layers=int(text["num_hidden_layers"]),
        intermediate=int(text["intermediate_size"]),
        heads=heads,
        kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or hidden // heads),
        vocab=int(text.get("vocab_size") or config["vocab_size"]),
        tied=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
    )


def vision_shape(config: dict[str, Any], text: TextShape) -> VisionShape:
    vision = config["vision_config"]
    width = int(vision.get("embed_dim") or vision["hidden_size"])
    mlp = int(vision.get("intermediate_size") or width * float(vision.get("mlp_ratio", 4)))
    patch = int(vision.get("patch_size", 14))
    inputs = int(vision.get("in_channels", 3)) * int(vision.get("temporal_patch_size", 1))
    return VisionShape(
        width=width,
        depth=int(vision.get("depth") or vision.get("num_hidden_layers", 0)),
        heads=int(vision.get("num_heads") or vision.get("num_attention_heads", 1)),
        mlp=mlp,
        out=int(vision.get("out_hidden_size") or text.hidden),
        merge=int(vision.get("spatial_merge_size", 1)),
        patch_inputs=inputs * patch * patch,
    )


def text_parameters(t: TextShape) -> int:
    q, kv = t.heads * t.head_dim, t.kv_heads * t.head_dim
    attention = t.hidden * (q + 2 * kv) + (q + 2 * kv) + q * t.hidden
    layer = attention + 3 * t.hidden * t.intermediate + 2 * t.hidden
    heads = 1 if t.tied else 2
    return heads * t.vocab * t.hidden + t.layers * layer + t.hidden


def vision_parameters(v: VisionShape) -> int:
    block = 4 * v.width * v.width + 4 * v.width + 2 * v.width * v.mlp + v.mlp + 5 * v.width
    merged = v.width * v.merge * v.merge
    merger = merged * merged + merged + merged * v.out + v.out + 2 * v.width
    return v.patch_inputs * v.width + v.depth * block + merger


def lora_parameters(t: TextShape, rank: int) -> int:
    q, kv = t.heads * t.head_dim, t.kv_heads * t.head_dim
    sides = (t.hidden + q) * 2 + (t.hidden + kv) * 2 + (t.hidden + t.intermediate) * 3
    return t.layers * rank * sides


def estimate(config: dict[str, Any], shapes: Shapes, run: Run) -> Estimate:
    """Peak bytes of one step of `run` on pages of `shapes` for the model of `config`."""
    text = text_shape(config)
    vision = vision_shape(config, text)
    weights = (text_parameters(text) + vision_parameters(vision)) * run.weight_bytes
    parts = {"weights": weights, "optimizer": _optimizer(text, vision, run)}
    if run.method == "full":
        parts["reference model"] = weights
    sequences = 2 * run.batch_size  # chosen and rejected of each pair, padded alike
    length = min(shapes.prompt_tokens + shapes.completion_tokens, run.max_length)
    tokens = sequences * length
    parts["activations"] = _text_activations(text, run, tokens)
    parts["log-prob head"] = _head(text, run, tokens, sequences * shapes.completion_tokens)
    parts["vision"] = _vision_activations(vision, run, sequences, shapes.patches)
    parts["runtime"] = OVERHEAD[run.device]
    return Estimate(parts)


def _optimizer(text: TextShape, vision: VisionShape, run: Run) -> int:
    """Trainable weights' gradients and AdamW's two moments (and LoRA's own weights)."""
    if run.method == "lora":
        return lora_parameters(text, run.lora_rank) * run.adapter_bytes * 4
    trainable = text_parameters(text) + (vision_parameters(vision) if run.train_vision else 0)
    return trainable * run.weight_bytes * 3


def _layer_bytes_per_token(t: TextShape, run: Run) -> int:
    """What one decoder layer saves for its backward, per token."""
    q, kv = t.heads * t.head_dim, t.kv_heads * t.head_dim
    ab = run.weight_bytes
    norms = 2 * t.hidden * (8 + ab)  # RMSNorm works in float32: its input and output kept
    attention = (q + kv) + kv + q + 2 * t.hidden  # q, k after rope, v, output, residuals
    mlp = 4 * t.intermediate  # gate, its activation, up, their product
    total = norms + (attention + mlp) * ab
    if run.method == "lora" and run.adapter_bytes != ab:
        total += (5 * t.hidden + q + t.intermediate) * run.adapter_bytes  # PEFT's input casts
    return total


def _text_activations(t: TextShape, run: Run, tokens: int) -> int:
    layer = _layer_bytes_per_token(t, run) * tokens
    if run.gradient_checkpointing:
        stored = t.layers * tokens * t.hidden * run.weight_bytes
        return stored + 2 * layer  # one layer recomputed, and its gradients
    return t.layers * layer + layer


def _head(t: TextShape, run: Run, tokens: int, completion_tokens: int) -> int:
    columns = min(t.vocab, VOCAB_TILE)
    if run.device == "cpu":
        return min(tokens, TOKEN_TILE) * columns * 4 * CPU_TILE_COPIES
    scored = completion_tokens  # CUDA scores only the completion tokens
    return min(scored, TOKEN_TILE) * columns * run.weight_bytes * 2 + scored * t.hidden * 4


def _vision_activations(v: VisionShape, run: Run, images: int, patches: int) -> int:
    """A tower kept in the graph stores its activations; a frozen one, one block's at a time."""
    block = images * patches * (6 * v.width + 2 * v.mlp) * run.weight_bytes
    # LoRA adapts the language model only: its vision tower is frozen whatever train_vision says.
    trained = run.train_vision and run.method == "full"
    # The hook's term was measured on CPU (transformers 5.19); on an H200 with transformers 5.17
    # the hook changed nothing (17.2 GB with and without, docs/training-gpu.md), so there it
    # over-estimates. Kept: it errs towards refusing, and only runs that keep the hook (the
    # bench's "as before" arm; `folio train-dpo` always releases it) see it.
    if trained or (run.vision_hook and run.gradient_checkpointing):
        if run.gradient_checkpointing:
            return v.depth * images * patches * v.width * run.weight_bytes + 2 * block
        return v.depth * block
    if run.device == "cpu":  # attention scores, one image at a time, two float32 copies
        return block + v.heads * patches * patches * 4 * 2
    return block
