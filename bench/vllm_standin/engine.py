"""The stand-in's engine: vLLM's continuous batching, paced by a GPU's measured step times
(`pacing.GpuPace`), or by a fixed step (`pacing.FixedPace`: a replay at a given step, or no
wait at all for scripted answers).

Each step the scheduler drops aborted requests, admits waiting ones (up to `max_num_seqs`
running, and prompt tokens within `max_num_batched_tokens`: vLLM's chunked prefill budget,
8,192 for the OpenAI server on a large card), then the step runs: a decode step for the batch
at its total KV length, plus prefill and the vision tower for the pages admitted (`pacing`).
Time is the wall clock: the engine sleeps until the step's end, times `slowdown`. When it
wakes late or cannot keep up (its own CPU), it starts the next step at once, catching up to
`CATCH_UP_S`, and counts a longer lag as time behind.

What vLLM computes after a client closes its stream (read in vLLM 0.32/0.33 source,
`../shared/notes/gpu.md` section 5), and what this engine does the same way:
- the API server notices a closed socket only when it next writes to it; its outputs queue
  behind its own work per token (`pacing.api_us_per_token`: ~25-45 us a token, growing with the
  open streams), so a busy API server notices late: tens of tokens at 256 streams when its work
  per step is longer than a step;
- the engine applies the abort after the step in flight, and under async scheduling (vLLM's GPU
  default) the step after it is already scheduled: so at least 2 tokens are computed after the
  token the client last read before it closed;
- `vllm:generation_tokens_total` counts a token when the API server's output processor takes
  it, and only for a request the API server still holds (`v1/engine/output_processor.py`
  `process_outputs`: "Ignore output for already-aborted request", before its stats): the tokens
  it took while it lagged behind the close count though never sent; those computed after it
  aborted the request (the step in flight, the queued one) are computed and not counted. This
  engine counts the same (`generation_tokens`) and keeps every token computed apart
  (`computed_tokens`: the GPU's work, which a benchmark's tax is about).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from statistics import median

from bench.vllm_standin.answers import Answer
from bench.vllm_standin.pacing import Pace, repetition_ms

MAX_NUM_SEQS = 256  # vLLM's --max-num-seqs default
MAX_NUM_BATCHED_TOKENS = 8192  # vLLM's chunked-prefill budget for `vllm serve` on a large card
CATCH_UP_S = 0.5  # wall seconds behind the step clock that the engine catches up on


@dataclass(frozen=True)
class RepetitionRule:
    """vLLM's `repetition_detection` (RepetitionDetectionParams, vllm/sampling_params.py)."""

    max_pattern_size: int
    min_pattern_size: int = 0
    min_count: int = 0

    def repeats(self, tokens: list[str]) -> bool:
        """vllm/v1/core/sched/utils.py `check_sequence_repetition`: the last L tokens equal
        each of the `min_count - 1` blocks of L before them, for some L in the range."""
        low = self.min_pattern_size or 1
        for size in range(low, self.max_pattern_size + 1):
            if size * self.min_count > len(tokens):
                return False
            if tokens[-1] != tokens[-1 - size]:  # vLLM compares from the last token too
                continue
            tail = tokens[-size:]
            if all(tokens[-size * (m + 1) : -size * m] == tail for m in range(1, self.min_count)):
                return True
        return False


@dataclass(eq=False)
class Request:
    """One request in the engine, and where its tokens go (`deliver`: pieces, finish)."""

    id: str
    prompt_tokens: int
    vision_ms: float
    answer: Answer
    max_tokens: int
    deliver: Callable[[Request, str | None, str | None], None]
    is_closed: Callable[[], bool]
    repetition: RepetitionRule | None = None
    generated: list[str] = field(default_factory=list)
    delivered: int = 0  # tokens the API server wrote to the client
    finish: str | None = None
    abort_after: int | None = None  # dropped once this many steps are done

    def next_token(self) -> tuple[str | None, str | None]:
        """(piece or None for EOS, finish reason or None), one decode step's token."""
        pieces = self.answer.pieces
        n = len(self.generated)
        piece = pieces[n] if n < len(pieces) else None
        self.generated.append(piece if piece is not None else "<eos>")
        if piece is None or (not self.answer.eos and n == len(pieces) - 1):
            return piece, "stop"
        if len(self.generated) >= self.max_tokens:
            return piece, "length"
        if self.repetition and self.repetition.repeats(self.generated):
            return piece, "repetition"
        return piece, None


