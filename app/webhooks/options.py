"""What the webhook outbox and its sender take of the settings, read once into one value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from app.settings import Settings

# A send holds its delivery for its own timeout and this margin: a sender that died mid-send
# lets another take the delivery, a slow one is not overtaken.
CLAIM_MARGIN_S = 30.0


@dataclass(frozen=True)
class WebhookOptions:
    """A dispatcher's timing and URL policy (the `webhooks` settings, docs/integrations.md)."""

    timeout_s: float  # one POST, in all: its deadline
    concurrency: int  # sends in flight at once, in all
    per_receiver: int  # sends in flight at once to one receiver
    poll_s: float  # between two looks for due deliveries
    allow_private: bool  # whether a URL may name a non-global address
    first_retry_s: float  # the wait before the first retry; it doubles, up to an hour
    give_up: timedelta  # a delivery is retried this long after it was made, then failed

    @classmethod
    def from_settings(cls, settings: Settings) -> WebhookOptions:
        webhooks = settings.webhooks
        return cls(
            timeout_s=webhooks.timeout_s,
            concurrency=webhooks.concurrency,
            per_receiver=webhooks.per_receiver,
            poll_s=webhooks.poll_s,
            allow_private=webhooks.allow_private,
            first_retry_s=webhooks.first_retry_s,
            give_up=timedelta(hours=webhooks.retry_for_h),
        )

    @property
    def claim_for(self) -> timedelta:
        """How long one send holds its delivery."""
        return timedelta(seconds=self.timeout_s + CLAIM_MARGIN_S)
