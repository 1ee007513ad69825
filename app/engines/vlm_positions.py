"""Positions from a VLM's answer: the blocks its profile's parser read with their boxes,
placed on the image sent and on the PDF page (`app.positions.answer`)."""

from __future__ import annotations

from typing import Any

from app.domain import PageInput
from app.engines.vlm_image import model_image_size
from app.positions import Placed
from app.positions.answer import answer_positions
from app.profiles import Profile
from app.profiles.parsers import Parsed
from app.profiles.sizing import box_frame_size


def vlm_positions(
    page: PageInput, profile: Profile, parsed: Parsed | None, max_side: int | None
) -> dict[str, Any] | None:
    """The answer's blocks as the page JSON's `positions`; None where the profile's format
    gives no boxes, the answer placed none, or the page has no PDF geometry. A page sent
    turned gets none: only olmOCR's feedback turns pages, and its answers carry no boxes."""
    frame = profile.response.boxes
    if frame is None or parsed is None or not parsed.boxes:
        return None
    if page.geometry is None or page.rotation:
        return None
    sent = model_image_size(page, profile.image, max_side)
    blocks = [Placed(b.text, b.box, category=b.category) for b in parsed.boxes]
    page_pt = (page.geometry.width_pt, page.geometry.height_pt)
    positions = answer_positions("vlm", blocks, box_frame_size(frame, *sent), sent, page_pt)
    if positions is not None:
        positions["profile"] = profile.tag
    return positions
