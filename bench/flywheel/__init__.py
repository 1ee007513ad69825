"""`python -m bench flywheel`: does DPO on a model's own loops lower its loop rate?

A small Qwen2-VL is first taught to read synthetic pages (`sft.py`, once, on a GPU where one
is lent; the weights are kept with their card), then served by the vLLM CPU server, run as a
Folio job, its loops exported and trained away, and compared on held-out pages (`run.py`).
`data.py` holds what both sides share: the text, the glyphs, the pages and the model's recipe.
"""
