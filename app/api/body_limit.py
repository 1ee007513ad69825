"""Refuses request bodies over the upload limit before or while they stream in (413)."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem


class BodyLimit:
    """ASGI middleware: a declared or streamed body over `max_bytes` never reaches a route."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise HTTPException(413, self._detail())
            return message

        return counted

    def _detail(self) -> str:
        return f"the request body is larger than the {self.max_bytes / 2**20:g} MiB upload limit"

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> Any:
        response = problem(Request(scope), 413, self._detail(), {"Connection": "close"})
        await response(scope, receive, send)
