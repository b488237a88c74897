#!/usr/bin/env bash
# Retry storm: CLIENTS `retry` processes against a real nginx on 127.0.0.1 that answers
# 503 while a "down" file exists and 200 after. The clients wait at a FIFO gate and are
# released together; the outage starts at the release and ends OUTAGE seconds later,
# when the script removes the file. Rows, all in one run of the script: no fleet
# options with --jitter none (the reference peak), no fleet options, --retry-budget api,
# --retry-budget api --throttled wait, --retry-budget api --circuit api --throttled wait,
# and --retry-budget api --throttled wait again with --state postgres://… through PgBouncer
# (transaction mode, default_pool_size 2, max_client_conn 200, in front of a PostgreSQL
# with max_connections 100: bench/common.sh's start_postgres); fleet state in a fresh
# --state directory (or emptied tables) per row and run. RUNS repetitions, the rows
# interleaved within each. nginx's access log ($msec $status and the client, named in
# its URL) is the only source of request counts. A row whose flags the build refuses
# (exit 125 from --dry-run) is printed as not supported. Then the targets for
# --retry-budget api --throttled wait (with file and PostgreSQL state), as pass/fail lines. Then what a budget or
# circuit update costs with file state. Writes both tables into BENCHMARKS.md.
#
# Usage: bench/storm.sh                 (builds target/HOST/release/retry first, as the README's install does)
#        RETRY_BIN=path bench/storm.sh  (measures that binary as it is)
# Knobs: CLIENTS (200), OUTAGE (2, seconds), RUNS (3), MAX_TIME (30, seconds),
#        RETRY_ARGS ("-a 8 --delay 500ms --max-delay 4s"; every row adds
#        --max-time MAX_TIME), ROUNDS (2000 updates timed; 0 skips the cost),
#        ROWS (the rows to run, by key: ref none budget budget-wait budget-circuit-wait
#        budget-wait-pg; all by default), NO_DOCS=1 to print the tables without writing
#        BENCHMARKS.md, SECTION (storm: the section of BENCHMARKS.md the table goes to).
set -euo pipefail
source "$(dirname "$0")/common.sh"
export LC_ALL=C # a decimal point in $EPOCHREALTIME, as in nginx's $msec

CLIENTS=${CLIENTS:-200}
OUTAGE=${OUTAGE:-2}
RUNS=${RUNS:-3}
MAX_TIME=${MAX_TIME:-30}
RETRY_ARGS=${RETRY_ARGS:--a 8 --delay 500ms --max-delay 4s}
ROUNDS=${ROUNDS:-2000}

# Descriptors: a connection per client in nginx, with room for its own files.
NGINX_CONNECTIONS=$((CLIENTS * 4 > 4096 ? CLIENTS * 4 : 4096))
if (($(ulimit -n) < 2 * NGINX_CONNECTIONS)); then
    ulimit -n $((2 * NGINX_CONNECTIONS)) || {
        echo "storm.sh: cannot raise the descriptor limit to $((2 * NGINX_CONNECTIONS)) for $CLIENTS clients" >&2
        exit 1
    }
fi
need_nginx

# The rows: a key (bench/storm.py finds the reference and target rows by it), the
# options that make the row and its label in the table.
KEYS=(ref none budget budget-wait budget-circuit-wait budget-wait-pg)
declare -A FLAGS=(
    [ref]="--jitter none"
    [none]=""
    [budget]="--retry-budget api"
    [budget-wait]="--retry-budget api --throttled wait"
    [budget-circuit-wait]="--retry-budget api --circuit api --throttled wait"
    [budget-wait-pg]="--retry-budget api --throttled wait"
)
declare -A LABELS=(
    [ref]="none, \`--jitter none\`"
    [none]="none (full jitter, the default)"
    [budget-wait-pg]="\`--retry-budget api --throttled wait\`, \`--state postgres://…\` through PgBouncer"
)
read -ra ROWS <<<"${ROWS:-${KEYS[*]}}"
# A row keyed *-pg keeps its state in PostgreSQL, reached through PgBouncer.
PG_STATE=
for key in "${ROWS[@]}"; do
    if [[ $key == *-pg ]]; then
        start_postgres
        PG_STATE="postgres://fleet@127.0.0.1:$BOUNCER_PORT/postgres?sslmode=disable"
        break
    fi
