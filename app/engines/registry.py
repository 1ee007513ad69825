"""Builds engines on first use and keeps one of each for the process."""

from __future__ import annotations

import threading

from app.engines.base import Engine
from app.engines.verdict_read import ScanReads
from app.errors import ConfigError
from app.settings import PlanStep, Settings


class EngineSet:
    """The engines a worker needs, created lazily from settings; `close()` releases them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engines: dict[str, Engine] = {}
        self._reads: ScanReads | None = None
        self._lock = threading.Lock()

    def for_step(self, step: PlanStep) -> Engine:
        key = f"vlm:{step.endpoint}" if step.engine == "vlm" else step.engine
        with self._lock:
            if key not in self._engines:
                self._engines[key] = self._build(step)
            return self._engines[key]

    def _build(self, step: PlanStep) -> Engine:
        if step.engine == "textlayer":
            from app.engines.textlayer import TextLayerEngine

            return TextLayerEngine()
        if step.engine == "tesseract":
            from app.engines.tesseract import TesseractEngine

            return TesseractEngine(self.settings.tesseract_lang, self.settings.tessdata_dir)
        return self._build_vlm(step)

    def _build_vlm(self, step: PlanStep) -> Engine:
        endpoint = self.settings.vlm_endpoints.get(step.endpoint or "")
        if endpoint is None:
            raise ConfigError(f"plan step {step.name!r} names unknown endpoint {step.endpoint!r}")
        from app.degeneration import DetectorConfig, LoopDetector
        from app.engines.vlm import NoLoopStop, VlmEngine

        profile = self.settings.profile_of(step.endpoint or "")
        if not self.settings.detector_online:  # the server's own stop alone, if any
            return VlmEngine(step.endpoint or "", endpoint, NoLoopStop, profile, None)
        # The profile's thresholds for its format (structured output), the user's over them.
        config = DetectorConfig(**(profile.detector | self.settings.detector))
        margin = self.settings.detector_grounding_margin
        grounding = margin if self.settings.detector_grounding else None
        reads = self._scan_reads() if grounding is not None else None
        return VlmEngine(
            step.endpoint or "", endpoint, lambda: LoopDetector(config), profile, grounding, reads
        )

    def _scan_reads(self) -> ScanReads | None:
        """The worker's reader of scans at their verdicts (one for every endpoint)."""
        settings = self.settings
        if not settings.detector_grounding_read:
            return None
        if self._reads is None:
            self._reads = ScanReads(
                settings.tesseract_lang,
                settings.tessdata_dir,
                settings.detector_grounding_read_hold_chars,
                settings.detector_grounding_read_workers,
                settings.detector_grounding_read_wait_s,
                settings.detector_grounding_read_moved_on_chars,
            )
        return self._reads

    def close(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.close()
            self._engines.clear()
            if self._reads is not None:
                self._reads.close()
                self._reads = None
