"""`folio train-dpo`: fine-tune a VLM on export-dpo pairs (needs the `folio[train]` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console

from app.cli import exit_codes
from app.errors import MissingExtraError, TrainInputError
from app.train.dose import dose_warning
from app.train.gate import PROMOTE, GatePolicy
from app.train.gate_report import VERDICT_MD
from app.train.options import DEFAULT_LEARNING_RATE, GateOptions, TrainOptions
from app.train.run import HELD_OUT_FILE, prepare
from app.train.seeds import train_seeds

console = Console(stderr=True)


def train_dpo_command(
    pairs: Annotated[
        list[Path], typer.Argument(metavar="PAIRS", help="Folders written by `folio export-dpo`.")
    ],
    base_model: Annotated[
        Path, typer.Option("--base-model", help="Local Hugging Face folder of the VLM to tune.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the tuned, servable model.")],
    method: Annotated[
        str, typer.Option(help="lora (adapters merged into the weights at the end) or full.")
    ] = "lora",
    learning_rate: Annotated[
        float | None,
        typer.Option(
            help=f"Default {DEFAULT_LEARNING_RATE['lora']:g} for LoRA, "
            f"{DEFAULT_LEARNING_RATE['full']:g} for a full tune."
        ),
    ] = None,
    epochs: Annotated[float, typer.Option(help="Passes over the pairs.")] = 3.0,
    max_steps: Annotated[
        int, typer.Option(help="Stop after this many steps (overrides epochs).")
    ] = -1,
    batch_size: Annotated[int, typer.Option(help="Pairs per device step.")] = 4,
    grad_accum: Annotated[int, typer.Option(help="Steps accumulated per update.")] = 1,
    beta: Annotated[
        float, typer.Option(help="DPO beta: how far from the base model to move.")
    ] = 0.1,
    sft_weight: Annotated[
        float,
        typer.Option(
            help="Weight of the SFT term on the chosen side beside DPO (the flywheel bench's "
            "recipe; 0: plain DPO, which one training seed in three turned worse)."
        ),
    ] = 1.0,
    dpo_weight: Annotated[
        float,
        typer.Option(help="Weight of the DPO term (0 with --sft-weight: SFT on chosen only)."),
    ] = 1.0,
    lora_rank: Annotated[int, typer.Option(help="LoRA rank (language-model projections).")] = 16,
    lora_alpha: Annotated[int, typer.Option(help="LoRA alpha.")] = 32,
    train_vision: Annotated[
        bool,
        typer.Option("--train-vision", help="Also train the vision tower (frozen by default)."),
    ] = False,
    max_length: Annotated[
        int, typer.Option(help="Token cap per sequence; must exceed the longest prompt + image.")
    ] = 4096,
    held_out: Annotated[
        float, typer.Option(help=f"Share of pages never trained on (listed in {HELD_OUT_FILE}).")
    ] = 0.1,
    seed: Annotated[
        int, typer.Option(help="Seed for the split, the data order and the init.")
    ] = 42,
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Train N runs (seeds --seed, +1, ...) on the same split; the gate keeps one.",
        ),
    ] = 1,
    device: Annotated[str, typer.Option(help="auto (CUDA when present), cpu or cuda.")] = "auto",
    gradient_checkpointing: Annotated[
        bool,
        typer.Option(
            "--gradient-checkpointing",
            help="Trade compute for memory (the default with CUDA; off on CPU).",
        ),
    ] = False,
    no_checkpointing: Annotated[
        bool,
        typer.Option("--no-checkpointing", help="No gradient checkpointing, even with CUDA."),
    ] = False,
    fp32_adapters: Annotated[
        bool,
        typer.Option(
            "--fp32-adapters",
            help="Keep LoRA adapters in float32 (default: the model's dtype where safe, bf16).",
        ),
    ] = False,
    max_image_tokens: Annotated[
        int | None,
        typer.Option(
            min=4,
            metavar="N",
            help="Resize page images to at most this many image tokens (less memory).",
        ),
    ] = None,
    no_memory_check: Annotated[
        bool,
        typer.Option(
            "--no-memory-check",
            help="Skip the estimate of peak memory that lowers the batch to fit, or stops.",
        ),
    ] = False,
    memory_budget: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            metavar="GIB",
            help="GiB the run may use (default: the device's free memory), e.g. to leave room.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out if it exists (at the end).")
    ] = False,
    no_gate: Annotated[
        bool,
        typer.Option(
            "--no-gate",
            help="Skip the promotion gate (the base and the tuned model reading held-out pages).",
        ),
    ] = False,
    gate_pages: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Held-out pages the gate reads at most (looped pages first, then healthy).",
        ),
    ] = 200,
    gate_max_tokens: Annotated[
        int,
        typer.Option(min=1, metavar="N", help="Tokens per page and model in the gate's reading."),
    ] = 1024,
    gate_max_p: Annotated[
        float,
        typer.Option(
            metavar="P",
            help="Promote only when fewer loops is this unlikely by chance (McNemar p; 1: any).",
        ),
    ] = 0.05,
    gate_cer_tolerance: Annotated[
        float,
        typer.Option(
            metavar="CER",
            help="CER the tuned model may lose against the accepted answers.",
        ),
    ] = 0.02,
) -> None:
    """DPO fine-tuning on looping/healthy pairs: a model that loops less, served by vLLM as is."""
    if method not in ("lora", "full") or device not in ("auto", "cpu", "cuda"):
        console.print("[red]--method is lora or full; --device is auto, cpu or cuda[/]")
        raise typer.Exit(exit_codes.USAGE)
    if not (0.0 <= gate_max_p <= 1.0 and gate_cer_tolerance >= 0.0):
        console.print("[red]--gate-max-p is from 0 to 1; --gate-cer-tolerance is 0 or more[/]")
        raise typer.Exit(exit_codes.USAGE)
    if gradient_checkpointing and no_checkpointing:
        console.print("[red]--gradient-checkpointing and --no-checkpointing exclude each other[/]")
        raise typer.Exit(exit_codes.USAGE)
    options = TrainOptions(
        method="lora" if method == "lora" else "full",
        learning_rate=learning_rate,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        grad_accum=grad_accum,
        beta=beta,
        sft_weight=sft_weight,
        dpo_weight=dpo_weight,
        lora_rank=lora_rank,
        lora_alpha=lora_alpha,
        freeze_vision=not train_vision,
        max_length=max_length,
        held_out_share=held_out,
        seed=seed,
        device=_device(device),
        gradient_checkpointing=True
        if gradient_checkpointing
        else (False if no_checkpointing else None),
        adapter_dtype="float32" if fp32_adapters else "model",
        max_image_tokens=max_image_tokens,
        memory_check=not no_memory_check,
        memory_budget_gib=memory_budget,
        gate=GateOptions(
            enabled=not no_gate,
            max_pages=gate_pages,
            max_tokens=gate_max_tokens,
            policy=GatePolicy(max_p=gate_max_p, max_cer_increase=gate_cer_tolerance),
        ),
    )
    try:
        plan = prepare(pairs, base_model, out, options, force=force)
        console.print(
            f"Training on {len(plan.split.train)} pairs, holding out "
            f"{len(plan.split.held_out)} ({options.method}, lr {options.lr:g}, "
            f"{options.loss_text()})"
        )
        warning = dose_warning(len(plan.split.train))
        if warning:
            console.print(f"[yellow]{warning}[/]", soft_wrap=True)
        card = train_seeds(plan, options, seeds, notify=console.print)
    except TrainInputError as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        raise typer.Exit(exit_codes.NO_INPUT) from exc
    except MissingExtraError as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        raise typer.Exit(exit_codes.CONFIG) from exc
    console.print(
        f"Tuned model in {out} ({card['steps']} steps, {card['train_seconds']:.0f} s); "
        f"held-out pages in {out / HELD_OUT_FILE}; card in {out / 'TRAINING_CARD.md'}"
    )
    _print_gate(card.get("gate"), out)


def _print_gate(gate: dict[str, Any] | None, out: Path) -> None:
    if gate is None:
        console.print("[yellow]No promotion gate (--no-gate): compare before serving it.[/]")
        return
    base, tuned = gate["base"], gate["tuned"]
    figures = (
        f"loops on held-out pages: base {base['loops']} of {base['pages']}, "
        f"tuned {tuned['loops']} of {tuned['pages']}; {gate['evidence']}"
    )
    if gate["decision"] == PROMOTE:
        console.print(f"[green]Gate: promote the tuned model[/] ({figures})", soft_wrap=True)
    else:
        console.print(
            f"[yellow]Gate: keep the base model[/]: {'; '.join(gate['reasons'])} ({figures})",
            soft_wrap=True,
        )
    console.print(f"Verdict in {out / VERDICT_MD}")


def _device(name: str) -> Literal["auto", "cpu", "cuda"]:
    return "cpu" if name == "cpu" else "cuda" if name == "cuda" else "auto"
