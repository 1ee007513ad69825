"""vLLM's streamed chat completion, written once: the stand-in's server and `bench gpu`'s client
timing both write their events here. Pure (the standard library only: a GPU machine without
Folio's dependencies imports it).

As vLLM 0.32.0 writes them (recorded from the CPU test server, 2026-11-26): a role chunk first;
one `chat.completion.chunk` per token, or per `stream_interval` tokens, `token_ids` null; the
last one with its `finish_reason` and `stop_reason` null; usage on every chunk with
`continuous_usage_stats` (after the choices, `completion_tokens_details` null); a chunk with no
choices and the final usage when `include_usage` asks; then `data: [DONE]`. Each event is one
`data: ...` line and a blank line; the HTTP chunking is the server's.
"""

from __future__ import annotations

import json
import time

DONE = b"data: [DONE]\n\n"
_ROLE = (
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    b'"logprobs":null,"finish_reason":null}]'
)
_CONTENT = (
    b'"choices":[{"index":0,"delta":{"content":%s},"logprobs":null,'
    b'"finish_reason":%s,"token_ids":null}]'
)
_USAGE = b'"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d%s}'
_DETAILS = b',"completion_tokens_details":null'


class ChunkEncoder:
    """The events of one streamed request."""

    def __init__(
        self,
        request_id: str,
        model: str,
        prompt_tokens: int,
        continuous_usage: bool = False,
        created: int | None = None,
    ) -> None:
        self.prompt = prompt_tokens
        self.continuous = continuous_usage
        stamp = int(time.time()) if created is None else created
        self.head = (
            b'data: {"id":"%s","object":"chat.completion.chunk","created":%d,"model":%s,'
            % (
                request_id.encode(),
                stamp,
                json.dumps(model).encode(),
            )
        )

    def role(self) -> bytes:
        """The first event: the assistant's role, no content."""
        return self.head + _ROLE + self._continuous(0) + b"}\n\n"

    def content(self, text: str, finish: str | None, completion_tokens: int) -> bytes:
        """Text of one or more tokens; `finish` on the last ("stop", "length", ...)."""
        reason = b'"%s","stop_reason":null' % finish.encode() if finish else b"null"
        body = _CONTENT % (json.dumps(text, ensure_ascii=False).encode(), reason)
        return self.head + body + self._continuous(completion_tokens) + b"}\n\n"

    def usage(self, completion_tokens: int) -> bytes:
        """The final usage event (`include_usage`): no choices."""
        return (
            self.head
            + b'"choices":[],'
            + _USAGE % (self.prompt, self.prompt + completion_tokens, completion_tokens, b"")
            + b"}\n\n"
        )

    def _continuous(self, completion_tokens: int) -> bytes:
        if not self.continuous:
            return b""
        total = self.prompt + completion_tokens
        return b"," + _USAGE % (self.prompt, total, completion_tokens, _DETAILS)
