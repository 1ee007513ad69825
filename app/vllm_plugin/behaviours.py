"""What the plugin does for one request, step by step (pure: no torch, no vLLM).

A request opts in through per-request args (`vllm_xargs` in the REST body, which vLLM hands
over as `SamplingParams.extra_args`). Each behaviour named there gets the tokens and text the
request adds at every step and answers with a `StepAction`: end the request now (only EOS
left possible) and/or tokens to ban at the next position (`actions.py`). Each behaviour is
listed in `BEHAVIOURS` under its own arg name: the loop stop and the liveness probe here, the
no-repeat n-gram guard in `guard.py`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.degeneration import DetectorConfig, LoopDetector, LoopVerdict
from app.degeneration.grounded import GroundedDetector
from app.vllm_plugin.actions import END, NO_ACTION, RequestBehaviour, StepAction
from app.vllm_plugin.guard import GUARD_ARG, NgramGuard

# Per-request arg that asks for the loop stop: {"folio_loop_stop": 1}.
LOOP_STOP_ARG = "folio_loop_stop"
# ... and the thresholds it runs with where they are not the defaults: the same JSON object of
# `DetectorConfig` fields the client's detector runs with (the profile's, the user's over them),
# {"folio_detector": "{\"fill_min_covered\": 2048}"}; vLLM's per-request args are flat.
DETECTOR_ARG = "folio_detector"
# ... and the page's own text with the margin, where the client grounds its verdicts
# (`app.degeneration.grounding`): the plugin asks the same page before it ends the request.
PAGE_TEXT_ARG = "folio_page_text"
MARGIN_ARG = "folio_grounding_margin"
# ... and the copies that text may miss: 1 where it is a scan's OCR read (`grounded.READ_SLACK`)
SLACK_ARG = "folio_grounding_slack"
# Per-request arg of the liveness probe: {"folio_stop_after": N} ends the request once the
# plugin has seen N real output tokens (vllm_stops.probe_plugin_live).
STOP_AFTER_ARG = "folio_stop_after"
MAX_STOP_AFTER = 64


class LoopStop:
    """Folio's online loop detector on the request's text; ends the request at the verdict."""

    def __init__(
        self,
        config: DetectorConfig | None = None,
        page_text: str | None = None,
        margin: int = 0,
        slack: int = 0,
    ) -> None:
        self._detector: LoopDetector | GroundedDetector = (
            LoopDetector(config)
            if page_text is None
            else GroundedDetector(config, page_text, margin, slack=slack)
        )

    @property
    def verdict(self) -> LoopVerdict | None:
        return self._detector.verdict

    def step(self, new_token_ids: Sequence[int], new_text: str) -> StepAction:
        if self._detector.verdict is not None or (new_text and self._detector.feed(new_text)):
            return END
        return NO_ACTION

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> LoopStop | None:
        value = args.get(LOOP_STOP_ARG)
        if value in (None, 0, False, "0", "false"):
            return None
        if value not in (1, True, "1", "true"):
            raise ValueError(f"{LOOP_STOP_ARG} must be 1 or 0, not {value!r}")
        page_text, margin = args.get(PAGE_TEXT_ARG), args.get(MARGIN_ARG, 0)
        if page_text is not None and not isinstance(page_text, str):
            raise ValueError(f"{PAGE_TEXT_ARG} must be the page's text")
        slack = args.get(SLACK_ARG, 0)
        for name, value in ((MARGIN_ARG, margin), (SLACK_ARG, slack)):
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be a whole number of copies")
        return cls(detector_config(args.get(DETECTOR_ARG)), page_text, margin, slack)


class StopAfter:
    """Ends the request once N real token ids have been seen: the start-up probe that proves
    the plugin sees the tokens (a plugin fed only async-scheduling placeholders never counts
    to N, and the request runs to its cap)."""

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0

    def step(self, new_token_ids: Sequence[int], new_text: str) -> StepAction:
        self.seen += len(new_token_ids)
        return END if self.seen >= self.n else NO_ACTION

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> StopAfter | None:
        value = args.get(STOP_AFTER_ARG)
        if value is None:
            return None
        if type(value) is not int or not 1 <= value <= MAX_STOP_AFTER:
            raise ValueError(f"{STOP_AFTER_ARG} must be an integer from 1 to {MAX_STOP_AFTER}")
        return cls(value)


def detector_config(value: Any) -> DetectorConfig | None:
    """The thresholds `DETECTOR_ARG` gives (None: the defaults); ValueError on a bad one."""
    if value is None:
        return None
    try:
        fields = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError:
        fields = None
    if not isinstance(fields, dict):
        raise ValueError(f"{DETECTOR_ARG} must be a JSON object of detector thresholds")
    known = {field.name for field in dataclasses.fields(DetectorConfig)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"{DETECTOR_ARG}: no detector threshold named {', '.join(unknown)}")
    if not all(type(v) is int for v in fields.values()):
        raise ValueError(f"{DETECTOR_ARG}: thresholds are integers")
    return DetectorConfig(**fields)


def detector_arg(config: DetectorConfig | None) -> dict[str, str]:
    """The per-request arg that runs the plugin's detector with `config`: its thresholds that
    are not the defaults (none: no arg)."""
    if config is None:
        return {}
    default = DetectorConfig()
    changed = {
        field.name: getattr(config, field.name)
        for field in dataclasses.fields(DetectorConfig)
        if getattr(config, field.name) != getattr(default, field.name)
    }
    return {DETECTOR_ARG: json.dumps(changed)} if changed else {}


# arg name -> factory: None when the request does not ask; ValueError on a bad value.
BehaviourFactory = Callable[[Mapping[str, Any]], RequestBehaviour | None]
BEHAVIOURS: dict[str, BehaviourFactory] = {
    LOOP_STOP_ARG: LoopStop.from_args,
    STOP_AFTER_ARG: StopAfter.from_args,
    GUARD_ARG: NgramGuard.from_args,
}


def behaviours_for(args: Mapping[str, Any] | None) -> list[RequestBehaviour]:
    """The behaviours a request asks for (its extra_args), in registry order."""
    if not args:
        return []
    found = (factory(args) for name, factory in BEHAVIOURS.items() if name in args)
    return [behaviour for behaviour in found if behaviour is not None]
