#!/usr/bin/env bash
# Thundering herd: CLIENTS concurrent retry processes against a loopback server
# (examples/herd_server.rs, multi-threaded, so that the server is never what caps a
# peak; its capacity here is measured first) that answers 503 for its first OUTAGE
# seconds, then 200; once per jitter mode. The server holds the clients' first requests
# until all CLIENTS have arrived and fails them together, as a real herd fails. The server reports the total requests and
# the peak number in any 100 ms window after recovery. Prints a table and writes it
# into BENCHMARKS.md.
#
# Usage: bench/herd.sh                 (builds target/HOST/release/retry first, as the README's install does)
#        RETRY_BIN=path bench/herd.sh  (measures that binary as it is)
# All clients wait at a FIFO gate and start together, as clients that failed
# together would; the outage clock starts at the server's first request.
# Knobs: CLIENTS (200), OUTAGE (2), RETRY_ARGS ("-a 8 --delay 500ms --max-delay 4s"),
#        VIA=http|curl (default: http when the build has HTTP mode, else curl -fsS).
set -euo pipefail
source "$(dirname "$0")/common.sh"

CLIENTS=${CLIENTS:-200}
OUTAGE=${OUTAGE:-2}
RETRY_ARGS=${RETRY_ARGS:--a 8 --delay 500ms --max-delay 4s}

command -v curl >/dev/null && command -v python3 >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl python3
}

ulimit -n 4096 2>/dev/null || true

CAPACITY=$(herd_capacity)
echo "herd server capacity: $CAPACITY requests/s" >&2
if [[ -z ${VIA:-} ]]; then
    start_herd_server 0 "$WORK/probe.json"
    if "$R" -q -a 1 "$URL/" >/dev/null 2>&1; then VIA=http; else VIA=curl; fi
    stop_server
fi
echo "clients reach the server via: $VIA" >&2

client() {
    local jitter=$1
    # shellcheck disable=SC2086 # RETRY_ARGS is a list of words
    if [[ $VIA == http ]]; then
        "$R" -q $RETRY_ARGS -j "$jitter" "$URL/" >/dev/null 2>>"$WORK/clients.err"
    else
        "$R" -q $RETRY_ARGS -j "$jitter" -- curl -fsS -o /dev/null "$URL/" 2>>"$WORK/clients.err"
    fi
}

ROWS=$WORK/rows.tsv
: >"$ROWS"
for jitter in full equal decorrelated none; do
    start_herd_server "$OUTAGE" "$WORK/$jitter.json" "$CLIENTS"
    gate_clients "$CLIENTS" client "$jitter"
    pids=("${PIDS[@]}")
    ok=0
    for pid in "${pids[@]}"; do
        if wait "$pid"; then ok=$((ok + 1)); fi
    done
    stop_server
    python3 - "$WORK/$jitter.json" "$jitter" "$ok" >>"$ROWS" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print("\t".join(str(v) for v in (sys.argv[2], sys.argv[3], s["total"], s["status_503"],
      s["peak_100ms_during_outage"], s["peak_100ms_after_recovery"], s["last_request_s"])))
EOF
    echo "jitter $jitter: $(tail -1 "$ROWS")" >&2
done

{
    echo
    machine
    echo "- retry: $("$R" --version | head -1); clients: $CLIENTS × \`retry $RETRY_ARGS -j MODE\`," \
        "$([[ $VIA == http ]] && echo "HTTP mode" || echo "command mode around \`curl -fsS\`");" \
        "server down for the first ${OUTAGE}s"
    echo "- server: examples/herd_server.rs (hyper, multi-threaded), $CAPACITY requests/s here (32 keep-alive connections, 3 s); the $CLIENTS first requests are held and failed together, and the outage starts then"
    echo
    echo "| jitter | clients succeeded | total requests | 503s | peak / 100 ms during outage | peak / 100 ms after recovery | last request at |"
    echo "|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s / '"$CLIENTS"' | %s | %s | %s | %s | %.2f s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$ROWS"
    awk -F'\t' '$1 == "full" { full = $6 } $1 == "none" { none = $6 }
        END { if (none > 0) printf "\nPeak after recovery, full jitter against none: %d / %d = %.2f× (target ≤ 0.25×)\n", full, none, full / none }' "$ROWS"
} | tee "$WORK/section.md"

"$ROOT/bench/update-docs.py" herd "$WORK/section.md" "$ROOT/BENCHMARKS.md"
