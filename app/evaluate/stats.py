"""Counting statistics for comparing arms on the same pages: the 95% Wilson interval of a loop
rate over pages, and the exact McNemar test of a paired split (loops fixed against loops made)."""

from __future__ import annotations

import math

Z95 = 1.959964


def wilson(hits: int, total: int) -> tuple[float, float]:
    """The 95% Wilson score interval of `hits` in `total`; (0, 1) when there is nothing."""
    if total <= 0:
        return (0.0, 1.0)
    share = hits / total
    scale = 1 + Z95**2 / total
    middle = (share + Z95**2 / (2 * total)) / scale
    half = Z95 * math.sqrt(share * (1 - share) / total + Z95**2 / (4 * total**2)) / scale
    return (round(max(0.0, middle - half), 4), round(min(1.0, middle + half), 4))


def mcnemar_p(fixed: int, made: int) -> float:
    """Exact two-sided McNemar p-value of `fixed` against `made` discordant pages: how often a
    coin would split them at least this unevenly. 1.0 when no page changed."""
    changed = fixed + made
    if changed == 0:
        return 1.0
    tail = sum(math.comb(changed, k) for k in range(min(fixed, made) + 1)) / 2**changed
    return round(min(1.0, 2 * tail), 4)
