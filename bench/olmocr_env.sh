#!/usr/bin/env bash
# The olmOCR-bench scorer in a venv of its own: olmocr 0.4.27 from PyPI without its (GPU) deps,
# plus the scorer's own imports. Math tests render KaTeX in Debian's Chromium.
# Usage: bash bench/olmocr_env.sh   (FOLIO_OLMOCR_VENV overrides the location)
set -euo pipefail
VENV="${FOLIO_OLMOCR_VENV:-$HOME/.cache/folio/olmocr-bench-venv}"
STAMP="$VENV/.folio-olmocr-0.4.27"
if [ -f "$STAMP" ] && command -v chromium >/dev/null 2>&1; then
    exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q --no-deps olmocr==0.4.27
"$VENV/bin/python" -m pip install -q rapidfuzz fuzzysearch beautifulsoup4 lxml tqdm numpy \
    pypdf pillow playwright
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
touch "$STAMP"
echo "olmOCR-bench scorer ready in $VENV"
