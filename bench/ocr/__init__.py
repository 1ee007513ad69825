"""`python -m bench ocr`: Folio's engines on the real corpus, scored by olmOCR-bench's own
scorer."""
