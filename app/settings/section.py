"""The base of a settings section (a plan step, an endpoint, the webhooks): a frozen model that
rejects unknown keys, as the settings object does."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
