"""Traces a test vLLM server's close path, per request: loaded by the server's Python only,
when FOLIO_TRACE_LOG is set (sitecustomize.py beside it; tests/vllm_cpu/test_stream_close.py).

One JSON line per event in FOLIO_TRACE_LOG: `connection_lost` (uvicorn saw the socket close),
`disconnect` (Starlette's listener got `http.disconnect`), `abort` (AsyncLLM.abort was called),
`body_done` (the streaming body ran to its end: the request finished on the server). Each
carries the request's X-Request-Id (vLLM's own id contains it) and a wall-clock time. Nothing is
changed but the logging; a patch that no longer fits this vLLM logs `trace_error` instead.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

_LOG = os.environ.get("FOLIO_TRACE_LOG")
_LOCK = threading.Lock()


def _log(event: str, request_id: object = None, **extra: object) -> None:
    if not _LOG:
        return
    line = json.dumps({"t": time.time(), "event": event, "id": request_id, **extra})
    with _LOCK, open(_LOG, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def _patch_uvicorn() -> None:
    from uvicorn.protocols.http import httptools_impl as http

    lost = http.HttpToolsProtocol.connection_lost
    headers_complete = http.HttpToolsProtocol.on_headers_complete

    def connection_lost(self: Any, exc: Exception | None) -> None:
        _log("connection_lost", getattr(self.cycle, "folio_request_id", None))
        lost(self, exc)

    def on_headers_complete(self: Any) -> None:
        headers_complete(self)
        for name, value in self.headers:
            if name.lower() == b"x-request-id" and self.cycle is not None:
                self.cycle.folio_request_id = value.decode()

    http.HttpToolsProtocol.connection_lost = connection_lost
    http.HttpToolsProtocol.on_headers_complete = on_headers_complete


def _patch_starlette() -> None:
    from starlette import responses

    call = responses.StreamingResponse.__call__

    async def __call__(self: Any, scope: Any, receive: Any, send: Any) -> None:
        request_id = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode()
        inner = self.body_iterator

        async def body() -> Any:
            async for chunk in inner:
                yield chunk
            _log("body_done", request_id)

        async def traced_receive() -> Any:
            message = await receive()
            if message.get("type") == "http.disconnect":
                _log("disconnect", request_id)
            return message

        self.body_iterator = body()
        await call(self, scope, traced_receive, send)

    responses.StreamingResponse.__call__ = __call__


def _patch_vllm(async_llm: ModuleType) -> None:
    abort = async_llm.AsyncLLM.abort

    async def traced_abort(self: Any, request_id: Any, *args: Any, **kwargs: Any) -> Any:
        _log("abort", str(request_id))
        return await abort(self, request_id, *args, **kwargs)

    async_llm.AsyncLLM.abort = traced_abort


def _guarded(patch: Any, *args: Any) -> None:
    try:
        patch(*args)
    except Exception as exc:  # a vLLM, uvicorn or Starlette this trace no longer fits
        _log("trace_error", None, patch=patch.__name__, error=repr(exc))


def install() -> dict[str, Callable[[ModuleType], None]]:
    """Patches uvicorn and Starlette now; AsyncLLM is imported late, in the API server only:
    its patch is returned, by module, for sitecustomize to run once that module has loaded."""
    _guarded(_patch_uvicorn)
    _guarded(_patch_starlette)
    return {"vllm.v1.engine.async_llm": lambda module: _guarded(_patch_vllm, module)}
