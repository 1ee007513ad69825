#!/usr/bin/env bash
# Start or stop one background vLLM test server (manual use, or one shared server in CI).
#
#   tests/vllm_cpu/serve.sh start DIR [PORT]   # waits for /health; writes DIR/vllm.{pid,port,url,log}
#   tests/vllm_cpu/serve.sh stop DIR
#
# Then: FOLIO_VLLM_URL=$(cat DIR/vllm.url) pytest -m vllm ...
# Extra server flags: FOLIO_VLLM_EXTRA_ARGS="--max-num-seqs 8"; other settings as in server.py
# (FOLIO_VLLM_VENV, FOLIO_VLLM_MODEL_DIR, VLLM_CPU_KVCACHE_SPACE). The engine runs reniced
# (server.DEFAULT_ENGINE_NICE); FOLIO_VLLM_ENGINE_NICE=none keeps it starving the API server
# (the benchmark's "front end lagging" regime), or sets another niceness.
# The launch itself is VllmServer.start(), so the flags live in one place (server.py).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
if [[ -n "${FOLIO_PROJECT_PYTHON:-}" ]]; then
    PY="$FOLIO_PROJECT_PYTHON"
elif [[ -x "$REPO/.venv/bin/python" ]]; then
    PY="$REPO/.venv/bin/python"
else
    PY=python3
fi

usage() { echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2; }

group_alive() {  # any non-zombie process left in process group $1?
    ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

start() {
    local dir="$1" port="${2:-}"
    mkdir -p "$dir"
    if [[ -f "$dir/vllm.pid" ]] && group_alive "$(cat "$dir/vllm.pid")"; then
        echo "[serve] already running: pid $(cat "$dir/vllm.pid"), $(cat "$dir/vllm.url")"
        return 0
    fi
    rm -f "$dir/vllm.pid" "$dir/vllm.port" "$dir/vllm.url"
    echo "[serve] starting vLLM (log: $dir/vllm.log)"
    (cd "$REPO" && "$PY" - "$dir" "$port") <<'PY'
import os
import shlex
import sys
from pathlib import Path

from tests.vllm_cpu.server import DEFAULT_ENGINE_NICE, VllmServer, VllmServerError

out = Path(sys.argv[1]).resolve()
port = int(sys.argv[2]) if sys.argv[2] else None
extra = shlex.split(os.environ.get("FOLIO_VLLM_EXTRA_ARGS", ""))
nice = os.environ.get("FOLIO_VLLM_ENGINE_NICE", str(DEFAULT_ENGINE_NICE))
server = VllmServer(
    port=port,
    extra_args=extra,
    log_path=out / "vllm.log",
    engine_nice=None if nice.lower() == "none" else int(nice),
)
try:
    server.start()
except VllmServerError as error:
    print(f"[serve] FAILED: {error}", file=sys.stderr)
    sys.exit(1)
(out / "vllm.pid").write_text(f"{server.pid}\n")
(out / "vllm.port").write_text(f"{server.port}\n")
(out / "vllm.url").write_text(f"{server.base_url}\n")
print(f"[serve] healthy after {server.startup_seconds:.0f} s: {server.base_url} (pid {server.pid})")
PY
}

stop() {
    local dir="$1" pid
    if [[ ! -f "$dir/vllm.pid" ]]; then
        echo "[serve] no $dir/vllm.pid: nothing to stop"
        return 0
    fi
    pid="$(cat "$dir/vllm.pid")"
    # The server leads its own process group (start_new_session): signal the group.
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        group_alive "$pid" || break
        sleep 0.2
    done
    if group_alive "$pid"; then
        echo "[serve] still alive after 20 s: SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$dir/vllm.pid" "$dir/vllm.port" "$dir/vllm.url"
    echo "[serve] stopped pid $pid"
}

case "${1:-}" in
    start) [[ $# -ge 2 && $# -le 3 ]] || usage; start "$2" "${3:-}" ;;
    stop) [[ $# -eq 2 ]] || usage; stop "$2" ;;
    *) usage ;;
esac
