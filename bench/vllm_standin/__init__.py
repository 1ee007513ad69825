"""The one stand-in for vLLM in Folio's benchmarks and tests: a real HTTP server speaking vLLM's
OpenAI-compatible API (`server`; its stream format written once, `stream`), batching as vLLM's
scheduler batches (`engine`), in three modes:

- GPU pacing (`python -m bench.vllm_standin`, `bench scale`, the Prometheus stack's tests): steps
  as long as a measured H100 or H200 takes (`pacing.GpuPace`), answering real OCR pages and
  loops, some of which come back on every read (`answers`);
- replay (`--mode replay`, `bench stops --gpu-rates`): given token pieces, one token per stream
  per fixed step (`pacing.FixedPace`), each request's outcome listed;
- scripted answers (`scripted.serving`, in-process: `bench false-alarms` and the tests of the
  confirming attempt and the resumed retry): what a Python function picks for each request,
  at no pace, with exact token counts.

What it computes after a client closes a stream, as vLLM does under async scheduling (its GPU
default): at least 2 tokens after the last one the client read (the step in flight and the one
already queued), and tens more when its one API server lags behind 256 streams. As in vLLM,
`vllm:generation_tokens_total` counts those the API server took before it aborted the request
(its lag), not those computed after (the step in flight, the queued one); `/standin/stats`
gives both (`generation_tokens`, `computed_tokens`) and the tokens each aborted request
computed after the client left. `engine` says where each part comes from.
"""
