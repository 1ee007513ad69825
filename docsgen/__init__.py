"""Folio's documentation tooling: the reference pages generated from the code (CLI, settings,
REST API), the pictures made from committed runs, and the report's screenshots.

`python -m docsgen check` fails when a generated region of `docs/` no longer matches the code;
`python -m docsgen write` rewrites them; `python -m docsgen pictures` and
`python -m docsgen screenshots` redraw the images under `docs/images/`.
"""