done
# state_of KEY DIR: the --state of a row's run: DIR, or PostgreSQL with its tables emptied.
state_of() {
    if [[ $1 == *-pg ]]; then
        psql_as postgres -q -c "DO \$\$ BEGIN IF to_regclass('retry_budgets') IS NOT NULL THEN DELETE FROM retry_budgets; DELETE FROM retry_circuits; END IF; END \$\$"
        echo "$PG_STATE"
    else
        echo "$2"
    fi
}
label() { echo "${LABELS[$1]:-\`${FLAGS[$1]}\`}"; }

# start_storm_nginx PORT: /x/ answers 503 while $WORK/down exists, 200 after; its log
# line is `$msec $status CLIENT` (the client's ?c=).
start_storm_nginx() {
    # shellcheck disable=SC2016 # nginx variables, for nginx to expand
    start_nginx "$1" 'log_format storm '"'"'$msec $status $arg_c'"'"';' "
        location /x/ {
            access_log $WORK/access.log storm;
            if (-f $WORK/down) { return 503; }
            return 200 'ok\n';
        }"
}

# sleep_until T: sleeps until T (microseconds since the epoch) with bash's own read -t
# on a FIFO that never has data (opened read-write, so the open does not wait): a
# `sleep` process started just after the release waits for the CPU behind the released
# clients, and ended the outage up to 0.7 s late.
OUTAGE_US=$(printf '%.0f' "${OUTAGE}e6")
mkfifo "$WORK/timer"
sleep_until() {
    local left=$(($1 - ${EPOCHREALTIME/./})) micros
    ((left > 0)) || return 0
    printf -v micros '%06d' $((left % 1000000)) # printf -v: a $(…) would fork
    read -r -t "$((left / 1000000)).$micros" _ <>"$WORK/timer" || true
}

# client DIR ARGS...: one client, called at the gate's release; appends its exit
# status, when it left the gate, when its retry exited (not when some pipe closed) and
# its name in nginx's log (?c=, its shell's pid), by which its first request is found.
client() {
    local dir=$1 start status=0
    shift
    start=$EPOCHREALTIME
    # shellcheck disable=SC2086 # RETRY_ARGS is a list of words
    "$R" -q $RETRY_ARGS --max-time "${MAX_TIME}s" "$@" "$URL?c=$BASHPID" >/dev/null 2>>"$dir/clients.err" || status=$?
    echo "$status $start $EPOCHREALTIME $BASHPID" >>"$dir/ends"
}

# one_run KEY RUN: the row's clients against a fresh nginx and a fresh --state;
# appends the run's figures to $LINES.
one_run() {
    local key=$1 run=$2 dir=$WORK/$1-$2 port recovered
    local flags=(--state "$(state_of "$key" "$dir/state")")
    # shellcheck disable=SC2206 # FLAGS holds lists of words
    flags+=(${FLAGS[$key]})
    mkdir -p "$dir/state"
    port=$(free_port)
    URL="http://127.0.0.1:$port/x/"
    rm -f "$WORK/access.log"
    touch "$WORK/down"
    start_storm_nginx "$port"
    gate_clients "$CLIENTS" client "$dir" "${flags[@]}"
    sleep_until $((${RELEASED/./} + OUTAGE_US))
    rm "$WORK/down"
    recovered=$EPOCHREALTIME
    for pid in "${PIDS[@]}"; do wait "$pid" || true; done
    stop_nginx
    mv "$WORK/access.log" "$dir/access.log"
    echo "$RELEASED $recovered" >"$dir/times"
    "$ROOT/bench/storm.py" run "$key" "$(label "$key")" "$run" "$dir" "$CLIENTS" "$MAX_TIME" >>"$LINES"
    echo "run $run, $(label "$key"): $(tail -1 "$LINES")" >&2
}

