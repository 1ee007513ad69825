#!/usr/bin/env bash
# OCRmyPDF in a venv of its own (its pikepdf and pdfminer pins are not Folio's), with Debian's
# Tesseract and Ghostscript, for `python -m bench searchable`.
# Usage: bash bench/ocrmypdf_env.sh   (FOLIO_OCRMYPDF_VENV overrides the location)
set -euo pipefail
VENV="${FOLIO_OCRMYPDF_VENV:-$HOME/.cache/folio/ocrmypdf-venv}"
STAMP="$VENV/.folio-ocrmypdf"
if [ -f "$STAMP" ] && command -v tesseract >/dev/null 2>&1 && command -v gs >/dev/null 2>&1; then
    exit 0
fi
if ! command -v tesseract >/dev/null 2>&1 || ! command -v gs >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq tesseract-ocr ghostscript >/dev/null
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q ocrmypdf
touch "$STAMP"
echo "OCRmyPDF $("$VENV/bin/ocrmypdf" --version) ready in $VENV"