@dataclass
class StepLog:
    """What the steps did; the figures a benchmark reads (`/standin/stats`)."""

    steps: int = 0
    gpu_s: float = 0.0  # simulated GPU time of all steps
    queued_s: float = 0.0  # ... of steps run while requests waited for a slot
    queued_slot_s: float = 0.0  # slot-seconds busy in those steps
    slot_s: float = 0.0  # slot-seconds busy in all steps
    # slot-seconds the clients asked for: running + waiting requests, at most the slots (all
    # of them when the clients keep more requests in the server than it has slots)
    demand_slot_s: float = 0.0
    # slot-seconds left empty: while requests waited (the prefill budget held them back: the
    # server's limit), and while none waited (the clients sent too few: theirs)
    empty_waiting_slot_s: float = 0.0
    empty_idle_slot_s: float = 0.0
    prefill_s: float = 0.0
    behind_s: float = 0.0  # wall time the engine ran late (its own CPU)
    late_steps: int = 0
    api_lag_max_s: float = 0.0  # most the API server's writes trailed a step's end
    first_step_at: float | None = None
    last_step_at: float | None = None
    aborted: int = 0
    tokens_after_close: list[int] = field(default_factory=list)
    loops: Counter[str] = field(default_factory=Counter)
    loop_kinds: Counter[str] = field(default_factory=Counter)  # sticky, moving, once
    step_walls: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))

    def step_ms_median(self) -> float | None:
        """The median wall interval between the last steps' ends (what a replay achieved)."""
        gaps = [b - a for a, b in pairwise(self.step_walls)]
        return median(gaps) * 1000 if gaps else None