LINES=$WORK/runs.jsonl
: >"$LINES"
# Which rows this build can run: --dry-run refuses unknown or invalid flags with 125.
SUPPORTED=()
for key in "${ROWS[@]}"; do
    status=0
    # shellcheck disable=SC2086 # RETRY_ARGS and FLAGS hold lists of words
    "$R" --dry-run $RETRY_ARGS --max-time "${MAX_TIME}s" --state "$(state_of "$key" "$WORK/probe-state")" ${FLAGS[$key]} \
        http://127.0.0.1:9/x/ >/dev/null 2>"$WORK/probe.err" || status=$?
    case $status in
    0) SUPPORTED+=("$key") ;;
    125)
        python3 -c 'import json, sys; print(json.dumps({"key": sys.argv[1], "label": sys.argv[2], "refused": sys.argv[3]}))' \
            "$key" "$(label "$key")" "$(head -1 "$WORK/probe.err")" >>"$LINES"
        echo "${FLAGS[$key]}: not supported by this build: $(head -1 "$WORK/probe.err")" >&2
        ;;
    *)
        echo "storm.sh: retry --dry-run ${FLAGS[$key]} exited $status:" >&2
        cat "$WORK/probe.err" >&2
        exit 1
        ;;
    esac
done
for run in $(seq "$RUNS"); do
    for key in "${SUPPORTED[@]}"; do one_run "$key" "$run"; done
done

{
    echo
    machine
    echo "- retry: $("$R" --version | head -1); $($NGINX -v 2>&1 | sed 's/^nginx version: //') (worker_connections $NGINX_CONNECTIONS, its error log checked after every run)"
    echo "- $CLIENTS × \`retry -q $RETRY_ARGS --max-time ${MAX_TIME}s --state DIR [fleet options] http://127.0.0.1:PORT/x/\`" \
        "released together at a FIFO gate; nginx answers 503 from the release until the script" \
        "removes a file ${OUTAGE} s later, then 200; a fresh \`--state\` directory per row and run" \
        "(budget: size 10, ratio 0.1; circuit: 5 failed runs, cooldown 60 s: the defaults)"
    if [[ -n $PG_STATE ]]; then
        echo "- PostgreSQL state: PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }') (max_connections 100)" \
            "behind $(pgbouncer --version | head -1) (transaction mode, default_pool_size 2, max_client_conn 200)," \
            "as a role that is no superuser; its tables emptied before each run"
    fi
    echo "- Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared with other builds)"
    echo "- $RUNS run$( ((RUNS == 1)) || echo s), the rows in turn within each; median in bold. From nginx's access log" \
        "(\`\$msec \$status \$arg_c\`): 503s ÷ clients, and the most requests in any 100 ms (a sliding" \
        "window starting at each request) among those answered after recovery (every non-503);" \
        "the last client's first request after the release (each client's URL names it)." \
        "Release to last client done: until the last \`retry\` process exited, as its parent saw it."
    echo
    "$ROOT/bench/storm.py" table "$LINES" "$CLIENTS" "$MAX_TIME" "${KEYS[@]}"
} | tee "$WORK/storm.md"
[[ ${NO_DOCS:-} == 1 ]] || "$ROOT/bench/update-docs.py" "${SECTION:-storm}" "$WORK/storm.md" "$ROOT/BENCHMARKS.md" "$ROOT/docs/fleets.md"

((ROUNDS > 0)) || exit 0
# Cost: ROUNDS updates of each kind against a state directory under $WORK, timed one
# by one (the ignored unit test fleet::file::tests::update_cost, in a debug build: an
# upper bound, the time is the file system's).
mkdir -p "$WORK/cost"
COST=$(COST_DIR=$WORK/cost ROUNDS=$ROUNDS cargo test --locked --lib fleet::file::tests::update_cost -- --ignored --nocapture 2>"$WORK/cost.err" | grep '^cost' || true)
if [[ -z $COST ]]; then
    echo "storm.sh: fleet::file::tests::update_cost printed no figures:" >&2
    tail -20 "$WORK/cost.err" >&2
    exit 1
fi
{
    echo
    machine
    echo "- $ROUNDS updates of each kind, timed one by one (debug build); state directory on $(df -T "$WORK" | awk 'NR == 2 { print $2 }')"
    echo
    echo "| update (file state) | mean | p99 |"
    echo "|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s µs | %s µs |\n", $2, $3, $4 }' <<<"$COST"
} | tee "$WORK/cost.md"
[[ ${NO_DOCS:-} == 1 ]] || "$ROOT/bench/update-docs.py" fleet-cost "$WORK/cost.md" "$ROOT/BENCHMARKS.md"
