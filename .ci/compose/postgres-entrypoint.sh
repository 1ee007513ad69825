#!/bin/sh
# The official postgres image's first start, in short: a new data folder gets a cluster owned by
# POSTGRES_USER with POSTGRES_PASSWORD, and POSTGRES_DB; then the server runs as postgres. The
# first start's own server listens on a private socket folder, so the healthcheck (pg_isready on
# the default socket) passes only once the real server is up.
set -eu
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql /tmp/first-start
chown postgres:postgres "$PGDATA" /var/run/postgresql /tmp/first-start
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/first-start/password
    chown postgres /tmp/first-start/password
    as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/first-start/password \
        --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    as_postgres pg_ctl -D "$PGDATA" -w -s \
        -o "-c listen_addresses='' -c unix_socket_directories=/tmp/first-start" start
    database="${POSTGRES_DB:-$POSTGRES_USER}"
    if [ "$database" != postgres ]; then
        as_postgres createdb -h /tmp/first-start -U "$POSTGRES_USER" "$database"
    fi
    as_postgres pg_ctl -D "$PGDATA" -w -s stop
    rm -rf /tmp/first-start
fi
if [ "$1" = postgres ]; then
    shift
    exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
fi
exec "$@"
