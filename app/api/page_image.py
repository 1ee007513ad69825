"""A page's image for people: the page as Folio rasterised it for its engines (the job's DPI,
the longest-side cap), rendered at the width it is shown at, as PNG."""

from __future__ import annotations

import io

from fastapi import HTTPException

from app.api.context import ApiContext
from app.api.jobs_service import owned
from app.db import job_views
from app.errors import RenderError, StoreUnavailable
from app.pdf.render import rasterize_preview
from app.storage import DocumentCache, StoredObject
from app.storage.options import StorageOptions

MAX_WIDTH = 2000


def page_png(ctx: ApiContext, key: int, job_id: str, page_id: int, width: int) -> bytes:
    """Page `page_id` of the key's job as PNG, at most `width` pixels wide."""
    with ctx.db.session() as session:
        job = owned(session, job_id, key)
        found = job_views.page_document(session, job_id, page_id)
        if found is None:
            raise HTTPException(404, f"no page {page_id} in job {job_id!r}")
        page, document = found
        dpi = int(job.options.get("dpi") or ctx.settings.dpi)
        number, stored = page.number, StoredObject(document.path, 0, document.etag)
        sha256 = document.sha256
    try:
        path = DocumentCache.of(StorageOptions.of(ctx.settings)).local_path(stored, sha256)
        image = rasterize_preview(path, number, dpi, ctx.settings.max_image_side, width)
    except (FileNotFoundError, RenderError, StoreUnavailable) as exc:
        # the upload was purged (retention), or the store is unreachable: no image, said why
        raise HTTPException(410, f"page {page_id}'s document cannot be read now: {exc}") from exc
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
