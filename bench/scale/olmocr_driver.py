"""olmOCR's own pipeline, run as `python -m olmocr.pipeline ARGS...` runs it, inside its venv
(`bench/olmocr_pipeline_env.sh`; this file imports nothing of Folio's). Writes to OUT the wall
clock after its imports (a pipeline that runs for hours pays them once) and the counts its own
metrics keep: pages finished by attempt, fallback pages, tokens the server reported.

Usage: VENV/bin/python bench/scale/olmocr_driver.py OUT.json WORKSPACE --server URL --pdfs ...
"""

import json
import sys
import time
from pathlib import Path

import olmocr.pipeline as pipeline  # type: ignore[import-not-found]


def main() -> None:
    out = Path(sys.argv[1])
    sys.argv = ["olmocr.pipeline", *sys.argv[2:]]
    started = time.time()
    pipeline.cli_main()
    finished = time.time()
    summary = pipeline.metrics.get_metrics_summary()
    record = {"started": started, "finished": finished, "metrics": summary["total_metrics"]}
    out.write_text(json.dumps(record), encoding="utf-8")


if __name__ == "__main__":
    main()
