#!/usr/bin/env bash
# Retry storm: CLIENTS concurrent `retry -a 5` against a loopback server that is down
# (503) for OUTAGE seconds after its first request, then up; once without fleet state,
# once sharing a --retry-budget (file state), once sharing a --circuit, once with both.
# Reports the requests that reached the server during the outage and the amplification
# (those ÷ clients), and how the clients ended. Then measures what a budget or circuit
# update costs with file state. Writes both tables into BENCHMARKS.md.
#
# Usage: bench/storm.sh                 (builds target/HOST/release/retry first, as the README's install does)
#        RETRY_BIN=path bench/storm.sh  (measures that binary as it is)
# Knobs: CLIENTS (200), OUTAGE (10), RETRY_ARGS ("-a 5"), ROUNDS (2000 updates timed).
set -euo pipefail
source "$(dirname "$0")/common.sh"

CLIENTS=${CLIENTS:-200}
OUTAGE=${OUTAGE:-10}
RETRY_ARGS=${RETRY_ARGS:--a 5}
ulimit -n 8192 2>/dev/null || true

client() {
    local row=$1
    shift
    local status=0
    # shellcheck disable=SC2086 # RETRY_ARGS is a list of words
    "$R" -q $RETRY_ARGS "$@" "$URL/" >/dev/null 2>>"$WORK/clients.err" || status=$?
    echo "$status" >>"$WORK/$row.status"
}

ROWS=$WORK/rows.tsv
: >"$ROWS"
for row in none budget circuit budget+circuit; do
    state=$WORK/state-$row
    fleet=()
    [[ $row == none ]] || fleet+=(--state "$state")
    [[ $row == *budget* ]] && fleet+=(--retry-budget storm)
    [[ $row == *circuit* ]] && fleet+=(--circuit storm --circuit-cooldown 30s)
    : >"$WORK/$row.status"
    start_herd_server "$OUTAGE" "$WORK/$row.json"
    gate_clients "$CLIENTS" client "$row" "${fleet[@]}"
    for pid in "${PIDS[@]}"; do wait "$pid" || true; done
    stop_server
    python3 - "$WORK/$row.json" "$WORK/$row.status" "$row" "$CLIENTS" >>"$ROWS" <<'PY'
import collections, json, sys
s = json.load(open(sys.argv[1]))
codes = collections.Counter(l.strip() for l in open(sys.argv[2]) if l.strip())
clients = int(sys.argv[4])
ends = ", ".join(f"{n} × exit {c}" for c, n in sorted(codes.items(), key=lambda kv: -kv[1]))
print("\t".join(str(v) for v in (sys.argv[3], s["status_503"], f"{s['status_503'] / clients:.2f}",
      s["status_200"], s["total"], codes.get("0", 0), ends)))
PY
    echo "$row: $(tail -1 "$ROWS")" >&2
done

{
    echo
    machine
    echo "- retry: $("$R" --version | head -1); clients: $CLIENTS × \`retry $RETRY_ARGS URL\` (HTTP mode, defaults: 1s base delay, full jitter), all starting together;" \
        "server: examples/herd_server.rs, 503 for the first ${OUTAGE}s; budget: size 10, ratio 0.1, file state; circuit: 5 failed runs, cooldown 30s"
    echo
    echo "| fleet state | requests during the outage | amplification | requests after recovery | total | clients succeeded | how the clients ended |"
    echo "|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s / '"$CLIENTS"' | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$ROWS"
} | tee "$WORK/storm.md"
"$ROOT/bench/update-docs.py" storm "$WORK/storm.md" "$ROOT/BENCHMARKS.md" "$ROOT/README.md"

# Cost: ROUNDS updates of each kind against a state directory under $WORK, timed one
# by one (the ignored unit test fleet::file::tests::update_cost, in a debug build: an
# upper bound, the time is the file system's).
mkdir -p "$WORK/cost"
COST=$(COST_DIR=$WORK/cost ROUNDS=${ROUNDS:-2000} cargo test --locked --lib fleet::file::tests::update_cost -- --ignored --nocapture 2>/dev/null | grep '^cost' || true)
{
    echo
    machine
    echo "- ${ROUNDS:-2000} updates of each kind, timed one by one (debug build); state directory on $(df -T "$WORK" | awk 'NR == 2 { print $2 }')"
    echo
    echo "| update (file state) | mean | p99 |"
    echo "|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s µs | %s µs |\n", $2, $3, $4 }' <<<"$COST"
} | tee "$WORK/cost.md"
"$ROOT/bench/update-docs.py" fleet-cost "$WORK/cost.md" "$ROOT/BENCHMARKS.md" "$ROOT/README.md"
