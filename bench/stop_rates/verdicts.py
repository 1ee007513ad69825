"""Same verdicts as today: the detector fed as the plugin feeds it, and as the client reads it.

Today's plugin feeds `LoopDetector` the text of each token as it is decoded; Folio's client
feeds it the streamed chunks, one token a chunk by vLLM's default, `stream_interval` tokens a
chunk when asked. Over the dev corpus (`degeneration_dev.jsonl`: real healthy and degenerate
outputs), each chunking must flag the same rows, with the same kind and onset, as the
plugin's token-by-token feed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.degeneration import LoopDetector, LoopVerdict
from bench.ocr.text import shared_dir
from bench.stop_rates.scripts import token_pieces


def feed(pieces: Sequence[str], per_chunk: int) -> LoopVerdict | None:
    detector = LoopDetector()
    for start in range(0, len(pieces), per_chunk):
        verdict = detector.feed("".join(pieces[start : start + per_chunk]))
        if verdict is not None:
            return verdict
    return None


def compare(tokenizer: Any, intervals: Sequence[int]) -> dict[str, Any]:
    """Per stream interval: rows flagged, flagged on healthy rows, and rows whose verdict
    (flagged or not, kind, onset) differs from the token-by-token feed."""
    path = shared_dir() / "corpus" / "degeneration_dev.jsonl"
    if not path.is_file():
        return {"skipped": f"no dev corpus at {path}"}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    found: dict[str, Any] = {"rows": len(rows), "by_interval": {}}
    pieces = [token_pieces(row["text"], tokenizer) for row in rows]
    plugin = [_key(feed(p, 1)) for p in pieces]
    for interval in intervals:
        client = [_key(feed(p, interval)) for p in pieces]
        found["by_interval"][str(interval)] = {
            "flagged": sum(k is not None for k in client),
            "flagged_healthy": sum(
                k is not None
                for k, row in zip(client, rows, strict=True)
                if row["label"] == "healthy"
            ),
            "missed_degenerate": sum(
                k is None for k, row in zip(client, rows, strict=True) if row["label"] != "healthy"
            ),
            "differs_from_plugin": [
                row["id"] for a, b, row in zip(plugin, client, rows, strict=True) if a != b
            ],
        }
    return found


def _key(verdict: LoopVerdict | None) -> tuple[str, int] | None:
    return None if verdict is None else (verdict.kind, verdict.onset)
