"""The stand-in's API: vLLM's OpenAI-compatible chat completions (streamed as vLLM streams
them, `stream.ChunkEncoder`, with `usage`, `finish_reason` and `continuous_usage_stats`),
vLLM's `/metrics` names, `/health`, `/v1/models`, and `/standin/stats` (the step log's figures)
of its own.

Requests are checked as vLLM 0.32 checks the fields Folio probes with: a bad
`repetition_detection` is refused (400, naming it), a good one stops exact repeats (unless the
mode's answers are scripted: the script alone says where an answer ends); unknown `vllm_xargs`
are accepted and ignored (no Folio plugin here); there is no abort route (vLLM's default).
`continue_final_message` with `add_generation_prompt` is refused as vLLM refuses it; a turn it
continues is part of the prompt (prefilled, counted in `prompt_tokens` as the answer's own
tokens), not of the completion. What each request is answered is the mode's (`AnswerFor`): a
page read (`page_answers`: by the page image, the temperature and, with
`continue_final_message`, from as many characters on as the last assistant message holds), a
replayed script, a scripted answer."""

from __future__ import annotations

import base64
import io
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from PIL import Image

from bench.vllm_standin.answers import Answer, AnswerBook, continued, image_key, tokenize
from bench.vllm_standin.engine import Engine, RepetitionRule, Request
from bench.vllm_standin.http import Connection, HttpRequest
from bench.vllm_standin.pacing import image_prompt_tokens
from bench.vllm_standin.stream import DONE, ChunkEncoder

TEMPLATE_TOKENS = 20  # the chat template's own tokens around a message
CHARS_PER_TOKEN = 3  # a prompt's text, as answers.TOKEN splits the corpus pages
AnswerFor = Callable[[dict[str, Any]], Answer]  # a request's body -> what it is answered
# A request's fields a kept record holds (replay and scripted modes), beside its outcome.
KEPT = (
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "repetition_detection",
    "vllm_xargs",
    "continue_final_message",
    "add_generation_prompt",
    "stream_interval",
)


class BadRequest(ValueError):
    pass


