"""Load the detector as it was at another git revision, to measure it side by side.

The files of `app/degeneration` at `ref` are written to a temporary package (imports
rewritten to it), so both versions run in the same process on the same inputs.
"""

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

# The detector before issue 13 (shape view, structural view, cap rule).
DEFAULT_REF = "5866c15b73e3f5b62c821b9a9bba23ec259365ab"
_PACKAGE = "folio_baseline_degeneration"


class BaselineUnavailable(RuntimeError):
    """The revision cannot be read (no git, a shallow clone, an unknown ref)."""


def load_baseline(repo: Path, ref: str = DEFAULT_REF) -> ModuleType:
    """The `app.degeneration` package of `ref`, importable as `folio_baseline_degeneration`
    (with the ref's first 12 characters appended for any other ref, so two can coexist)."""
    names = _git(repo, "ls-tree", "--name-only", f"{ref}:app/degeneration").split()
    if not names:
        raise BaselineUnavailable(f"no app/degeneration at {ref}")
    root = Path(tempfile.mkdtemp(prefix="folio-baseline-"))
    module = _PACKAGE if ref == DEFAULT_REF else f"{_PACKAGE}_{_suffix(ref)}"
    package = root / module
    package.mkdir()
    for name in names:
        if name.endswith(".py"):
            source = _git(repo, "show", f"{ref}:app/degeneration/{name}")
            (package / name).write_text(source.replace("app.degeneration", module))
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root))


def _suffix(ref: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in ref[:12])


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BaselineUnavailable(f"git {' '.join(args)} failed: {exc}") from exc
    return done.stdout
