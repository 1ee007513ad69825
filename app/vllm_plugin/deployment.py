"""Whether the plugin can work on the vLLM server it is loaded into (pure: no torch, no vLLM).

Read from vLLM 0.32/0.33 source (docs/loop-stop-gpu.md): under async scheduling, the GPU
default, the real token ids reach a V1 logits processor only when it is named with
`--logits-processors`; with speculative decoding processors are dropped or refused.
"""

from __future__ import annotations

from typing import Any

PROCESSOR = "app.vllm_plugin.processor:FolioLogitsProcessor"


def named_on_command_line(model_config: Any) -> bool:
    """Whether `--logits-processors` names this class (the only way vLLM repairs the async
    placeholders for a processor)."""
    for named in getattr(model_config, "logits_processors", None) or ():
        name = named if isinstance(named, str) else f"{named.__module__}:{named.__qualname__}"
        if name == PROCESSOR:
            return True
    return False


def check_deployment(vllm_config: Any) -> None:
    """Refuse to start where the plugin would accept requests and stop nothing."""
    if getattr(vllm_config, "speculative_config", None):
        raise RuntimeError(
            "Folio's vLLM plugin cannot run with speculative decoding (vLLM drops or refuses "
            "logits processors there): serve without it, or uninstall the plugin and rely on "
            "Folio's client-side stop."
        )
    scheduler = getattr(vllm_config, "scheduler_config", None)
    if getattr(scheduler, "async_scheduling", False) and not named_on_command_line(
        vllm_config.model_config
    ):
        raise RuntimeError(
            "Folio's vLLM plugin would see only placeholder token ids under async scheduling: "
            f"serve with --logits-processors {PROCESSOR} "
            "(or --no-async-scheduling), or uninstall the plugin and rely on Folio's "
            "client-side stop (docs/loop-stop-gpu.md)."
        )
