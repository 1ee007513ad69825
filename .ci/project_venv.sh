#!/usr/bin/env bash
# Prints the project venv CI builds or reuses, and readies the cache it lives in. Run from the
# repository root, under `set -euo pipefail` as .ci/run is; tests/test_ci.py runs it against
# an empty HOME, as on a machine that never ran the project.
#
# A clean clone's project venv is kept between runs on this machine, as the vLLM and olmOCR
# venvs are (~/.cache/folio), under the digest of what it is built from: a run that finds it
# installs only this checkout into it (editable, no dependencies: seconds, not the 71-90 s of a
# build). A change to pyproject.toml, the Makefile (which extras it installs), the pins it
# installs with (deploy/docker/constraints.txt) or the torchvision patch builds a new one and
# drops the older. A checkout with a .venv of its own keeps it.
set -euo pipefail
if [[ -e .venv ]]; then
    echo .venv
    exit 0
fi
cache="$HOME/.cache/folio"
digest="$(cat pyproject.toml Makefile deploy/docker/constraints.txt tests/vllm_cpu/patch_torchvision.py | sha256sum | cut -c1-16)"
venv="$cache/project-venv-$digest"
if [[ ! (-f "$venv/.train-installed" && -x "$venv/bin/python") ]]; then
    # made first: on a new machine the cache does not exist, and find would end the run
    mkdir -p "$cache"
    find "$cache" -maxdepth 1 -name 'project-venv-*' -exec rm -rf {} +
fi
echo "$venv"
