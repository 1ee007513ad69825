"""Folio's REST API (FastAPI): `create_app` builds it; `folio serve` runs it with uvicorn."""
