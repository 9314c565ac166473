#!/bin/sh
# The official postgres image's start, as far as the stand-in needs it: on an empty data
# directory, a UTF-8 cluster whose superuser is POSTGRES_USER with POSTGRES_PASSWORD (SCRAM
# over TCP) and the database POSTGRES_DB (default: the user's name); then the server, as
# user postgres, on every address.
set -eu
bin=/usr/lib/postgresql/15/bin
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /run/postgresql
    chown postgres:postgres "$PGDATA" /run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password="$(mktemp)"
    printf '%s' "$POSTGRES_PASSWORD" > "$password"
    "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$password" \
        --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 > /dev/null
    rm -f "$password"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start > /dev/null
    database="${POSTGRES_DB:-$POSTGRES_USER}"
    if [ "$database" != postgres ]; then
        "$bin/createdb" -U "$POSTGRES_USER" "$database"
    fi
    "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop > /dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
