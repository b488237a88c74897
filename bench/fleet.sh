#!/usr/bin/env bash
# A fleet larger than the server's connection limit. Against one PostgreSQL with
# max_connections = 100 (its default), directly and through PgBouncer (transaction mode,
# default_pool_size 2, max_client_conn 200), as the role `fleet` (no superuser):
#   - holders: N `retry --lock postgres://fleet@…#fleet-PID --lease-ttl TTL -- sleep S`
#     released together at a FIFO gate (each its own lease, renewed every TTL/3);
#   - a queue: QUEUE `retry --lock postgres://fleet@…#queue --lock-wait 1h -a 1` released
#     together, whose command fails (99) if another holder is inside, and appends its
#     fencing token: all must run, one at a time, with growing tokens.
# For each: how the runs exited; the peak of the server's client sessions (other than
# the sampler's: pg_stat_activity every 20 ms) and, through the pooler, of its clients
# (SHOW POOLS, cl_active + cl_waiting); the statements the server ran and the
# connections retry made (the server's log, the pooler's log), a second; wall time; the
# CPU time the clients (retry, sh and sleep, from bash's `times`), the server (the
# postmaster and its backends) and PgBouncer used; the machine's CPU busy (of all its
# cores, /proc/stat, other builds included) and the most memory the retry processes
# held at once (sampled every second). The sampler's own statements and
# sessions (as postgres) are not counted. Prints a Markdown table and writes it into
# BENCHMARKS.md (NO_DOCS=1: prints it only).
#
# Usage: bench/fleet.sh                 (builds the static release first, as the README's install does)
#        RETRY_BIN=path bench/fleet.sh  (measures that binary as it is)
# Knobs: HOLDERS ("100:6s:8 300:6s:8 1000:15s:20", rows of N:TTL:SECONDS),
#        QUEUE (1000; 0 skips the queue), VIA ("direct pooled").
# Needs PostgreSQL and pgbouncer (Debian packages), run as root.
set -euo pipefail
source "$(dirname "$0")/common.sh"

HOLDERS=${HOLDERS-100:6s:8 300:6s:8 1000:15s:20}
QUEUE=${QUEUE:-1000}
VIA=${VIA:-direct pooled}
ulimit -n 65536 2>/dev/null || true
start_postgres -c log_statement=all -c log_connections=on

declare -A PORT_OF=([direct]=$PG_PORT [pooled]=$BOUNCER_PORT)
url_of() { echo "postgres://fleet@127.0.0.1:${PORT_OF[$1]}/postgres?sslmode=disable"; }
# The tables exist from the first run on, as on any server that has seen retry before.
"$R" --lock "$(url_of direct)#warm-up" -- true

# holder URL TTL SECONDS: one holder of its own lease.
holder() { "$R" -q --lock "$1#fleet-$BASHPID" --lease-ttl "$2" -- sleep "$3" 2>>"$WORK/runs.err"; }

# queued URL: one run queued on the lock `queue`.
queued() {
    "$R" -q --lock "$1#queue" --lock-wait 1h -a 1 -- sh -c \
        'mkdir "$0/in" || exit 99; echo "$RETRY_FENCING_TOKEN" >>"$0/tokens"; rmdir "$0/in"' "$WORK" 2>>"$WORK/runs.err"
}

# sample_start VIA / sample_stop: the peaks of the server's client sessions and of the
# pooler's clients, sampled every 20 ms in the background; sample_stop sets PEAK_SERVER
# and PEAK_POOLER.
sample_start() {
    printf '%s\n' "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" '\watch 0.02' |
        "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -X -At >"$WORK/sessions" 2>/dev/null &
    SESSIONS_PID=$!
    POOLS_PID=
    if [[ $1 == pooled ]]; then
        printf '%s\n' 'SHOW POOLS;' '\watch 0.02' |
            "$PG_BIN/psql" -h 127.0.0.1 -p "$BOUNCER_PORT" -U postgres -d pgbouncer -X -At >"$WORK/pools" 2>/dev/null &
        POOLS_PID=$!
    fi
    (
        peak=0
        while [[ ! -e $WORK/stop-memory ]]; do
            now=$(retry_memory)
            ((now > peak)) && peak=$now
            echo "$peak" >"$WORK/memory"
            sleep 1
        done
    ) &
    MEMORY_PID=$!
}
# retry_memory: the memory of every process of the binary measured, in kB: the pages
# each has resident and does not share, and the shared ones (the binary's) once. From
# /proc/PID/statm, whose counters cost nothing to read (smaps_rollup walks the page
# tables of every process and, read every second for 1,000 of them, starved the runs).
COMM=$(basename "$R" | cut -c1-15)
PAGE_KB=$(($(getconf PAGESIZE) / 1024))
retry_memory() {
    local files
    files=$(grep -lxF "$COMM" /proc/[0-9]*/comm 2>/dev/null | sed 's/comm$/statm/' || true)
    [[ -n $files ]] || { echo 0; return; }
    # shellcheck disable=SC2086 # one file name a word
    awk -v page="$PAGE_KB" '{ own += $2 - $3; if ($3 > shared) shared = $3 }
        END { print (own + shared) * page }' $files 2>/dev/null || echo 0
}

sample_stop() {
    kill "$SESSIONS_PID" ${POOLS_PID:+"$POOLS_PID"}
    wait "$SESSIONS_PID" ${POOLS_PID:+"$POOLS_PID"} 2>/dev/null || true
    touch "$WORK/stop-memory"
    wait "$MEMORY_PID" || true
    rm -f "$WORK/stop-memory"
    PEAK_SERVER=$(sort -n "$WORK/sessions" | tail -1)
    PEAK_POOLER=–
    if [[ -n $POOLS_PID ]]; then
        PEAK_POOLER=$(awk -F'|' '$1 == "postgres" { n = $3 + $4; if (n > m) m = n } END { print m + 0 }' "$WORK/pools")
    fi
}

