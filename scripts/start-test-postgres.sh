#!/usr/bin/env bash
# Starts a PostgreSQL server for the identity provider's tests and prints its URL on stdout
# (postgres://keyhaven:…@127.0.0.1:PORT/keyhaven_test). Installs Debian's `postgresql` when missing.
#   - As root with a Debian cluster (pg_lsclusters): starts it and creates the role and database.
#   - Otherwise: initdb into .build/postgres-test and runs it on a free port as the current user.
# Idempotent: a server already running is reused.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: postgresql" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
        echo "PostgreSQL is missing (install Debian's postgresql, or run as root)" >&2
        exit 1
    fi
fi
bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")

# The server outlives this script: it must not inherit its descriptors. Started under
# `flock /tmp/keyhaven-build.lock …` (as .ci/run does), it would otherwise hold the build lock for
# as long as it runs and every later build would wait for it.
detached() {
    python3 -c 'import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
password=keyhaven-test

if [ "$(id -u)" = 0 ] && command -v pg_lsclusters >/dev/null 2>&1 && [ -n "$(pg_lsclusters -h 2>/dev/null)" ]; then
    read -r version cluster port status _ < <(pg_lsclusters -h | head -1)
    [ "$status" = online ] || detached pg_ctlcluster "$version" "$cluster" start >&2
    for _ in $(seq 1 50); do runuser -u postgres -- psql -qAtc "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
    runuser -u postgres -- psql -qAt >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'keyhaven') THEN
    CREATE ROLE keyhaven LOGIN CREATEDB PASSWORD '$password';
  ELSE
    ALTER ROLE keyhaven LOGIN CREATEDB PASSWORD '$password';
  END IF;
END \$\$;
SQL
    runuser -u postgres -- psql -qAtc "SELECT 1 FROM pg_database WHERE datname = 'keyhaven_test'" | grep -q 1 \
        || runuser -u postgres -- psql -qc "CREATE DATABASE keyhaven_test OWNER keyhaven" >&2
else
    data=.build/postgres-test
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        echo "$password" >"$data.pw"
        "$bin/initdb" -D "$data" -U keyhaven --pwfile="$data.pw" -A scram-sha-256 >/dev/null
    fi
    if [ -f "$data/port" ] && "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        port=$(cat "$data/port")
    else
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        echo "$port" >"$data/port"
        detached "$bin/pg_ctl" -D "$data" -l "$data/log" -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" -w start >&2
        PGPASSWORD=$password "$bin/psql" -h 127.0.0.1 -p "$port" -U keyhaven -d postgres -qAtc \
            "SELECT 1 FROM pg_database WHERE datname = 'keyhaven_test'" | grep -q 1 \
            || PGPASSWORD=$password "$bin/createdb" -h 127.0.0.1 -p "$port" -U keyhaven keyhaven_test
    fi
fi
echo "postgres://keyhaven:$password@127.0.0.1:$port/keyhaven_test?sslmode=disable"