class Engine:
    def __init__(
        self,
        pace: Pace,
        max_num_seqs: int = MAX_NUM_SEQS,
        max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS,
        slowdown: float = 1.0,
        record: Callable[[dict], None] | None = None,
    ) -> None:
        self.pace = pace
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.slowdown = slowdown
        self.record = record  # one dict a step, when a step log is kept
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.done_steps = 0
        self.computed_tokens = 0  # every token a step computed
        self.generation_tokens = 0  # those vLLM counts: taken while the API server held them
        self.prompt_tokens = 0
        self.finished: Counter[str] = Counter()
        self.log = StepLog()
        self._wake = asyncio.Event()
        self._api_free = 0.0  # when the API server is through with the outputs it has

    def submit(self, request: Request) -> None:
        if request.answer.loop:
            self.log.loops[request.answer.loop] += 1
            self.log.loop_kinds[request.answer.comeback or "once"] += 1
        self.waiting.append(request)
        self._wake.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        clock = loop.time()
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                clock = loop.time()
            admitted = self._schedule()
            if not self.running:
                continue
            step_s = self._step_ms(admitted) / 1000
            self._log_step(step_s, admitted, clock)
            end = clock + step_s * self.slowdown
            # always a turn of the event loop, so the API server reads and writes between
            # steps even while the engine catches up
            await asyncio.sleep(max(0.0, end - loop.time()))
            # A timer that wakes late (a loaded machine: 5-10% of a step here) is not GPU time:
            # the next step starts at this one's end, and only a lag past CATCH_UP_S is given up
            # and counted behind.
            lag = loop.time() - end
            if lag > CATCH_UP_S:
                self.log.behind_s += lag
                self.log.late_steps += 1
            clock = end if lag <= CATCH_UP_S else loop.time()
            self.done_steps += 1
            self.log.step_walls.append(loop.time())
            self._emit(clock)

    def _schedule(self) -> list[Request]:
        """Drop aborted requests, then admit waiting ones within the slots and the budget."""
        kept = []
        for r in self.running:
            if r.abort_after is not None and self.done_steps >= r.abort_after:
                self.log.aborted += 1
                self.log.tokens_after_close.append(len(r.generated) - r.delivered)
            else:
                kept.append(r)
        self.running = kept
        budget = self.max_num_batched_tokens - len(self.running)
        admitted: list[Request] = []
        while self.waiting and len(self.running) + len(admitted) < self.max_num_seqs:
            head = self.waiting[0]
            if head.is_closed():  # the client left before it got a slot
                self.waiting.popleft()
                continue
            if admitted and head.prompt_tokens > budget:
                break
            budget -= head.prompt_tokens
            self.prompt_tokens += head.prompt_tokens
            admitted.append(self.waiting.popleft())
        self.running += admitted
        return admitted

    def _step_ms(self, admitted: list[Request]) -> float:
        kv = sum(r.prompt_tokens + len(r.generated) for r in self.running)
        gpu = self.pace.decode_ms(len(self.running), kv)
        gpu += sum(self.pace.prefill_ms(r.prompt_tokens) + r.vision_ms for r in admitted)
        checked = [r.repetition.max_pattern_size for r in self.running if r.repetition]
        # the scheduler's CPU hides under the GPU step (async scheduling) while shorter
        scheduler = repetition_ms(len(checked), max(checked)) if checked else 0.0
        return max(gpu, scheduler)

    def _log_step(self, step_s: float, admitted: list[Request], clock: float) -> None:
        log = self.log
        log.steps += 1
        log.gpu_s += step_s
        busy = len(self.running) * step_s
        log.slot_s += busy
        log.demand_slot_s += min(self.max_num_seqs, len(self.running) + len(self.waiting)) * step_s
        empty = (self.max_num_seqs - len(self.running)) * step_s
        if self.waiting:
            log.queued_s += step_s
            log.queued_slot_s += busy
            log.empty_waiting_slot_s += empty
        else:
            log.empty_idle_slot_s += empty
        log.prefill_s += sum(self.pace.prefill_ms(r.prompt_tokens) for r in admitted) / 1000
        log.first_step_at = log.first_step_at or time.time()
        log.last_step_at = time.time()
        if self.record:
            self.record(
                {
                    "step": log.steps,
                    "ms": round(step_s * 1000, 3),
                    "running": len(self.running),
                    "waiting": len(self.waiting),
                    "admitted": len(admitted),
                }
            )

    def _emit(self, step_end: float) -> None:
        """One token for every running request; the API server writes them when it can."""
        outputs = []
        for r in self.running:
            piece, finish = r.next_token()
            self.computed_tokens += 1
            if finish:
                r.finish = finish
            outputs.append((r, piece, finish))
        self.running = [r for r in self.running if r.finish is None]
        open_streams = len(self.running) + len(self.waiting) + len(outputs)
        work = self.pace.api_us_per_token(open_streams) * len(outputs) / 1e6 * self.slowdown
        start = max(step_end, self._api_free)
        self._api_free = start + work
        self.log.api_lag_max_s = max(self.log.api_lag_max_s, self._api_free - step_end)
        asyncio.get_running_loop().call_at(self._api_free, self._write, outputs)

    def _write(self, outputs: list[tuple[Request, str | None, str | None]]) -> None:
        """The API server's turn: write each token, or notice that its client has left."""
        for r, piece, finish in outputs:
            if r.abort_after is not None:  # aborted: computed, not counted
                continue
            self.generation_tokens += 1
            if r.is_closed():
                if r.finish is None:  # the engine still runs it: abort after the queued step
                    r.abort_after = self.done_steps + 2
                    r.deliver(r, None, "abort")  # nothing written: the client has gone
                continue
            r.delivered += 1
            if finish and finish != "abort":
                self.finished[finish] += 1
            r.deliver(r, piece, finish)
