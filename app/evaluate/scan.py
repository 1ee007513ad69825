"""`folio scan`: score text outputs already on disk for degeneration.

Inputs are `.txt`/`.md` files (one sample each, id = file name) or `.jsonl` files (one sample
per line, text and id read from configurable fields; `finish_reason`, `completion_tokens` and
`max_tokens` are used when present). Directories are scanned for those suffixes. Reading files
is this module's only side effect; scoring is `app.degeneration.score_output`.
"""

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from app.degeneration import OutputScore, score_output

_T = TypeVar("_T")

TEXT_SUFFIXES = frozenset({".txt", ".md"})
JSONL_SUFFIX = ".jsonl"


class ScanInputError(ValueError):
    """An input file cannot be read as samples (bad suffix, bad JSON, missing field)."""


@dataclass(frozen=True, slots=True)
class Sample:
    id: str
    text: str
    source: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ScanRecord:
    id: str
    source: str
    score: OutputScore


def scan_paths(
    paths: Sequence[Path], field: str = "text", id_field: str = "id"
) -> list[ScanRecord]:
    """Score every sample found under `paths`, in input order."""
    return [
        ScanRecord(
            id=sample.id,
            source=sample.source,
            score=score_output(
                sample.text,
                finish_reason=sample.finish_reason,
                completion_tokens=sample.completion_tokens,
                max_tokens=sample.max_tokens,
            ),
        )
        for sample in iter_samples(paths, field, id_field)
    ]


def iter_samples(paths: Sequence[Path], field: str, id_field: str) -> Iterator[Sample]:
    for path in _expand(paths):
        if path.suffix == JSONL_SUFFIX:
            yield from _jsonl_samples(path, field, id_field)
        elif path.suffix in TEXT_SUFFIXES:
            yield Sample(id=path.name, text=path.read_text(encoding="utf-8"), source=str(path))
        else:
            raise ScanInputError(f"{path}: expected .txt, .md or .jsonl")


def record_as_json(record: ScanRecord) -> dict[str, Any]:
    """One JSON-ready object per sample: the verdict first, then the diagnostics."""
    score = record.score
    return {
        "id": record.id,
        "source": record.source,
        "degenerate": score.degenerate,
        "reason": score.reason,
        "kind": score.kind,
        "period": score.period,
        "onset": score.onset,
        "repeats": score.repeats,
        "coverage": score.coverage,
        "crep_degenerate": score.crep_degenerate,
        "dharma_degenerate": score.dharma_degenerate,
        "hit_cap": score.hit_cap,
        "tail_repetition": score.tail_repetition,
        "unique_ngram_rates": score.unique_ngram_rates,
        "loop_tail": score.loop_tail,
        "text_length": score.text_length,
    }


def degeneration_rate(records: Sequence[ScanRecord]) -> float:
    return sum(record.score.degenerate for record in records) / len(records) if records else 0.0


def _expand(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            suffixes = TEXT_SUFFIXES | {JSONL_SUFFIX}
            yield from sorted(p for p in path.rglob("*") if p.suffix in suffixes and p.is_file())
        elif path.is_file():
            yield path
        else:
            raise ScanInputError(f"{path}: no such file or directory")


def _jsonl_samples(path: Path, field: str, id_field: str) -> Iterator[Sample]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ScanInputError(f"{where}: invalid JSON ({error.msg})") from error
            if not isinstance(row, dict) or not isinstance(row.get(field), str):
                raise ScanInputError(f"{where}: no text field {field!r}")
            yield Sample(
                id=str(row.get(id_field, f"{path.name}:{number}")),
                text=row[field],
                source=where,
                finish_reason=_optional(row, "finish_reason", str),
                completion_tokens=_optional(row, "completion_tokens", int),
                max_tokens=_optional(row, "max_tokens", int),
            )


def _optional(row: dict[str, Any], key: str, kind: type[_T]) -> _T | None:
    value = row.get(key)
    return value if isinstance(value, kind) else None
