"""Resuming an evaluation: each arm's job is remembered in the output folder as soon as it is
created, so a run that is stopped (Ctrl+C, a lost machine) keeps the pages it finished, and the
same command again reads only the pages each arm has not finished.

`eval_jobs.json` names the evaluation (source and page list) and, per arm label, its plan,
endpoint and job. A rerun with another source or page list into the same folder is refused
rather than mixed with the old jobs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.db import pages
from app.db.engine import Database
from app.errors import ConfigError
from app.evaluate.arms import Arm

STATE_FILE = "eval_jobs.json"


@dataclass
class EvalJobs:
    """The jobs of one evaluation, by arm label, as stored in its output folder."""

    path: Path
    evaluation: dict[str, str | None]
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)

    def job_of(self, arm: Arm) -> str | None:
        known = self.arms.get(arm.label)
        if known and known.get("plan") == arm.plan and known.get("endpoint") == arm.endpoint:
            return str(known["job_id"])
        return None

    def remember(self, arm: Arm, job_id: str) -> None:
        self.arms[arm.label] = {"plan": arm.plan, "endpoint": arm.endpoint, "job_id": job_id}
        record = {"evaluation": self.evaluation, "arms": self.arms}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        partial.replace(self.path)


def load_jobs(work: Path, source: Path, pages_file: Path | None) -> EvalJobs:
    """The evaluation's remembered jobs (none for a new folder); raises ConfigError when the
    folder holds another evaluation."""
    evaluation = {
        "source": str(source.resolve()),
        "pages_file": str(pages_file.resolve()) if pages_file else None,
    }
    path = work / STATE_FILE
    if not path.is_file():
        return EvalJobs(path, evaluation)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        arms = dict(stored["arms"])
        same = stored["evaluation"] == evaluation
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc}); remove it to start afresh") from exc
    if not same:
        raise ConfigError(
            f"{work} holds the jobs of another evaluation ({stored['evaluation']}): "
            f"choose another --out, or remove {path.name} to start afresh"
        )
    return EvalJobs(path, evaluation, arms)


def pages_left(db: Database, job_id: str) -> list[int] | None:
    """The job's pages not finished yet; None when the database has no such job."""
    with db.session() as session:
        if not pages.count_pages_by_status(session, job_id):
            return None
        return pages.open_pages(session, job_id)