class StandInApi:
    """The routes over one engine. `scripted`: answers end where their script ends
    (`repetition_detection` checked, recorded, not applied) and there is no `/metrics`, so
    Folio's probes find none; `requests`: where each request's kept fields and outcome go."""

    def __init__(
        self,
        engine: Engine,
        answer_for: AnswerFor,
        model: str,
        scripted: bool = False,
        requests: list[dict[str, Any]] | None = None,
    ) -> None:
        self.engine = engine
        self.answer_for = answer_for
        self.model = model
        self.scripted = scripted
        self.requests = requests
        self.started = time.time()

    def handle(self, conn: Connection, request: HttpRequest) -> None:
        route = (request.method, request.path)
        if route == ("POST", "/v1/chat/completions"):
            try:
                self._chat(conn, request.json())
            except (BadRequest, ValueError, KeyError, TypeError) as exc:
                conn.reply_json(400, _error(str(exc)))
        elif route == ("GET", "/metrics") and not self.scripted:
            conn.reply(200, self.metrics().encode(), "text/plain; version=0.0.4")
        elif route == ("GET", "/health"):
            conn.reply(200, b"")
        elif route == ("GET", "/v1/models"):
            conn.reply_json(
                200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            )
        elif route == ("GET", "/standin/stats"):
            conn.reply_json(200, self.stats())
        else:
            conn.reply_json(404, {"detail": "Not Found"})

    def _chat(self, conn: Connection, body: dict[str, Any]) -> None:
        image_url, text_chars = _prompt_parts(body.get("messages") or [])
        width, height = _image_size(image_url) if image_url else (0, 0)
        if body.get("continue_final_message") and body.get("add_generation_prompt"):
            # vLLM 0.32's check_generation_prompt
            raise BadRequest(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
            )
        repetition = _repetition(body.get("repetition_detection"))
        answer = self.answer_for(body)
        # a continued assistant turn is prefilled as the tokens it was written in
        kept = _final_assistant_text(body["messages"]) if body.get("continue_final_message") else ""
        request = Request(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            prompt_tokens=TEMPLATE_TOKENS
            + (text_chars - len(kept)) // CHARS_PER_TOKEN
            + len(tokenize(kept))
            + (image_prompt_tokens(width, height) if image_url else 0),
            vision_ms=self.engine.pace.vision_ms(width, height) if image_url else 0.0,
            answer=answer,
            max_tokens=int(body.get("max_tokens") or 16384),
            deliver=lambda r, piece, finish: None,
            is_closed=lambda: conn.closed,
            repetition=None if self.scripted else repetition,
        )
        if body.get("stream"):
            conn.start_stream()
            sink = StreamSink(conn, request, self.model, body)
            request.deliver = sink.token
        else:
            request.deliver = WholeSink(conn, self.model).token
        if self.requests is not None:
            request.deliver = _recorded(request.deliver, self._record(body, answer))
        self.engine.submit(request)

    def _record(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
        """The request's kept fields, and its outcome as it comes: tokens written, finish
        ("client_closed" when the client left first), the replayed script it got."""
        assert self.requests is not None
        record = {k: body[k] for k in KEPT if k in body}
        record |= {"script": answer.script, "tokens": 0, "finish": None}
        self.requests.append(record)
        return record

    def metrics(self) -> str:
        e = self.engine
        labels = f'engine="0",model_name="{self.model}"'
        lines = [
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {float(e.generation_tokens)}",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {float(e.prompt_tokens)}",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} {float(len(e.running))}",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{labels}}} {float(len(e.waiting))}",
            "# TYPE vllm:request_success_total counter",
        ]
        for reason in ("stop", "length", "repetition", "abort"):
            lines.append(
                f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} '
                f"{float(e.finished[reason])}"
            )
        lines += [
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.started}",
        ]
        return "\n".join(lines) + "\n"

    def stats(self) -> dict[str, Any]:
        e, log = self.engine, self.engine.log
        after = sorted(log.tokens_after_close)
        return {
            "gpu": getattr(e.pace, "gpu", None),
            "shape": getattr(e.pace, "shape", None),
            "max_num_seqs": e.max_num_seqs,
            "slowdown": e.slowdown,
            "steps": log.steps,
            "running": len(e.running),
            "gpu_s": round(log.gpu_s, 3),
            "prefill_s": round(log.prefill_s, 3),
            "slot_s": round(log.slot_s, 3),
            "demand_slot_s": round(log.demand_slot_s, 3),
            "queued_s": round(log.queued_s, 3),
            "queued_slot_s": round(log.queued_slot_s, 3),
            "empty_waiting_slot_s": round(log.empty_waiting_slot_s, 3),
            "empty_idle_slot_s": round(log.empty_idle_slot_s, 3),
            "behind_s": round(log.behind_s, 3),
            "late_steps": log.late_steps,
            "api_lag_max_s": round(log.api_lag_max_s, 4),
            "first_step_at": log.first_step_at,
            "last_step_at": log.last_step_at,
            "generation_tokens": e.generation_tokens,
            "computed_tokens": e.computed_tokens,
            "prompt_tokens": e.prompt_tokens,
            "finished": dict(e.finished),
            "aborted": log.aborted,
            "tokens_after_close": after,
            "loops": dict(log.loops),
            "loop_kinds": dict(log.loop_kinds),
            **(
                {"requests": self.requests, "step_ms_median": log.step_ms_median()}
                if self.requests is not None
                else {}
            ),
        }


class StreamSink:
    """A streamed reply: the role chunk, one chunk per token (with `stream_interval` N: the
    first token alone, then N tokens a chunk), the finish chunk, the usage chunk when asked,
    `[DONE]` (`stream.ChunkEncoder`)."""

    def __init__(
        self, conn: Connection, request: Request, model: str, body: dict[str, Any]
    ) -> None:
        options = body.get("stream_options") or {}
        self.conn = conn
        self.usage = bool(options.get("include_usage"))
        continuous = self.usage and bool(options.get("continuous_usage_stats"))
        self.encoder = ChunkEncoder(request.id, model, request.prompt_tokens, continuous)
        self.interval = max(1, int(body.get("stream_interval") or 1))
        self.pending = ""
        self.flushed = 0  # tokens written in chunks so far
        conn.stream_event(self.encoder.role())

    def token(self, request: Request, piece: str | None, finish: str | None) -> None:
        if finish == "abort":  # the client has gone: nothing to write
            return
        # the tokens written so far: the engine may have computed more while the API server
        # lagged, which vLLM's usage does not count before it writes them either
        count = request.delivered
        self.pending += piece or ""
        if not finish and self.flushed and count - self.flushed < self.interval:
            return
        text, self.pending, self.flushed = self.pending, "", count
        self.conn.stream_event(self.encoder.content(text, finish, count))
        if finish:
            if self.usage:
                self.conn.stream_event(self.encoder.usage(count))
            self.conn.stream_event(DONE)
            self.conn.end_stream()


