"""Make the torchvision 0.28.0 wheel of these machines importable (run with the venv's python).

That wheel is a CUDA build: importing it raises "operator torchvision::nms does not exist",
which breaks transformers' VLM processors. Registering the nms/qnms fakes only when the
compiled ops exist lets it import; the image transforms work. Idempotent.
(setup_env.sh runs it on the vLLM venv, `make train-env` on the project venv; see
shared/notes/vllm-on-cpu.md.)
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import sys

MARKER = "# folio-patch: nms fakes only with compiled ops"


def main() -> int:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        print("torchvision is not installed: nothing to patch")
        return 0
    path = pathlib.Path(spec.origin).parent / "_meta_registrations.py"
    text = path.read_text()
    if MARKER in text:
        print(f"already patched: {path}")
        return 0
    pattern = re.compile(r'^@torch\.library\.register_fake\("torchvision::(nms|qnms)"\)$', re.M)
    new, count = pattern.subn(
        lambda m: (
            f'@(torch.library.register_fake("torchvision::{m.group(1)}")'
            " if torchvision.extension._has_ops() else (lambda f: f))"
        ),
        text,
    )
    if count != 2 or "import torchvision.extension" not in new:
        print(
            f"{path}: unexpected layout ({count} decorators); patch needs review", file=sys.stderr
        )
        return 1
    path.write_text(f"{MARKER}\n{new}")
    print(f"patched: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
