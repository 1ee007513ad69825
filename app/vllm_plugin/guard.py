"""A windowed no-repeat n-gram ban, per request (pure: no torch, no vLLM).

DeepSeek-OCR's recipe: a token that would complete an n-gram already present in the last
`window` output tokens is banned at the next position, except tokens of table-cell markup
(whitelisted), which tables repeat legitimately. It changes what is sampled, not when the
request ends: a loop becomes a different continuation instead of a repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from app.vllm_plugin.actions import NO_ACTION, StepAction

GUARD_ARG = "folio_ngram_guard"  # n-gram size, >= 2; absent or 0: off
WINDOW_ARG = "folio_ngram_window"  # output tokens searched back (default DEFAULT_WINDOW)
WHITELIST_ARG = "folio_ngram_whitelist"  # strings whose tokens are never banned
DEFAULT_WINDOW = 128
TABLE_MARKUP = ("<td>", "</td>", "<tr>", "</tr>", "<th>", "</th>", "|")
MAX_WINDOW = 4096


class Encoding(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


class NgramGuard:
    """Bans the tokens that would repeat an n-gram of the recent window."""

    def __init__(self, n: int, window: int, whitelist: Sequence[str]) -> None:
        self.n, self.window = n, window
        self.whitelist_text = tuple(whitelist)
        self.whitelist: frozenset[int] = frozenset()
        self._ids: list[int] = []

    def bind_tokenizer(self, tokenizer: Encoding) -> None:
        """Whitelisted strings as the token ids they are written with."""
        ids: set[int] = set()
        for text in self.whitelist_text:
            for variant in (text, f" {text}"):
                ids.update(tokenizer.encode(variant, add_special_tokens=False))
        self.whitelist = frozenset(ids)

    def step(self, new_token_ids: Sequence[int], new_text: str) -> StepAction:
        ids = self._ids
        ids.extend(new_token_ids)
        if len(ids) > 2 * self.window:  # keep memory bounded; the scan reads the window only
            del ids[: len(ids) - self.window]
        banned = self.banned_next()
        return StepAction(banned=banned) if banned else NO_ACTION

    def banned_next(self) -> frozenset[int]:
        n, ids = self.n, self._ids
        if len(ids) < n:
            return frozenset()
        prefix = ids[len(ids) - n + 1 :]
        start = max(0, len(ids) - self.window)
        found = {
            ids[i + n - 1] for i in range(start, len(ids) - n + 1) if ids[i : i + n - 1] == prefix
        }
        return frozenset(found - self.whitelist)

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> NgramGuard | None:
        n = _int(args, GUARD_ARG, 0)
        if n == 0:
            return None
        window = _int(args, WINDOW_ARG, DEFAULT_WINDOW)
        if n < 2 or not n <= window <= MAX_WINDOW:
            raise ValueError(
                f"{GUARD_ARG} must be >= 2 and <= {WINDOW_ARG} <= {MAX_WINDOW} (got {n}, {window})"
            )
        whitelist = args.get(WHITELIST_ARG, list(TABLE_MARKUP))
        if isinstance(whitelist, str):
            whitelist = [whitelist]
        if not isinstance(whitelist, list | tuple):
            raise ValueError(f"{WHITELIST_ARG} must be a list of strings")
        return cls(n, window, [str(w) for w in whitelist])


def _int(args: Mapping[str, Any], name: str, default: int) -> int:
    value = args.get(name, default)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an integer, not {value!r}") from exc
