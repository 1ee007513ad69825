"""Teach the flywheel's small Qwen2-VL to read its pages: supervised training from random weights.

Made for a GPU turn (torch and transformers only, no network, stops itself by the clock):

    python -m bench.flywheel.sft --base DIR --text text.json --atlas atlas.npy \
        --seconds 420 --out OUT

Batches are drawn on the device: random runs of 1-10 consecutive training lines, drawn from the
glyph atlas, patched as Qwen2-VL's image processor patches them (`patchify`, checked against
the processor in the tests), behind the chat template's prompt. It writes `sft.json` (loss
curve, step time, held-out CER by page length) as it goes, and the weights in bfloat16:
`model.safetensors` at the end, `model-half.safetensors` at half time.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.flywheel import data

EVAL_LINES = (1, 2, 4, 7, 10)  # page lengths read back at the end
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def patchify(
    pages: torch.Tensor, patch: int = 14, merge: int = 2, temporal: int = 2
) -> torch.Tensor:
    """[B, H, W] grey pixels (0-255) -> Qwen2-VL's flattened patches, images one after another."""
    batch, height, width = pages.shape
    mean = torch.tensor(CLIP_MEAN, device=pages.device).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD, device=pages.device).view(1, 3, 1, 1)
    rgb = (pages.float() / 255.0).unsqueeze(1).expand(batch, 3, height, width)
    rgb = (rgb - mean) / std
    frames = rgb.unsqueeze(1).expand(batch, temporal, 3, height, width)
    gh, gw = height // patch, width // patch
    x = frames.reshape(batch, 1, temporal, 3, gh // merge, merge, patch, gw // merge, merge, patch)
    x = x.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    return x.reshape(batch * gh * gw, 3 * temporal * patch * patch)


def _token_types_wanted() -> bool:
    from transformers import Qwen2VLForConditionalGeneration

    return (
        "mm_token_type_ids" in inspect.signature(Qwen2VLForConditionalGeneration.forward).parameters
    )


TOKEN_TYPES = _token_types_wanted()


class Batches:
    """Random pages of the training text, drawn on the device."""

    def __init__(self, base: Path, text: dict[str, Any], atlas: np.ndarray, device: str) -> None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base)
        self.device = device
        self.pad = tokenizer.convert_tokens_to_ids("<|endoftext|>")
        self.eos = tokenizer.convert_tokens_to_ids(data.EOS_TOKEN)
        self.image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
        prompt = prompt_ids(tokenizer)
        cut = prompt.index(self.image_pad)
        self.prefix, self.suffix = prompt[:cut], prompt[cut + 1 :]
        char_ids = [tokenizer.encode(ch, add_special_tokens=False) for ch in data.CHARS + "\n"]
        assert all(len(ids) == 1 for ids in char_ids), "the tokenizer must be one token a character"
        self.char_id = torch.tensor([ids[0] for ids in char_ids], device=device)
        lines = [line for source in text["train"] for line in source]
        owner = [n for n, source in enumerate(text["train"]) for _ in source]
        self.lines = torch.as_tensor(data.char_grid(lines), device=device)
        self.lengths = torch.tensor([len(line) for line in lines], device=device)
        owners = torch.tensor(owner, device=device)
        self.starts = {}
        for count in range(1, data.MAX_LINES + 1):
            last = torch.arange(len(lines), device=device) + count - 1
            ok = last < len(lines)
            ok[ok.clone()] &= owners[last[ok]] == owners[ok]
            self.starts[count] = torch.nonzero(ok).flatten()
        self.atlas = torch.as_tensor(atlas, device=device)

    def draw(self, size: int, count: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        starts = self.starts[count]
        pick = starts[torch.randint(len(starts), (size,), device=self.device, generator=generator)]
        rows = pick[:, None] + torch.arange(count, device=self.device)
        grid, lengths = self.lines[rows], self.lengths[rows]  # [B, R, C], [B, R]
        return {"grid": grid, "lengths": lengths}

    def pixels(self, grid: torch.Tensor) -> torch.Tensor:
        batch, count, columns = grid.shape
        cells = self.atlas[grid]  # B, R, C, 28, 14
        ink = cells.permute(0, 1, 3, 2, 4).reshape(
            batch, count * data.CELL[0], columns * data.CELL[1]
        )
        return 255 - ink

    def answer(
        self, grid: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each page's transcription + EOS as token ids, right-padded, and the lengths."""
        batch, count, columns = grid.shape
        tokens = torch.cat([self.char_id[grid], self.char_id[-1].expand(batch, count, 1)], dim=2)
        column = torch.arange(columns + 1, device=grid.device)
        valid = (column < lengths[..., None]) | (column == columns)
        valid[:, -1, columns] = False  # no newline after the last line
        tokens, valid = tokens.reshape(batch, -1), valid.reshape(batch, -1)
        order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)
        tokens = torch.gather(tokens, 1, order)
        sizes = valid.sum(1)
        width = int(sizes.max()) + 1
        tokens = tokens[:, :width].clone()
        place = torch.arange(width, device=grid.device)[None]
        tokens[place == sizes[:, None]] = self.eos
        tokens[place > sizes[:, None]] = self.pad
        return tokens, sizes + 1

    def inputs(self, grid: torch.Tensor, lengths: torch.Tensor) -> dict[str, torch.Tensor]:
        batch, count, columns = grid.shape
        answer, sizes = self.answer(grid, lengths)
        image_tokens = count * columns // 2  # merged 28 x 28: 2 characters of one line
        head = torch.tensor(
            self.prefix + [self.image_pad] * image_tokens + self.suffix, device=grid.device
        )
        ids = torch.cat([head.expand(batch, -1), answer], dim=1)
        labels = ids.clone()
        labels[:, : len(head)] = -100
        place = torch.arange(answer.shape[1], device=grid.device)[None]
        labels[:, len(head) :][place >= sizes[:, None]] = -100
        mask = torch.ones_like(ids)
        mask[:, len(head) :][place >= sizes[:, None]] = 0
        height, width = count * data.CELL[0] // 14, columns * data.CELL[1] // 14
        thw = torch.tensor([[1, height, width]], device=grid.device).expand(batch, 3)
        inputs = {
            "input_ids": ids,
            "attention_mask": mask,
            "labels": labels,
            "pixel_values": patchify(self.pixels(grid)),
            "image_grid_thw": thw,
        }
        if TOKEN_TYPES:  # transformers >= 5.18 wants the image tokens marked for M-RoPE
            inputs["mm_token_type_ids"] = (ids == self.image_pad).to(torch.int32)
        return inputs


def prompt_ids(tokenizer: Any) -> list[int]:
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": data.PROMPT}]}
    ]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def cer(said: str, truth: str) -> float:
    """Character error rate: edit distance over the truth's length."""
    previous = list(range(len(truth) + 1))
    for i, a in enumerate(said, 1):
        current = [i]
        for j, b in enumerate(truth, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1] / max(1, len(truth))


