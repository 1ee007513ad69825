"""`folio eval`: the same pages through several plans or models, side by side, in one run.

Each arm is an ordinary job (attempt rows, report) on the same pages; the comparison is the
report of each job plus transcription quality, with degeneration beside quality everywhere.
`scan.py` judges outputs already on disk (`folio scan`) with the same detector.
"""
