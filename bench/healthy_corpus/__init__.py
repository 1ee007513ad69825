"""A corpus of real healthy OCR and converter outputs, each page with its origin and licence.

`sources` names every repository, commit and path the corpus is read from; `build` rebuilds it
from those commits (`python -m bench healthy-corpus`); `corpus` loads what was built. The part
whose licence allows is committed under `data/`; the rest is rebuilt locally (issue 39).
"""
