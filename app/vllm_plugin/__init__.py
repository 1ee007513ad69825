"""Folio's vLLM plugin: per-request behaviours run inside the vLLM engine step.

It runs in the vLLM server's venv and its worker process, so it depends on as little as
possible: the pure detector (`app.degeneration`) and the served model's tokenizer, nothing of
Folio's database, settings or HTTP. `behaviours` and `detokenize` are pure (tested in Folio's
own venv); only `processor` imports torch and vLLM. Installed through the
`vllm.logits_processors` entry point (pyproject.toml), so `vllm serve` loads it by itself.
"""
