#!/usr/bin/env bash
# What a PostgreSQL lease costs: `retry --lock postgres://…#NAME -- true` against a
# throwaway server on loopback, directly and through PgBouncer in transaction mode,
# next to `retry -- true`. Reports the median wall time of each (RUNS runs, taking
# turns), the time the lease adds, and the statements and connections one run makes
# (from the server's log: log_statement = all, log_connections). Prints a Markdown table.
#
# Usage: bench/lease.sh                 (builds the static release first, as the README's install does)
#        RETRY_BIN=path bench/lease.sh  (measures that binary as it is)
# Knobs: RUNS (200). Needs PostgreSQL and pgbouncer (Debian packages), run as root.
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUNS=${RUNS:-200}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGDIR=$WORK/pg
mkdir -p "$PGDIR"
chown nobody "$PGDIR" "$WORK"
as_nobody() { runuser -u nobody -- "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

PORT=$(free_port)
as_nobody "$BIN/initdb" -D "$PGDIR/data" -U postgres -A trust --no-sync >/dev/null
as_nobody "$BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w -o "-c listen_addresses=127.0.0.1 -p $PORT -k $PGDIR -c fsync=off -c log_statement=all -c log_connections=on" start >/dev/null
BOUNCER_PORT=$(free_port)
echo '"postgres" ""' >"$PGDIR/users"
cat >"$PGDIR/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGDIR/users
pool_mode = transaction
default_pool_size = 2
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options,application_name
logfile = $PGDIR/pgbouncer.log
EOF
chown nobody "$PGDIR"/*
as_nobody pgbouncer "$PGDIR/pgbouncer.ini" >/dev/null 2>&1 &
BOUNCER=$!
stop_all() {
    kill "$BOUNCER" 2>/dev/null || true
    as_nobody "$BIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true
    cleanup
}
trap stop_all EXIT
for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$BOUNCER_PORT") 2>/dev/null && break; sleep 0.1; done

direct="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable#bench"
pooled="postgres://postgres@127.0.0.1:$BOUNCER_PORT/postgres?sslmode=disable#bench"
# The tables exist from the first run on, as on any server that has seen retry before.
"$R" --lock "$direct" -- true

# One run's statements and connections, counted in the server's log.
count_one() {
    local before
    before=$(wc -l <"$PGDIR/log")
    "$R" --lock "$1" -- true
    tail -n +"$((before + 1))" "$PGDIR/log" >"$WORK/one.log"
    echo "$(grep -c 'statement:\|execute <unnamed>' "$WORK/one.log") $(grep -c 'connection authorized' "$WORK/one.log")"
}
read -r direct_statements direct_connections < <(count_one "$direct")

# Median wall time in ms of RUNS runs of each command, taking turns.
: >"$WORK/times"
for _ in $(seq "$RUNS"); do
    for which in plain direct pooled; do
        case $which in
        plain) args=(-- true) ;;
        direct) args=(--lock "$direct" -- true) ;;
        pooled) args=(--lock "$pooled" -- true) ;;
        esac
        start=$(date +%s%N)
        "$R" "${args[@]}"
        echo "$which $((($(date +%s%N) - start) / 1000))" >>"$WORK/times"
    done
done
median() { awk -v w="$1" '$1 == w { print $2 }' "$WORK/times" | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1000 }'; }
plain=$(median plain)
d=$(median direct)
p=$(median pooled)

echo "### PostgreSQL lease cost (bench/lease.sh)"
echo
machine
echo "- Runs: $RUNS of each, taking turns; PostgreSQL $("$BIN/postgres" --version | awk '{ print $3 }'), $(pgbouncer --version | head -1)"
echo
echo "| run | median | added by the lease | statements | connections |"
echo "|---|---|---|---|---|"
echo "| \`retry -- true\` | $plain ms | | 0 | 0 |"
echo "| \`retry --lock postgres://…#bench -- true\`, direct | $d ms | $(awk -v a="$d" -v b="$plain" 'BEGIN { printf "%.2f", a - b }') ms | $direct_statements | $direct_connections |"
echo "| the same through PgBouncer (transaction mode) | $p ms | $(awk -v a="$p" -v b="$plain" 'BEGIN { printf "%.2f", a - b }') ms | $direct_statements | $direct_connections |"