@torch.no_grad()
def evaluate(
    model: Any, batches: Batches, text: dict[str, Any], per_count: int, seed: int
) -> dict[str, Any]:
    """Greedy transcription of held-out pages, per page length: CER and pages cut at the cap."""
    model.eval()
    rng = random.Random(seed)
    sources = [lines for lines in text["held_out"] if len(lines) >= data.MAX_LINES]
    out: dict[str, Any] = {}
    decode = {i: ch for i, ch in enumerate(data.CHARS + "\n")}
    id_to_index = {int(v): k for k, v in enumerate(batches.char_id.tolist())}
    for count in EVAL_LINES:
        pages = [data.page_lines(rng.choice(sources), rng, count) for _ in range(per_count)]
        grid = torch.as_tensor(np.stack([data.char_grid(p) for p in pages]), device=batches.device)
        lengths = torch.tensor([[len(line) for line in p] for p in pages], device=batches.device)
        inputs = batches.inputs(grid, lengths)
        head = inputs["input_ids"].shape[1] - int(inputs["labels"].ne(-100).sum(1).max())
        cap = count * (data.COLUMNS + 1) + 40
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=batches.device == "cuda"):
            generated = model.generate(
                input_ids=inputs["input_ids"][:, :head],
                attention_mask=torch.ones_like(inputs["input_ids"][:, :head]),
                pixel_values=inputs["pixel_values"],
                image_grid_thw=inputs["image_grid_thw"],
                **(
                    {"mm_token_type_ids": inputs["mm_token_type_ids"][:, :head]}
                    if TOKEN_TYPES
                    else {}
                ),
                max_new_tokens=cap,
                do_sample=False,
                eos_token_id=batches.eos,
                pad_token_id=batches.pad,
            )
        rates: list[float] = []
        examples: list[dict[str, str]] = []
        capped = 0
        for page, row in zip(pages, generated[:, head:].tolist(), strict=True):
            ended = batches.eos in row
            row = row[: row.index(batches.eos)] if ended else row
            said = "".join(decode[id_to_index[t]] for t in row if t in id_to_index)
            truth = data.transcription(page)
            rates.append(cer(said, truth))
            capped += not ended
            if len(examples) < 2:
                examples.append({"truth": truth, "said": said[:600]})
        out[str(count)] = {
            "cer": round(sum(rates) / len(rates), 4),
            "capped": capped,
            "pages": len(pages),
            "examples": examples,
        }
    model.train()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--text", type=Path, required=True)
    parser.add_argument("--atlas", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=420)
    parser.add_argument("--batch", type=int, default=96)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", type=Path, help="start from these weights (safetensors)")
    parser.add_argument("--ramp", type=int, default=150, help="steps per extra line allowed")
    parser.add_argument("--eval-pages", type=int, default=8, help="held-out pages per length")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    from transformers import AutoConfig, Qwen2VLForConditionalGeneration

    began = time.monotonic()
    torch.manual_seed(args.seed)
    text = json.loads(args.text.read_text())
    batches = Batches(args.base, text, np.load(args.atlas), args.device)
    config = AutoConfig.from_pretrained(args.base)
    model = Qwen2VLForConditionalGeneration(config)
    if args.init:
        from safetensors.torch import load_file

        model.load_state_dict({k: v.float() for k, v in load_file(args.init).items()})
    model = model.to(args.device)
    model.train()
    fused = args.device == "cuda"
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01, fused=fused
    )
    generator = torch.Generator(device=args.device).manual_seed(args.seed)
    counts = random.Random(args.seed)
    report: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "parameters": sum(p.numel() for p in model.parameters()),
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "curve": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    budget = args.seconds - 60  # the held-out evaluation and saving after the last step
    warmup, total, step, half_saved, losses = 200, None, 0, False, []
    train_began = time.monotonic()
    while True:
        elapsed = time.monotonic() - train_began
        if elapsed > budget:
            break
        if total is None and step == 50:
            total = int(budget / (elapsed / step))
            report["planned_steps"] = total
        progress = step / total if total else 0.0
        scale = min(1.0, (step + 1) / warmup) * (
            0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        )
        for group in optimizer.param_groups:
            group["lr"] = args.lr * scale
        longest = min(data.MAX_LINES, 2 + step // args.ramp)  # short pages first
        drawn = batches.draw(args.batch, counts.randint(1, longest), generator)
        with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.device == "cuda"):
            loss = model(**batches.inputs(drawn["grid"], drawn["lengths"])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        step += 1
        if step % 50 == 0:
            mean = float(torch.stack(losses).mean())
            losses = []
            report["curve"].append(
                {
                    "step": step,
                    "loss": round(mean, 4),
                    "s": round(elapsed, 1),
                    "lr": round(args.lr * scale, 6),
                }
            )
            report["steps"] = step
            (args.out / "sft.json").write_text(json.dumps(report, indent=1))
            print(f"step {step} loss {mean:.3f} at {elapsed:.0f}s", flush=True)
        if not half_saved and elapsed > budget / 2:
            save(model, args.out / "model-half.safetensors")
            half_saved = True
    report["steps"] = step
    report["train_seconds"] = round(time.monotonic() - train_began, 1)
    save(model, args.out / "model.safetensors")
    report["held_out"] = evaluate(model, batches, text, args.eval_pages, args.seed + 1)
    report["seconds"] = round(time.monotonic() - began, 1)
    (args.out / "sft.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "curve"}, indent=1)[:4000])


def save(model: Any, path: Path) -> None:
    from safetensors.torch import save_file

    state = {
        k: v.detach().to(torch.bfloat16).contiguous().cpu() for k, v in model.state_dict().items()
    }
    save_file(state, str(path), metadata={"format": "pt"})


if __name__ == "__main__":
    main()
