"""Reading order of a page's blocks by recursive cuts (an XY-cut): columns left to right, and
between the items that span a gutter, bands top to bottom.

A region is cut first at a gutter, an x range no block crosses from the region's top to its
bottom; without one, at the horizontal gaps. Bands are cut only where needed: neighbouring bands
that share a gutter are one region again (the paragraph gaps of two columns often line up, and a
cut there would read the columns' tops before their bottoms), so only an item that spans the
gutter, a title or a full-width figure, parts the columns above it from those below. The page's
middle is no guide: a left column wider than the right one ends past it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from app.textlayer.model import Box

_NUMBERED = re.compile(r"^#{1,6} (\d{1,2})[.)] ")  # a heading "### 2. Pythagorean Theorem"
MIN_GUTTER = 6.0  # points: narrower gaps are word or cell spacing, not a column's gutter
_T = TypeVar("_T")


def xy_cut(
    items: Sequence[_T],
    box_of: Callable[[_T], Box],
    section_gap: float,
    min_gutter: float = MIN_GUTTER,
) -> list[_T]:
    """`items` in reading order, each placed by `box_of(item)`. A horizontal gap of
    `section_gap` or more parts sections (a grid of cards is read row by row) even where
    the columns go on below it; gutters are `min_gutter` wide or more (in the boxes' unit)."""
    if len(items) <= 1:
        return list(items)
    columns = _split(items, box_of, vertical=True, minimum=min_gutter)
    if len(columns) > 1:
        return [
            item for column in columns for item in xy_cut(column, box_of, section_gap, min_gutter)
        ]
    bands = _split(items, box_of, vertical=False, minimum=0.0)
    if len(bands) == 1:
        return sorted(items, key=lambda item: (box_of(item).y0, box_of(item).x0))
    ordered: list[_T] = []
    for region in _regions(bands, box_of, section_gap, min_gutter):
        if len(region) == 1 or len(_split(region, box_of, True, min_gutter)) == 1:
            ordered.extend(sorted(region, key=lambda item: (box_of(item).y0, box_of(item).x0)))
        else:
            ordered.extend(xy_cut(region, box_of, section_gap, min_gutter))
    return ordered


def _regions(
    bands: list[list[_T]], box_of: Callable[[_T], Box], section_gap: float, min_gutter: float
) -> list[list[_T]]:
    """Consecutive bands merged while the merged items still have a gutter and the gap
    between them is under `section_gap`."""
    regions: list[list[_T]] = []
    for band in bands:
        gap = (
            min(box_of(i).y0 for i in band) - max(box_of(i).y1 for i in regions[-1])
            if regions
            else 0.0
        )
        if (
            regions
            and gap < section_gap
            and len(_split([*regions[-1], *band], box_of, True, min_gutter)) > 1
        ):
            regions[-1] = [*regions[-1], *band]
        else:
            regions.append(list(band))
    return regions


def _split(
    items: Sequence[_T], box_of: Callable[[_T], Box], vertical: bool, minimum: float
) -> list[list[_T]]:
    """`items` parted at every gap wider than `minimum` across the region: x gaps (gutters)
    when `vertical`, else y gaps; in order left to right or top to bottom."""
    spans = [(box.x0, box.x1) if vertical else (box.y0, box.y1) for box in map(box_of, items)]
    order = sorted(range(len(items)), key=lambda i: spans[i])
    groups: list[list[_T]] = []
    reach = float("-inf")
    for i in order:
        start, end = spans[i]
        if not groups or start - reach > minimum:
            groups.append([])
        groups[-1].append(items[i])
        reach = max(reach, end)
    return groups


def by_section_numbers(parts: list[str]) -> list[str]:
    """Rendered blocks with numbered sections put in their numbers' order, where the layout's
    order broke it: cards in a grid read row by row on one page and column by column on
    another (olmOCR-bench's mathfuncs and mathfuncs_colswitch), and only the numbers tell.
    Only for three or more headings numbered 1, 2, 3, ... without a gap."""
    starts = [(i, int(m.group(1))) for i, part in enumerate(parts) if (m := _NUMBERED.match(part))]
    numbers = [number for _, number in starts]
    consecutive = list(range(min(numbers, default=0), min(numbers, default=0) + len(numbers)))
    if len(numbers) < 3 or numbers == consecutive or sorted(numbers) != consecutive:
        return parts
    ends = [i for i, _ in starts[1:]] + [len(parts)]
    sections = sorted(
        ((number, parts[i:end]) for (i, number), end in zip(starts, ends, strict=True)),
        key=lambda section: section[0],
    )
    return parts[: starts[0][0]] + [part for _, section in sections for part in section]
