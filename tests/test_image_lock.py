"""The image's Python dependencies are pinned (deploy/docker/constraints.txt), the pins agree
with pyproject, and the tests run on the pinned versions (issue 66: the image installed about 60
unpinned packages, so what it ran was whatever PyPI had that day)."""

from __future__ import annotations

from pathlib import Path

from tests.image_lock import CONSTRAINTS, closure, problems, read_pins

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_the_image_installs_is_pinned_at_the_test_venvs_version() -> None:
    pins = read_pins()

    assert problems(pins) == []
    assert set(pins) == set(closure())
    assert {"celery", "fastapi", "pymupdf", "boto3"} <= set(pins)  # the s3 extra among them


def test_a_pin_that_breaks_pyproject_or_leaves_a_package_out_is_found(tmp_path: Path) -> None:
    pins = read_pins()
    pins["sqlalchemy"] = "2.2.0"  # pyproject: sqlalchemy>=2.0,<2.2
    del pins["kombu"]
    pins["left-pad"] = "1.0"

    found = problems(pins)

    assert any("sqlalchemy==2.2.0 does not satisfy sqlalchemy" in p for p in found)
    assert "kombu: installed by the image, not pinned" in found
    assert "left-pad: pinned, not needed by pyproject's dependencies" in found


def test_the_image_and_the_test_venv_install_with_the_pins() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY pyproject.toml README.md deploy/docker/constraints.txt ./" in dockerfile
    assert "RUN pip install -r constraints.txt" in dockerfile
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "pip install" in line and "-e '." in line]
    assert installs and all(f"-c {CONSTRAINTS.relative_to(ROOT)}" in line for line in installs)
