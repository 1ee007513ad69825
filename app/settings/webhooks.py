"""Job callbacks (`webhooks`): where they may go, how long they are retried."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.settings.section import Section


class WebhookSettings(Section):
    """Job callbacks: where they may go, how long they are retried."""

    allow_private: bool = Field(
        default=False,
        description="Deliver to loopback, private, link-local and other non-global addresses "
        "(off: a key could make the server call its own or its network's admin routes).",
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one delivery may take in all (resolve, connect, send, the reply's "
        "first KiB): a receiver that answers a byte at a time is cut off here.",
    )
    concurrency: int = Field(default=16, ge=1, description="Deliveries one process sends at once.")
    per_receiver: int = Field(
        default=2,
        ge=1,
        description="Deliveries one process sends at once to one receiver (scheme, host and "
        "port): a slow receiver holds only these lanes, never another receiver's deliveries.",
    )
    first_retry_s: float = Field(
        default=10.0, gt=0, description="Wait before the first retry; doubles each time, up to 1 h."
    )
    retry_for_h: float = Field(
        default=24.0, gt=0, description="Hours a delivery is retried before it is given up."
    )
    rotation_grace_h: float = Field(
        default=24.0,
        ge=0,
        description="Hours a rotated signing secret (POST /v1/webhook/secret) still signs "
        "webhooks beside the new one, so a receiver can switch without losing any.",
    )
    poll_s: float = Field(
        default=1.0, gt=0, description="Seconds between a dispatcher's looks for due deliveries."
    )


class WebhookFields(BaseModel):
    """The `webhooks` section."""

    webhooks: WebhookSettings = Field(
        default_factory=WebhookSettings, description="Job callbacks (see docs/integrations.md)."
    )
