#!/bin/sh
# Folio image's entrypoint: `folio-entrypoint COMMAND...` readies the data folder, then runs
# COMMAND as the image's user (folio).
#
# docker-compose.yml bind-mounts ./data at /data. Where ./data did not exist before `up` (the
# README's order), the daemon made it, owned by root, and the API's first upload failed with
# PermissionError on /data/uploads (issue 66). Compose starts Folio's services as root for this
# script alone: it gives the data folder (the folder itself, not what a user put in it) and the
# upload folder to that user where root owns them, then drops to that user. Started as any other
# user (Kubernetes' runAsUser), it prepares nothing and runs COMMAND as that user.
set -eu
data="${FOLIO_DATA_DIR:-/data}"
user="${FOLIO_RUN_AS:-folio}"

if [ "$(id -u)" != 0 ]; then
    exec "$@"
fi
uid="$(id -u "$user")"
gid="$(id -g "$user")"
owned_by_root() { [ "$(stat -c %u "$1")" = 0 ]; }
if [ -d "$data" ] && owned_by_root "$data"; then
    chown "$uid:$gid" "$data"
fi
uploads="${FOLIO_UPLOAD_DIR:-}"
if [ -n "$uploads" ]; then
    mkdir -p "$uploads"
    if owned_by_root "$uploads"; then
        chown "$uid:$gid" "$uploads"
    fi
fi
HOME="$(getent passwd "$user" | cut -d: -f6)"
export HOME
exec setpriv --reuid="$uid" --regid="$gid" --init-groups "$@"
