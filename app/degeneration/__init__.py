"""Degeneration (repetition loop) detection for generated text: pure, no I/O.

`LoopDetector` watches a stream and stops at the first loop; `score_output` judges a finished
output with the online detector plus offline signals (tail loop, stutter, CREP).
"""

from app.degeneration.config import DetectorConfig, LoopKind, LoopVerdict
from app.degeneration.crep import CrepResult, crep_coverage, unique_ngram_rates
from app.degeneration.offline import (
    DharmaVerdict,
    OutputScore,
    ScoreConfig,
    is_degenerate_dharma,
    score_output,
)
from app.degeneration.online import LoopDetector

__all__ = [
    "CrepResult",
    "DetectorConfig",
    "DharmaVerdict",
    "LoopDetector",
    "LoopKind",
    "LoopVerdict",
    "OutputScore",
    "ScoreConfig",
    "crep_coverage",
    "is_degenerate_dharma",
    "score_output",
    "unique_ngram_rates",
]
