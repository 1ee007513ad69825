"""What a behaviour answers at each step, and the shape of a behaviour (pure: no torch, no vLLM).

Its own module so that every behaviour (the loop stop, the n-gram guard) and the registry that
lists them (`behaviours.py`) import it, and none imports another: no cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class StepAction:
    end: bool = False  # leave only EOS possible: the request ends on this step
    banned: frozenset[int] = frozenset()  # token ids not allowed at the next position


NO_ACTION = StepAction()
END = StepAction(end=True)


class RequestBehaviour(Protocol):
    def step(self, new_token_ids: Sequence[int], new_text: str) -> StepAction:
        """The tokens (and their text) the request added since the last step."""
        ...


def combine(actions: Sequence[StepAction]) -> StepAction:
    """One step's actions of several behaviours as one: end if any ends, every ban."""
    if len(actions) == 1:
        return actions[0]
    banned = frozenset().union(*(a.banned for a in actions))
    return StepAction(end=any(a.end for a in actions), banned=banned)
