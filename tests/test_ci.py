"""CI's set-up path on a machine that never ran the project (issue 53): `.ci/run` ended in
one second where `~/.cache/folio` did not exist. Its venv choice runs here against an empty
HOME, as a new machine has it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "project_venv.sh"


def checkout(tmp_path: Path) -> Path:
    """What the script reads of a clean clone (no .venv of its own)."""
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    (clone / "tests" / "vllm_cpu").mkdir(parents=True)
    shutil.copy(SCRIPT, clone / ".ci")
    shutil.copy(ROOT / "pyproject.toml", clone)
    shutil.copy(ROOT / "Makefile", clone)
    (clone / "deploy" / "docker").mkdir(parents=True)
    shutil.copy(ROOT / "deploy/docker/constraints.txt", clone / "deploy/docker")
    shutil.copy(ROOT / "tests/vllm_cpu/patch_torchvision.py", clone / "tests/vllm_cpu")
    return clone


def choose(clone: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        ["bash", ".ci/project_venv.sh"], cwd=clone, env=env, capture_output=True, text=True
    )


def test_an_empty_home_gets_its_cache_and_a_venv_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()

    chosen = choose(checkout(tmp_path), home)

    assert chosen.returncode == 0, chosen.stderr
    venv = Path(chosen.stdout.strip())
    assert venv.parent == home / ".cache" / "folio" and venv.name.startswith("project-venv-")
    assert venv.parent.is_dir()


def test_a_kept_venv_is_reused_and_a_stale_one_dropped(tmp_path: Path) -> None:
    home, clone = tmp_path / "home", checkout(tmp_path)
    home.mkdir()
    venv = Path(choose(clone, home).stdout.strip())
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".train-installed").write_text("")
    stale = venv.parent / "project-venv-0000000000000000"
    stale.mkdir()

    assert choose(clone, home).stdout.strip() == str(venv)
    assert venv.is_dir() and stale.is_dir()  # a kept venv: nothing is built, nothing dropped

    (venv / ".train-installed").unlink()  # a build that did not finish
    assert choose(clone, home).stdout.strip() == str(venv)
    assert not venv.exists() and not stale.exists()


def test_ci_takes_its_venv_from_the_script_and_parses() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert '"$(.ci/project_venv.sh)"' in run
    assert subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")]).returncode == 0
