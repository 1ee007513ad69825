"""The degeneration tax: what loops cost a vLLM batch, and what Folio's stop leaves of it
(`python -m bench tax`, `tax-validate`, `tax-reestimate`)."""
