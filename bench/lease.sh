#!/usr/bin/env bash
# What a PostgreSQL lease costs: `retry --lock postgres://…#NAME -- true` against a
# throwaway server on loopback, directly and through PgBouncer in transaction mode,
# next to `retry -- true`. Reports the median wall time of each (RUNS runs, taking
# turns), the time the lease adds, and the statements and connections one run makes
# (from the server's log: log_statement = all, log_connections). Prints a Markdown table
# and writes it into BENCHMARKS.md (NO_DOCS=1: prints it only).
#
# Usage: bench/lease.sh                 (builds the static release first, as the README's install does)
#        RETRY_BIN=path bench/lease.sh  (measures that binary as it is)
# Knobs: RUNS (200), BEFORE_BIN=path (an earlier build, measured in turn with this one).
# Needs PostgreSQL and pgbouncer (Debian packages), run as root.
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUNS=${RUNS:-200}
start_postgres -c log_statement=all -c log_connections=on
BIN=$PG_BIN
PGDIR=$PG_DIR
PORT=$PG_PORT

direct="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable#bench"
pooled="postgres://postgres@127.0.0.1:$BOUNCER_PORT/postgres?sslmode=disable#bench"
# The binaries compared: this build, and BEFORE_BIN when given.
BINARIES=(now)
declare -A BINARY=([now]=$R)
if [[ -n ${BEFORE_BIN:-} ]]; then
    BINARIES+=(before)
    BINARY[before]=$(realpath "$BEFORE_BIN")
fi
# The tables exist from the first run on, as on any server that has seen retry before.
"$R" --lock "$direct" -- true

# count_one BIN URL: one run's statements and connections, counted in the server's log.
count_one() {
    local before
    before=$(wc -l <"$PGDIR/log")
    "$1" --lock "$2" -- true
    tail -n +"$((before + 1))" "$PGDIR/log" >"$WORK/one.log"
    echo "$(grep -c 'statement:\|execute <unnamed>' "$WORK/one.log") $(grep -c 'connection authorized' "$WORK/one.log")"
}
declare -A COUNTS
for b in "${BINARIES[@]}"; do COUNTS[$b]=$(count_one "${BINARY[$b]}" "$direct"); done

# Median wall time in ms of RUNS runs of each command, taking turns.
: >"$WORK/times"
for _ in $(seq "$RUNS"); do
    for b in "${BINARIES[@]}"; do
        for which in plain direct pooled; do
            case $which in
            plain) args=(-- true) ;;
            direct) args=(--lock "$direct" -- true) ;;
            pooled) args=(--lock "$pooled" -- true) ;;
            esac
            start=$(date +%s%N)
            "${BINARY[$b]}" "${args[@]}"
            echo "$b-$which $((($(date +%s%N) - start) / 1000))" >>"$WORK/times"
        done
    done
done
median() { awk -v w="$1" '$1 == w { print $2 }' "$WORK/times" | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1000 }'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

{
    machine
    echo "- Runs: $RUNS of each, taking turns; PostgreSQL $("$BIN/postgres" --version | awk '{ print $3 }'), $(pgbouncer --version | head -1)"
    echo "- Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared with other builds)"
    echo
    echo "| binary | run | median | added by the lease | statements | connections |"
    echo "|---|---|---|---|---|---|"
    for b in "${BINARIES[@]}"; do
        plain=$(median "$b-plain")
        d=$(median "$b-direct")
        p=$(median "$b-pooled")
        read -r statements connections <<<"${COUNTS[$b]}"
        echo "| $b | \`retry -- true\` | $plain ms | | 0 | 0 |"
        echo "| $b | \`retry --lock postgres://…#bench -- true\`, direct | $d ms | $(minus "$d" "$plain") ms | $statements | $connections |"
        echo "| $b | the same through PgBouncer (transaction mode) | $p ms | $(minus "$p" "$plain") ms | $statements | $connections |"
    done
} | tee "$WORK/lease.md"
[[ ${NO_DOCS:-} == 1 ]] || "$ROOT/bench/update-docs.py" lease "$WORK/lease.md" "$ROOT/BENCHMARKS.md"
