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

from collections.abc import Callable, Sequence
from typing import TypeVar

from app.textlayer.model import Box

MIN_GUTTER = 6.0  # points: narrower gaps are word or cell spacing, not a column's gutter
_T = TypeVar("_T")


def xy_cut(items: Sequence[_T], box_of: Callable[[_T], Box]) -> list[_T]:
    """`items` in reading order, each placed by `box_of(item)`."""
    if len(items) <= 1:
        return list(items)
    columns = _split(items, box_of, vertical=True)
    if len(columns) > 1:
        return [item for column in columns for item in xy_cut(column, box_of)]
    bands = _split(items, box_of, vertical=False)
    if len(bands) == 1:
        return sorted(items, key=lambda item: (box_of(item).y0, box_of(item).x0))
    ordered: list[_T] = []
    for region in _regions(bands, box_of):
        ordered.extend(region if len(region) == 1 else _columns_or_rows(region, box_of))
    return ordered


def _columns_or_rows(region: list[_T], box_of: Callable[[_T], Box]) -> list[_T]:
    columns = _split(region, box_of, vertical=True)
    if len(columns) > 1:
        return [item for column in columns for item in xy_cut(column, box_of)]
    return sorted(region, key=lambda item: (box_of(item).y0, box_of(item).x0))


def _regions(bands: list[list[_T]], box_of: Callable[[_T], Box]) -> list[list[_T]]:
    """Consecutive bands merged while the merged items still have a gutter."""
    regions: list[list[_T]] = []
    for band in bands:
        if regions and len(_split([*regions[-1], *band], box_of, vertical=True)) > 1:
            regions[-1] = [*regions[-1], *band]
        else:
            regions.append(list(band))
    return regions


def _split(items: Sequence[_T], box_of: Callable[[_T], Box], vertical: bool) -> list[list[_T]]:
    """`items` parted at every gap across the region: gutters (x gaps of `MIN_GUTTER` or more)
    when `vertical`, else horizontal gaps; in order left to right or top to bottom."""
    spans = [(box.x0, box.x1) if vertical else (box.y0, box.y1) for box in map(box_of, items)]
    order = sorted(range(len(items)), key=lambda i: spans[i])
    minimum = MIN_GUTTER if vertical else 0.0
    groups: list[list[_T]] = []
    reach = float("-inf")
    for i in order:
        start, end = spans[i]
        if not groups or start - reach > minimum:
            groups.append([])
        groups[-1].append(items[i])
        reach = max(reach, end)
    return groups
