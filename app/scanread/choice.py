"""Which reader's text to keep for a scanned page: measured on the page, not by taste.

Tesseract reads every scanned page first and says how sure it is (its mean word confidence).
On the scans of the olmOCR-bench sample and the shared corpus, printed pages read at 82-95 and
handwriting, a page turned sideways, and a small low-resolution book scan at 30-61; RapidOCR
read each of the latter better (word F1 against the reference 0.28-1.00 where Tesseract's was
0.00-0.58) and with a mean recognition score of 0.84 or more, and read printed pages as well as
Tesseract at 5-10 times its CPU time. So a second reading is asked for below `POOR_CONFIDENCE`
(the middle of that gap) and kept when RapidOCR is itself sure of it (`SURE_SCORE`).
"""

from __future__ import annotations

POOR_CONFIDENCE = 70  # Tesseract's mean word confidence (0-100) under which a page is re-read
SURE_SCORE = 0.8  # RapidOCR's mean recognition score (0-1) from which its reading is kept


def needs_second_reading(tesseract_confidence: float) -> bool:
    return tesseract_confidence < POOR_CONFIDENCE


def keep_second(text: str, mean_score: float) -> bool:
    return bool(text.strip()) and mean_score >= SURE_SCORE
