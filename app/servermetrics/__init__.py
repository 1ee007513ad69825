"""Server-side token accounting: an endpoint server's own counters (vLLM's /metrics), read at
job start and end, against the tokens Folio's attempts received."""
