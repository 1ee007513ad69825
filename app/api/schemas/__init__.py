"""The API's request and response bodies: a new job's (requests), jobs and documents (jobs),
pages and attempts (pages), webhooks (webhooks). Routes and services name them as
`schemas.JobOut`; they are built from ORM rows at the route's edge."""

from app.api.schemas.figures import JobFigures, PageFigures, PageList, PageRowOut, PageSort
from app.api.schemas.jobs import (
    EVENTS_EXAMPLE,
    DocumentOut,
    FailedPageOut,
    JobLinks,
    JobList,
    JobOut,
)
from app.api.schemas.pages import (
    ANSWERS,
    POSITIONS_EXAMPLE,
    VLM_POSITIONS_EXAMPLE,
    AttemptOut,
    PageDetail,
    PageOut,
    VerdictOut,
)
from app.api.schemas.requests import FolderJob, JobOptionsIn, ObjectJob
from app.api.schemas.webhooks import DeliveryOut, DeliveryTryOut, WebhookIn, WebhookOut

__all__ = [
    "ANSWERS",
    "EVENTS_EXAMPLE",
    "POSITIONS_EXAMPLE",
    "VLM_POSITIONS_EXAMPLE",
    "AttemptOut",
    "DeliveryOut",
    "DeliveryTryOut",
    "DocumentOut",
    "FailedPageOut",
    "FolderJob",
    "JobFigures",
    "JobLinks",
    "JobList",
    "JobOptionsIn",
    "JobOut",
    "ObjectJob",
    "PageDetail",
    "PageFigures",
    "PageList",
    "PageOut",
    "PageRowOut",
    "PageSort",
    "VerdictOut",
    "WebhookIn",
    "WebhookOut",
]
