#!/usr/bin/env bash
# The README's GPU path, brought up for real (issue 66): Folio's images built from its
# Dockerfile, docker-compose.yml brought up with vLLM replaced by the project's stand-in, the
# samples submitted through the API and through the `submit` service, every page's result and
# every container's health checked, then `down`, which must leave nothing behind.
#
# No image registry is reachable here, so what the Dockerfiles and the compose file name
# (python:3.11-slim, postgres:16, redis:7) is built locally from a Debian base made with
# debootstrap and `docker import` (.ci/compose/*.Dockerfile), unless the daemon has them.
# A Docker daemon of the script's own runs the stack (its socket, state and network apart from
# any other: no default bridge, no iptables rules, no forwarding; containers reach only one
# another, and the API is published on 127.0.0.1 only); it is stopped at the end and the
# machine's network interfaces are checked against what they were. Builds reach PyPI and
# Debian through the host's network, trusting the host's CA bundle (copied, never committed).
# The daemon's state (images, build layers) and debootstrap's packages are kept under
# ~/.cache/folio/compose, so a second run rebuilds only what changed.
#
# Run from the repository root (.ci/run runs it after `make test`); FOLIO_PYTHON names the
# project venv's Python (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="${FOLIO_PYTHON:-.venv/bin/python}"
cache="$HOME/.cache/folio/compose"
project=folioci
port="${FOLIO_SMOKE_PORT:-18080}"
api="http://127.0.0.1:$port"
began=$SECONDS
say() { echo "compose smoke [$((SECONDS - began)) s]: $*"; }

# --- the container engine -------------------------------------------------------------------
if [[ $(id -u) != 0 ]]; then
    echo "compose smoke SKIPPED: it starts a Docker daemon of its own and needs root" >&2
    exit 0