class WholeSink:
    """A reply that is not streamed: the whole answer once the request finishes."""

    def __init__(self, conn: Connection, model: str) -> None:
        self.conn, self.model = conn, model

    def token(self, request: Request, piece: str | None, finish: str | None) -> None:
        if not finish or finish == "abort":
            return
        tokens = len(request.generated)
        text = "".join(p for p in request.generated if p != "<eos>")
        self.conn.reply_json(
            200,
            {
                "id": request.id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish,
                    }
                ],
                "usage": {
                    "prompt_tokens": request.prompt_tokens,
                    "completion_tokens": tokens,
                    "total_tokens": request.prompt_tokens + tokens,
                },
            },
        )


def page_answers(book: AnswerBook) -> AnswerFor:
    """Answers read from `book` by the page image and temperature; a request that continues
    its last, assistant message gets the answer from as many characters on as it holds."""

    def answer_for(body: dict[str, Any]) -> Answer:
        image_url, _ = _prompt_parts(body.get("messages") or [])
        key = image_key(image_url or json.dumps(body["messages"]))
        answer = book.answer(key, body.get("temperature"))
        if body.get("continue_final_message"):
            answer = continued(answer, _final_assistant_text(body["messages"]))
        return answer

    return answer_for


Deliver = Callable[[Request, str | None, str | None], None]


def _recorded(deliver: Deliver, record: dict[str, Any]) -> Deliver:
    """`deliver`, keeping the tokens written and the finish in `record`."""

    def recorded(request: Request, piece: str | None, finish: str | None) -> None:
        record["tokens"] = request.delivered
        if finish:
            record["finish"] = "client_closed" if finish == "abort" else finish
        deliver(request, piece, finish)

    return recorded


def _prompt_parts(messages: list[dict[str, Any]]) -> tuple[str | None, int]:
    """The first image's URL and the prompt's text length."""
    image, chars = None, 0
    for message in messages:
        content = message.get("content")
        parts: list[dict[str, Any]] = (
            content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        )
        for part in parts:
            if part.get("type") == "image_url" and image is None:
                image = str(part["image_url"]["url"])
            elif part.get("type") == "text":
                chars += len(part.get("text") or "")
    return image, chars


def _final_assistant_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last message, which `continue_final_message` asks to be the assistant's
    (vLLM refuses the request otherwise)."""
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant":
        raise BadRequest("continue_final_message: the last message must be the assistant's")
    content = last.get("content")
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if part.get("type") == "text")
    return str(content or "")


def _image_size(url: str) -> tuple[int, int]:
    """A data URL's image size: from a PNG's header alone, else by opening it."""
    data = url.split(",", 1)[1] if url.startswith("data:") else ""
    head = base64.b64decode(data[:32] + "=" * (-len(data[:32]) % 4)) if data else b""
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if not data:
        raise BadRequest("image_url: only data URLs are served here")
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def _repetition(value: Any) -> RepetitionRule | None:
    """vLLM's RepetitionDetectionParams checks (vllm/sampling_params.py:169-202)."""
    if value is None:
        return None
    try:
        rule = RepetitionRule(
            int(value.get("max_pattern_size", 0)),
            int(value.get("min_pattern_size", 0)),
            int(value.get("min_count", 0)),
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise BadRequest(f"repetition_detection: {exc}") from exc
    low, high = rule.min_pattern_size, rule.max_pattern_size
    if high < 0 or low < 0 or low > high:
        raise BadRequest("repetition_detection: max_pattern_size, min_pattern_size must be >=0")
    if high > 0 and rule.min_count < 2:
        raise BadRequest("repetition_detection: min_count must be >= 2")
    return rule if high > 0 else None


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
