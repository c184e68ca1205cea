#!/usr/bin/env bash
# The pooler lane (issue 41): PgBouncer in transaction mode, 3 server connections per database
# and user, in front of the machine's PostgreSQL; the repository, tenant, change-feed, routing
# and interchange tests open their stores through it (ACTI_STORE_TEST_POSTGRES_POOLER_URL, with
# ACTI_STORE_POOLER=transaction), their schemas made and dropped on the server directly.
# Usage: .ci/pooler_lane.sh PYTHON WORKDIR
set -euo pipefail
# Why 3, not 2: with 2, tests/test_tenant_load.py (10 processes writing and reading through the
# pooler at once) waited past PgBouncer's query_wait_timeout (120 s) in one CI run of two, and
# past 30 s in 3 local runs of 4, at 19dc400 as at later commits: some server connection stays
# linked to one client for 30-40 s ("client disconnect while server was not ready (age=42s)").
# With 3 it passed every run. The cause is not found yet (written in the round's closing note);
# 10 clients on 3 server connections still share every connection between transactions.
PYTHON="$1"
DIR="$2/pgbouncer"
mkdir -p "$DIR"
PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SERVER_PORT="$("$PYTHON" -c 'import os, sqlalchemy; print(sqlalchemy.make_url(os.environ["ACTI_STORE_TEST_POSTGRES_URL"]).port or 5432)')"
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$SERVER_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/users.txt
pool_mode = transaction
default_pool_size = 3
max_client_conn = 400
ignore_startup_parameters = extra_float_digits
logfile = $DIR/pgbouncer.log
INI
echo '"postgres" ""' >"$DIR/users.txt"
chown -R postgres "$DIR"
chmod 755 "$(dirname "$DIR")"
runuser -u postgres -- pgbouncer "$DIR/pgbouncer.ini" &
BOUNCER=$!
trap 'kill "$BOUNCER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  "$PYTHON" -c "import psycopg; psycopg.connect('host=127.0.0.1 port=$PORT user=postgres dbname=postgres').close()" 2>/dev/null && break
  sleep 0.2
done
export ACTI_STORE_TEST_POSTGRES_POOLER_URL="postgresql+psycopg://postgres@127.0.0.1:$PORT/${ACTI_STORE_TEST_POSTGRES_URL##*/}"
export ACTI_STORE_POOLER=transaction
unset ACTI_STORE_TEST_MYSQL_URL
echo "PgBouncer $(pgbouncer --version | head -n 1) in transaction mode on 127.0.0.1:$PORT"
"$PYTHON" -m pytest -q -p no:cacheprovider -m postgresql \
  tests/test_repository.py tests/test_tenants.py tests/test_tenant_load.py \
  tests/test_changes.py tests/test_config_cache.py \
  tests/test_label_routing.py tests/test_versions.py tests/test_pooler.py \
  tests/test_interchange.py tests/test_interchange_engines.py