fi
packages=()
command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || packages+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || packages+=(debootstrap)
if ((${#packages[@]})); then
    say "installing ${packages[*]}"
    if ! (apt-get update -qq && apt-get install -y -qq "${packages[@]}" >/dev/null); then
        if ! command -v dockerd >/dev/null 2>&1; then
            echo "compose smoke SKIPPED: no container engine could be installed" >&2
            exit 0
        fi
        echo "installing ${packages[*]} failed" >&2
        exit 1
    fi
fi
# Debian's client, the daemon's own version (a newer client on PATH may want buildx).
docker=/usr/bin/docker
[[ -x $docker ]] || docker="$(command -v docker)"
# Compose v2 where the plugin is installed, else v1 (what Debian bookworm ships).
if $docker compose version >/dev/null 2>&1; then compose=("$docker" compose); else compose=(docker-compose); fi

run="$(mktemp -d /tmp/folio-compose-smoke.XXXXXX)"
chmod 755 "$run"
links_before="$(ip -o link show | awk -F': ' '{print $2}' | sort)"
forwarding_before="$(sysctl -n net.ipv4.ip_forward)"
export DOCKER_HOST="unix://$run/docker.sock"
daemon=""
cleanup() {
    local status=$?
    if [[ -n "$daemon" ]]; then
        "${compose[@]}" -p "$project" -f "$run/compose.yml" --project-directory "$run" \
            down -v --remove-orphans >/dev/null 2>&1 || true
        kill "$daemon" 2>/dev/null || true
        for _ in $(seq 60); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.5; done
    fi
    # what the daemon mounted under its exec root (the default network namespace) goes with it
    grep -o " $run/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l || true
    sysctl -qw net.ipv4.ip_forward="$forwarding_before"
    local links_after
    links_after="$(ip -o link show | awk -F': ' '{print $2}' | sort)"
    if [[ "$links_after" != "$links_before" ]]; then
        echo "compose smoke: network interfaces changed: $(comm -13 <(echo "$links_before") <(echo "$links_after") | tr '\n' ' ')" >&2
        status=1
    fi
    rm -rf "$run" || status=1
    echo "compose smoke took $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s"
    exit "$status"
}
trap cleanup EXIT
trap "exit 143" TERM INT  # a stopped run cleans up too

mkdir -p "$cache/docker" "$cache/debs"
say "starting a Docker daemon of its own ($DOCKER_HOST)"
dockerd --host "$DOCKER_HOST" --data-root "$cache/docker" --exec-root "$run/exec" \
    --pidfile "$run/dockerd.pid" --containerd-namespace folio-ci \
    --containerd-plugins-namespace folio-ci-plugins --bridge none --iptables=false \
    --ip-forward=false --ip-masq=false >"$run/dockerd.log" 2>&1 &
daemon=$!
for _ in $(seq 60); do $docker info >/dev/null 2>&1 && break; sleep 0.5; done
$docker info >/dev/null || { tail -20 "$run/dockerd.log" >&2; exit 1; }

# --- images ---------------------------------------------------------------------------------
build() {  # build TAG [docker build args...]: quiet, niced, on the host's network
    local tag=$1
    shift
    nice -n 15 $docker build -q --network host -t "$tag" "$@" >/dev/null
}
base=folio-ci/bookworm:1
if ! $docker image inspect "$base" >/dev/null 2>&1; then
    say "building the Debian base (debootstrap)"
    nice -n 15 debootstrap --variant=minbase --cache-dir="$cache/debs" \
        --include=python3,python3-pip,python-is-python3,ca-certificates \
        bookworm "$run/rootfs" http://deb.debian.org/debian >"$run/debootstrap.log" 2>&1 ||
        { tail -20 "$run/debootstrap.log" >&2; exit 1; }
    rm -rf "$run/rootfs/var/lib/apt/lists/"* "$run/rootfs/var/cache/apt/archives/"*.deb
    tar -C "$run/rootfs" -c . | $docker import - "$base" >/dev/null
    rm -rf "$run/rootfs"
fi
standin() {  # standin TAG DOCKERFILE: what the project's files name, unless the daemon has it
    if ! $docker image inspect "$1" >/dev/null 2>&1 ||
        [[ -n "$($docker image inspect -f '{{index .Config.Labels "org.folio.ci-standin"}}' "$1")" ]]; then
        build "$1" --build-arg BASE="$base" -f "$repo/.ci/compose/$2" "$run/context"
    fi
}
mkdir -p "$run/context"
cp .ci/compose/*-entrypoint.sh "$run/context/"
cp /etc/ssl/certs/ca-certificates.crt "$run/context/"
say "building the stand-ins for python:3.11-slim, postgres:16 and redis:7"
standin python:3.11-slim python.Dockerfile
standin postgres:16 postgres.Dockerfile
standin redis:7 redis.Dockerfile
say "building Folio's image (Dockerfile) and the vLLM stand-in"
build folio:latest -f Dockerfile .
build folio-vllm-standin:ci -f .ci/compose/vllm-standin.Dockerfile .
$docker image prune -f >/dev/null  # the layers a rebuild left untagged

# --- up -------------------------------------------------------------------------------------
PYTHONPATH="$repo" "$python" -m tests.compose_stack variant "$run/compose.yml" --port "$port"
dc() { "${compose[@]}" -p "$project" -f "$run/compose.yml" --project-directory "$run" "$@"; }
# ./data does not exist before `up` (the README's order): the daemon makes it, as root.
say "up (${compose[*]})"
dc down -v --remove-orphans >/dev/null 2>&1  # what an interrupted run left
containers() { $docker ps -aq --filter "label=com.docker.compose.project=$project"; }
health() {  # one line a container: name, state, health
    $docker inspect -f '{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}} {{.State.ExitCode}}' $(containers)
}
all_healthy() {  # every container healthy, apart from the migrate step, which ended well
    health | awk '$1 ~ /migrate/ { if ($2 != "exited" || $4 != 0) bad = 1; next }
                  $3 != "healthy" { bad = 1 } END { exit bad }'
}
show_logs() {
    health >&2 || true
    for c in $(containers); do
        echo "--- $($docker inspect -f '{{.Name}}' "$c")" >&2
        $docker logs --tail 30 "$c" >&2 2>&1
    done
}
dc up -d --no-build || { show_logs; exit 1; }

for _ in $(seq 240); do all_healthy && break; sleep 2; done  # 8 min: a loaded machine
all_healthy || { show_logs; exit 1; }
say "$(health | wc -l) containers, all healthy: $(health | awk '{print $1}' | tr -d / | tr '\n' ' ')"

# --- the samples, through the API and through the submit service -----------------------------
pdfs=(samples/*.pdf samples/*/*.pdf)
stack() { PYTHONPATH="$repo" "$python" -m tests.compose_stack "$@"; }
pages="$(stack pages "${pdfs[@]}")"
say "submitting ${#pdfs[@]} samples ($pages pages) through the API"
token="$(dc exec -T api folio apikey create smoke 2>/dev/null | tail -1)"
job="$(stack submit "$api" "$token" "${pdfs[@]}")"
stack check "$api" "$token" "$job" "$pages"
say "submitting them through the submit service"
mkdir -p "$run/data/in"  # as the README says: PDFs into ./data/in (the daemon made ./data)
cp "${pdfs[@]}" "$run/data/in/"
submitted="$(dc run --rm -T submit submit /data/in --wait)"  # the job's id, then its table
job="${submitted%%$'\n'*}"
# A job submitted from the command line belongs to no API key: its pages are read from the
# database, where the API reads them.
sql="select count(*), count(*) filter (where p.status = 'succeeded' and trim(coalesce(p.text, '')) <> ''),
     min(j.status) from pages p join jobs j on j.id = p.job_id where p.job_id = '$job'"
read -r total read_ status < <(dc exec -T postgres psql -U folio -d folio -At -F ' ' -c "$sql")
if [[ "$status" != done || "$total" != "$pages" || "$read_" != "$pages" ]]; then
    echo "compose smoke: submit job $job is ${status:-missing}, $read_ of $total pages read ($pages expected)" >&2
    exit 1
fi
say "job $job: all $pages pages read"
all_healthy || { show_logs; exit 1; }

# --- down -----------------------------------------------------------------------------------
say "down"
dc down -v --remove-orphans >/dev/null 2>&1
left="$($docker ps -aq --filter "label=com.docker.compose.project=$project")"
left+="$($docker network ls -q --filter "label=com.docker.compose.project=$project")"
left+="$($docker volume ls -q --filter "label=com.docker.compose.project=$project")"
[[ -z "$left" ]] || { echo "compose smoke: down left $left" >&2; exit 1; }
say "the samples read through the API and the submit service; down left nothing"
