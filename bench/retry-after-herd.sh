#!/usr/bin/env bash
# Retry-After herd: CLIENTS concurrent `retry URL` processes, default settings, against
# a real nginx on 127.0.0.1 whose limit_req admits 5 requests a second (one per 200 ms,
# no burst) and answers the rest 429 with `Retry-After: 2`. RUNS rounds; each records
# how many clients succeeded within the default 5 attempts, the total requests and the
# largest number of requests in a 100 ms bucket (from nginx's access log, $msec), for
# the first wave and for the retries (every request from 1 s after the first on: no
# retry comes back sooner than the 2 s asked).
# Prints a table and writes it into BENCHMARKS.md.
#
# Usage: bench/retry-after-herd.sh                 (builds target/HOST/release/retry first, as the README's install does)
#        RETRY_BIN=path bench/retry-after-herd.sh  (measures that binary as it is)
# Knobs: CLIENTS (20), RUNS (5), RETRY_ARGS (none: the defaults are what is measured),
#        NO_DOCS=1 to print the table without writing BENCHMARKS.md, SUMMARY=FILE for a
#        one-line summary (bench/run.sh's retry_after_herd section reads it).
set -euo pipefail
source "$(dirname "$0")/common.sh"

CLIENTS=${CLIENTS:-20}
RUNS=${RUNS:-5}
RETRY_ARGS=${RETRY_ARGS:-}
need_nginx
# The nginx workers read the page from here.
mkdir -p "$WORK/www/x"
echo ok >"$WORK/www/x/index.html"

# start_limited_nginx PORT: limit_req at 5 r/s for /x/, every 429 carrying Retry-After: 2
# (a refusal is what is measured, so nginx logs it below its error log's level).
start_limited_nginx() {
    # shellcheck disable=SC2016 # an nginx variable, for nginx to expand
    start_nginx "$1" 'limit_req_zone $binary_remote_addr zone=herd:1m rate=5r/s;' "
        root $WORK/www;
        location /x/ {
            access_log $WORK/access.log bench;
            limit_req zone=herd;
            limit_req_status 429;
            limit_req_log_level info;
            add_header Retry-After 2 always;
        }"
}

client() {
    local url=$1
    # shellcheck disable=SC2086 # RETRY_ARGS is a list of words
    "$R" -q $RETRY_ARGS "$url" >/dev/null 2>>"$WORK/clients.err"
}

# one_run N: CLIENTS clients started together; appends a row to $ROWS.
one_run() {
    local port url ok=0
    port=$(free_port)
    url="http://127.0.0.1:$port/x/"
    rm -f "$WORK/access.log"
    start_limited_nginx "$port"
    gate_clients "$CLIENTS" client "$url"
    for pid in "${PIDS[@]}"; do
        if wait "$pid"; then ok=$((ok + 1)); fi
    done
    stop_nginx
    python3 - "$WORK/access.log" "$1" "$ok" >>"$ROWS" <<'EOF'
import collections, sys
hits = [line.split() for line in open(sys.argv[1])]
times = [float(t) for t, _ in hits]
first = min(times)
def peak(ts):
    return max(collections.Counter(int(t * 10) for t in ts).values(), default=0)
print("\t".join(str(v) for v in (
    sys.argv[2], sys.argv[3], len(hits), sum(1 for _, s in hits if s == "429"),
    peak([t for t in times if t < first + 1]), peak([t for t in times if t >= first + 1]),
    f"{max(times) - first:.2f}")))
EOF
    echo "run $1: $(tail -1 "$ROWS")" >&2
}

ROWS=$WORK/rows.tsv
: >"$ROWS"
for n in $(seq "$RUNS"); do one_run "$n"; done
# SUMMARY=FILE: one line for bench/run.sh's table (fewest and most clients through,
# requests per run, the largest retry peak per 100 ms).
if [[ -n ${SUMMARY:-} ]]; then
    awk -F'\t' 'NR == 1 { lo = hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2; req += $3; if ($6 > peak) peak = $6 }
        END { printf "%s\t%s\t%.0f\t%s\n", lo, hi, req / NR, peak }' "$ROWS" >"$SUMMARY"
fi

{
    echo
    machine
    echo "- retry: $("$R" --version | head -1); $($NGINX -v 2>&1 | sed 's/^nginx version: //')"
    echo "- $CLIENTS × \`retry ${RETRY_ARGS:+$RETRY_ARGS }http://127.0.0.1:PORT/x/\` started together" \
        "(default: 5 attempts, full jitter); nginx \`limit_req\` rate=5r/s, no burst, 429 with" \
        "\`Retry-After: 2\`"
    echo
    echo "| run | clients succeeded | total requests | 429s | peak / 100 ms, first wave | peak / 100 ms, retries | first to last request |"
    echo "|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s / '"$CLIENTS"' | %s | %s | %s | %s | %s s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$ROWS"
} | tee "$WORK/section.md"

[[ ${NO_DOCS:-} == 1 ]] ||
    "$ROOT/bench/update-docs.py" retry-after-herd "$WORK/section.md" "$ROOT/BENCHMARKS.md"
