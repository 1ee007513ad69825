"""Model profiles: how each OCR model is asked, how its image is sized, how its answer is read.

Data plus small pure parsers; the VLM engine keeps transport and streaming and asks a profile
for the request shape and the reading of the answer.
"""

from app.profiles.model import Profile
from app.profiles.registry import BUILTIN, all_profiles, profile_for_model, resolve_profile

__all__ = ["BUILTIN", "Profile", "all_profiles", "profile_for_model", "resolve_profile"]
