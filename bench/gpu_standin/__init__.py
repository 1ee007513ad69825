"""A GPU-paced stand-in for vLLM: a real HTTP server speaking vLLM's OpenAI-compatible API,
whose steps take as long as a measured H100 or H200 takes (`pacing`), batching as vLLM's
scheduler batches (`engine`), answering with real OCR pages and loops (`answers`).

What it computes after a client closes a stream, as vLLM does under async scheduling (its GPU
default): at least 2 tokens after the last one the client read (the step in flight and the one
already queued), and tens more when its one API server lags behind 256 streams. As in vLLM,
`vllm:generation_tokens_total` counts those the API server took before it aborted the request
(its lag), not those computed after (the step in flight, the queued one); `/standin/stats`
gives both (`generation_tokens`, `computed_tokens`) and the tokens each aborted request
computed after the client left. `engine` says where each part comes from.
"""
