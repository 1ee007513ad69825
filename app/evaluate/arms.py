"""Arms of an evaluation: `LABEL=PLAN[@ENDPOINT]`, a plan with its VLM steps pointed at one
endpoint, so base and tuned models run the very same ladder."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.errors import ConfigError
from app.settings import PlanStep, Settings

_SPEC = re.compile(r"^(?:(?P<label>[\w.-]+)=)?(?P<plan>[\w.:-]+)(?:@(?P<endpoint>[\w.-]+))?$")


@dataclass(frozen=True)
class Arm:
    label: str
    plan: str
    endpoint: str | None = None

    @property
    def plan_key(self) -> str:
        """The name of the arm's plan in the evaluation's settings."""
        return f"eval:{self.label}"


def parse_arm(spec: str) -> Arm:
    match = _SPEC.match(spec.strip())
    if not match:
        raise ConfigError(f"arm {spec!r}: expected LABEL=PLAN or LABEL=PLAN@ENDPOINT")
    plan, endpoint = match["plan"], match["endpoint"]
    label = match["label"] or (f"{plan}@{endpoint}" if endpoint else plan)
    return Arm(label, plan, endpoint)


def settings_with_arms(settings: Settings, arms: Sequence[Arm]) -> Settings:
    """`settings` plus one plan per arm (`eval:LABEL`); raises ConfigError on unknown names."""
    labels = [a.label for a in arms]
    if len(arms) < 1 or len(set(labels)) != len(labels):
        raise ConfigError(f"arms need distinct labels: {labels}")
    plans = dict(settings.plans)
    for arm in arms:
        if arm.plan not in settings.plans:
            raise ConfigError(f"arm {arm.label}: unknown plan {arm.plan!r} ({sorted(plans)})")
        if arm.endpoint and arm.endpoint not in settings.vlm_endpoints:
            known = sorted(settings.vlm_endpoints)
            raise ConfigError(f"arm {arm.label}: unknown endpoint {arm.endpoint!r} ({known})")
        plans[arm.plan_key] = [_retarget(step, arm.endpoint) for step in settings.plans[arm.plan]]
    return settings.model_copy(update={"plans": plans})


def _retarget(step: PlanStep, endpoint: str | None) -> PlanStep:
    if endpoint is None or step.engine != "vlm":
        return step
    return step.model_copy(update={"endpoint": endpoint})
