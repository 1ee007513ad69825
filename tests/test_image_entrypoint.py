"""The image's entrypoint (deploy/docker/entrypoint.sh) readies the data folder whatever made it
(issue 66: where the Docker daemon made ./data, as root, the API's uploads failed with
PermissionError), then runs the command as the image's user. Run here as the image runs it: as
root, on a root-owned folder, dropping to an unprivileged user (`nobody` stands in for folio)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "deploy" / "docker" / "entrypoint.sh"
NOBODY = 65534

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv"
)


@pytest.fixture
def daemon_made() -> Iterator[Path]:
    """A bind mount's source as the daemon makes it: owned by root, mode 755, under a folder
    every user can enter (pytest's own tmp_path is root's alone)."""
    parent = Path(tempfile.mkdtemp(prefix="folio-entrypoint-"))
    parent.chmod(0o755)
    data = parent / "data"
    data.mkdir(mode=0o755)
    yield data
    shutil.rmtree(parent)


def entrypoint(data: Path, *command: str, user: int | None = None) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "FOLIO_DATA_DIR": str(data),
        "FOLIO_UPLOAD_DIR": str(data / "uploads"),
        "FOLIO_RUN_AS": "nobody",
    }
    prefix = [] if user is None else ["setpriv", f"--reuid={user}", f"--regid={user}"]
    prefix += ["--clear-groups"] if user is not None else []
    return subprocess.run(
        [*prefix, "sh", str(ENTRYPOINT), *command], env=env, capture_output=True, text=True
    )


def test_a_root_made_data_folder_takes_uploads_from_the_image_user(daemon_made: Path) -> None:
    upload = daemon_made / "uploads" / "job" / "a.pdf"
    write = f"import os; os.makedirs('{upload.parent}'); open('{upload}', 'w').write('%PDF')"

    ran = entrypoint(daemon_made, "/usr/bin/python3", "-c", write)  # not root's pyenv

    assert ran.returncode == 0, ran.stderr
    assert upload.stat().st_uid == NOBODY
    # the user can put PDFs beside the uploads (./data/in), and the folder's own content is
    # not taken from whoever owns it
    assert daemon_made.stat().st_uid == NOBODY


def test_the_command_runs_as_the_image_user_with_its_home(daemon_made: Path) -> None:
    ran = entrypoint(daemon_made, "sh", "-c", 'echo "$(id -u) $HOME"')

    assert ran.stdout.split() == [str(NOBODY), "/nonexistent"]


def test_a_folder_someone_else_owns_is_left_to_them(daemon_made: Path) -> None:
    os.chown(daemon_made, 4242, 4242)

    ran = entrypoint(daemon_made, "true")

    assert ran.returncode == 0, ran.stderr
    assert daemon_made.stat().st_uid == 4242


def test_started_unprivileged_it_prepares_nothing_and_runs_the_command(daemon_made: Path) -> None:
    ran = entrypoint(daemon_made, "id", "-u", user=NOBODY)

    assert (ran.returncode, ran.stdout.strip()) == (0, str(NOBODY))
    assert daemon_made.stat().st_uid == 0 and not (daemon_made / "uploads").exists()


def test_the_image_and_compose_run_folio_through_it() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "deploy/docker/entrypoint.sh /usr/local/bin/folio-entrypoint" in dockerfile
    assert 'ENTRYPOINT ["folio-entrypoint", "folio"]' in dockerfile
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("api", "worker-cpu", "worker-gpu", "submit"):
        assert services[name]["user"] == "root", name  # the entrypoint drops to folio
        assert "./data:/data" in services[name]["volumes"], name
