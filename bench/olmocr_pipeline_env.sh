#!/usr/bin/env bash
# olmOCR's own pipeline (`python -m olmocr.pipeline`) in a venv of its own, for
# `python -m bench scale-olmocr`: olmocr 0.4.27 from PyPI with its base deps only (boto3,
# huggingface_hub, lingua, pypdf...; not the `gpu` extra: no torch, no vLLM), plus poppler's
# pdftoppm, which it renders pages with and checks for at start. Pointed at a server with
# `--server` it neither checks for a GPU nor downloads the model (olmocr/pipeline.py:1424-1437).
# Usage: bash bench/olmocr_pipeline_env.sh   (FOLIO_OLMOCR_PIPELINE_VENV overrides the location;
# FOLIO_APT_ELSEWHERE=1 leaves pdftoppm to the caller: .ci/run installs it beside Chromium)
set -euo pipefail
VENV="${FOLIO_OLMOCR_PIPELINE_VENV:-$HOME/.cache/folio/olmocr-pipeline-venv}"
STAMP="$VENV/.folio-olmocr-pipeline-0.4.27"
APT_HERE=1
[ "${FOLIO_APT_ELSEWHERE:-}" = 1 ] && APT_HERE=0
if [ -f "$STAMP" ] && { [ "$APT_HERE" = 0 ] || command -v pdftoppm >/dev/null 2>&1; }; then
    exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q olmocr==0.4.27
if [ "$APT_HERE" = 1 ] && ! command -v pdftoppm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null
fi
touch "$STAMP"
echo "olmOCR's pipeline ready in $VENV"
