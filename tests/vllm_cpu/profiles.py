"""The profile the tiny random test model is run with: the generic one, except that an
answer cut off at max_tokens is kept (the random model never ends a page by itself, and the
tests that use it are about loops and stops, not about truncation)."""

from __future__ import annotations

from app.profiles import BUILTIN

_GENERIC = BUILTIN["markdown"]
TINY_PROFILE = _GENERIC.model_copy(
    update={
        "id": "tiny-cap-tolerant",
        "response": _GENERIC.response.model_copy(update={"require_finish_stop": False}),
    }
)
TINY_PROFILES = {TINY_PROFILE.id: TINY_PROFILE}
