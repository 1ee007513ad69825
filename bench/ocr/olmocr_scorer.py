"""Runs olmOCR-bench's official scorer, unmodified, inside its own venv (bench/olmocr_env.sh).

The scorer launches Playwright's bundled Chromium, which cannot be downloaded here; this shim
points every launch at Debian's `chromium` and then runs `olmocr.bench.benchmark` as `__main__`
with the arguments given. Standard library only: it runs in the scorer's venv, not Folio's.
"""

from __future__ import annotations

import os
import runpy
import shutil

from playwright.sync_api import BrowserType

_launch = BrowserType.launch


def _launch_system_chromium(self: BrowserType, *args: object, **kwargs: object) -> object:
    if self.name == "chromium" and "executable_path" not in kwargs:
        kwargs["executable_path"] = os.environ.get("FOLIO_CHROMIUM") or shutil.which("chromium")
    return _launch(self, *args, **kwargs)  # type: ignore[arg-type]


BrowserType.launch = _launch_system_chromium  # type: ignore[method-assign]

if __name__ == "__main__":
    runpy.run_module("olmocr.bench.benchmark", run_name="__main__", alter_sys=True)
