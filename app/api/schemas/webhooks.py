"""What the webhook routes answer and take: a key's default callback, a job's deliveries."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.times import UtcDatetime
from app.db.models import WebhookAttempt, WebhookDelivery


class WebhookIn(BaseModel):
    """Your key's default webhook: where your jobs' events go unless a job names its own."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(
        max_length=2048,
        description="http(s) URL, or null to stop the default.",
        examples=["https://example.com/folio-hook"],
    )
    page_events: bool = Field(default=False, description="Also send page.finished events.")


class WebhookOut(BaseModel):
    url: str | None
    page_events: bool
    secret: str = Field(
        description="Signs every webhook of this key: Folio-Signature: t=TS,v1=HMAC-SHA256 "
        "(secret, 'TS.' + body), hex; for a while after a rotation (POST /v1/webhook/secret) a "
        "second v1= signs with the previous secret. See docs/integrations.md.",
        examples=["whsec_3q2-7wEXAMPLEm9a0"],
    )
    signature_header: str = "Folio-Signature"


class DeliveryTryOut(BaseModel):
    attempted_at: UtcDatetime
    status_code: int | None = Field(description="The receiver's answer; null when none came.")
    latency_s: float
    error: str | None

    @classmethod
    def of(cls, a: WebhookAttempt) -> DeliveryTryOut:
        return cls(
            attempted_at=a.attempted_at,
            status_code=a.status_code,
            latency_s=a.latency_s,
            error=a.error,
        )


class DeliveryOut(BaseModel):
    """One event sent (or being sent) to one URL, with every HTTP attempt."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 12,
                    "event": "job.finished",
                    "event_id": "5b1e0c8f3a9d4e6f8a7b6c5d4e3f2a1b",
                    "url": "https://example.com/folio-hook",
                    "status": "delivered",
                    "attempts": 2,
                    "created_at": "2026-11-26T05:01:12Z",
                    "next_at": None,
                    "finished_at": "2026-11-26T05:01:23Z",
                    "tries": [
                        {
                            "attempted_at": "2026-11-26T05:01:12Z",
                            "status_code": 503,
                            "latency_s": 0.041,
                            "error": None,
                        },
                        {
                            "attempted_at": "2026-11-26T05:01:23Z",
                            "status_code": 200,
                            "latency_s": 0.038,
                            "error": None,
                        },
                    ],
                }
            ]
        }
    )

    id: int
    event: str = Field(examples=["job.finished"])
    event_id: str = Field(description="Also in the body and the Folio-Event-Id header.")
    url: str
    status: str = Field(description="pending (retried with backoff), delivered or failed.")
    attempts: int
    created_at: UtcDatetime
    next_at: UtcDatetime | None = Field(description="When a pending delivery is tried next.")
    finished_at: UtcDatetime | None
    tries: list[DeliveryTryOut]

    @classmethod
    def of(cls, d: WebhookDelivery) -> DeliveryOut:
        return cls(
            id=d.id,
            event=d.event,
            event_id=d.event_id,
            url=d.url,
            status=d.status,
            attempts=d.attempts,
            created_at=d.created_at,
            next_at=d.next_at if d.status == "pending" else None,
            finished_at=d.finished_at,
            tries=[DeliveryTryOut.of(a) for a in d.tries],
        )