# snapshot: the statements of the role fleet the server logged (log_statement = all),
# the connections it logged for the role and those the pooler logged, CPU ticks of the
# server and the pooler, the clients' CPU seconds and the machine's CPU ticks. Called in
# the script's own shell (never in a subshell: `times` counts the children it waited for).
snapshot() {
    local postmaster
    postmaster=$(head -1 "$PG_DIR/data/postmaster.pid")
    times >"$WORK/times"
    awk '/(statement|execute <unnamed>): / && !/pg_stat_activity/ { s++ }
         /connection authorized: user=fleet/ { c++ } END { printf "%d %d ", s, c }' "$PG_DIR/log"
    echo -n "$(grep -c 'login attempt: db=postgres user=fleet' "$PG_DIR/pgbouncer.log" || true) "
    awk '{ printf "%d ", $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"
    awk '{ printf "%d ", $14 + $15 }' "/proc/$BOUNCER_PID/stat"
    awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.2f ", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$WORK/times"
    awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6 }' /proc/stat
}

# measure VIA LABEL N FN ARGS...: N copies of FN ARGS released together; prints a row.
measure() {
    local via=$1 label=$2 n=$3 before after statuses took said
    shift 3
    touch "$WORK/runs.err"
    said=$(wc -l <"$WORK/runs.err")
    snapshot >"$WORK/snapshot"
    read -ra before <"$WORK/snapshot"
    sample_start "$via"
    gate_clients "$n" "$@"
    : >"$WORK/statuses"
    for pid in "${PIDS[@]}"; do
        status=0
        wait "$pid" || status=$?
        echo "$status" >>"$WORK/statuses"
    done
    took=$(awk -v a="$RELEASED" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    sample_stop
    snapshot >"$WORK/snapshot"
    read -ra after <"$WORK/snapshot"
    statuses=$(sort -n "$WORK/statuses" | uniq -c | awk '{ printf "%s%d × exit %d", (NR > 1 ? ", " : ""), $1, $2 }')
    awk -v via="$via" -v label="$label" -v n="$n" -v took="$took" -v statuses="$statuses" \
        -v peak_server="$PEAK_SERVER" -v peak_pooler="$PEAK_POOLER" \
        -v pss="$(cat "$WORK/memory")" -v hz="$(getconf CLK_TCK)" -v cores="$(nproc)" \
        -v b="${before[*]}" -v a="${after[*]}" 'BEGIN {
        split(b, x, " "); split(a, y, " ")
        statements = y[1] - x[1]
        sessions = (via == "pooled") ? y[3] - x[3] : y[2] - x[2]
        busy = (y[7] - x[7]) / (y[8] - x[8]) * 100
        printf "| %s | %s | %d | %s | %s s | %s | %s | %.0f | %.0f | %.1f | %.1f s | %.1f s | %.1f s | %.0f%% of %d cores | %.0f MB |\n",
            label, via, n, statuses, took, peak_server, peak_pooler, statements / took, sessions / took, statements / n,
            y[6] - x[6], (y[4] - x[4]) / hz, (y[5] - x[5]) / hz, busy, cores, pss / 1024
    }'
    # The holders that warned that their renewals waited half their time, and those
    # that lost their lease, when there were any.
    tail -n +$((said + 1)) "$WORK/runs.err" | awk '/warning: a renewal of the lease/ { w++ } /was lost/ { l++ }
        END { if (w + l > 0) printf "| | | | %d warned that a renewal waited half its time, %d lost the lease | | | | | | | | | | | |\n", w, l }'
}

{
    machine
    echo "- retry: $("$R" --version | head -1); PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }') (max_connections 100); $(pgbouncer --version | head -1) (transaction mode, default_pool_size 2, max_client_conn 200)"
    echo "- Load average before: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared with other builds: the CPU busy column counts them too)"
    echo
    echo "| runs | via | N | how they exited | release to last exit | peak server sessions | peak pooler clients | statements/s | connections/s | statements per run | CPU: clients | CPU: server | CPU: PgBouncer | machine CPU busy | retry's memory at peak |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for row in $HOLDERS; do
        IFS=: read -r n ttl secs <<<"$row"
        for via in $VIA; do
            measure "$via" "holders, \`--lease-ttl $ttl -- sleep $secs\`" "$n" holder "$(url_of "$via")" "$ttl" "$secs"
        done
    done
    if ((QUEUE > 0)); then
        for via in $VIA; do
            rm -f "$WORK/tokens"
            measure "$via" "queued on one lock, \`--lock-wait 1h\`" "$QUEUE" queued "$(url_of "$via")"
            if sort -n -c "$WORK/tokens" 2>/dev/null && (($(sort -u "$WORK/tokens" | wc -l) == QUEUE)); then
                echo "| | | | $QUEUE tokens, each greater than the one before (one holder at a time) | | | | | | | | | | | |"
            else
                echo "| | | | TOKENS OUT OF ORDER OR MISSING: $(wc -l <"$WORK/tokens") of $QUEUE | | | | | | | | | | | |"
            fi
        done
    fi
    echo
    echo "- Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    if [[ -s $WORK/runs.err ]]; then
        echo "- What the runs said (first lines):"
        sort "$WORK/runs.err" | uniq -c | sort -rn | sed 's/^/    /' | awk 'NR <= 5'
    fi
} | tee "$WORK/fleet.md"
[[ ${NO_DOCS:-} == 1 ]] || "$ROOT/bench/update-docs.py" fleet "$WORK/fleet.md" "$ROOT/BENCHMARKS.md"
