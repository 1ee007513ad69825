"""DPO fine-tuning on `folio export-dpo` pairs, written as a folder vLLM serves as it is.

Only `trainer.py` and what it alone imports (`fitting.py`, `peak.py`) import torch and friends,
and only when a training run starts: reading the pairs, the held-out split, the input checks
and the memory estimate (`memory.py`, `preflight.py`) are plain Python, so `folio --help` and
bad input never pay for loading torch. The pairs themselves are exported from finished
batches by `dpo.py` (`folio export-dpo`), which reads the database and never torch.
"""
