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
NGINX=/usr/sbin/nginx

if [[ ! -x $NGINX ]] || ! command -v python3 >/dev/null || ! command -v curl >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx python3 curl
fi

# The nginx workers (user nobody when started by root) read the page from here.
chmod 755 "$WORK"
mkdir -p "$WORK/www/x" "$WORK/tmp"
echo ok >"$WORK/www/x/index.html"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# write_config PORT: limit_req at 5 r/s for /x/, every 429 carrying Retry-After: 2.
write_config() {
    cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/error.log warn;
events { worker_connections 1024; }
http {
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    log_format herd '\$msec \$status';
    access_log off;
    limit_req_zone \$binary_remote_addr zone=herd:1m rate=5r/s;
    server {
        listen 127.0.0.1:$1;
        root $WORK/www;
        location /x/ {
            access_log $WORK/access.log herd;
            limit_req zone=herd;
            limit_req_status 429;
            add_header Retry-After 2 always;
        }
    }
}
EOF
}

NGINX_PID=
start_nginx() {
    local port=$1
    rm -f "$WORK/access.log"
    write_config "$port"
    "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -g 'daemon off;' 2>>"$WORK/error.log" &
    NGINX_PID=$!
    for _ in $(seq 50); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return
        sleep 0.1
    done
    echo "nginx did not start:" >&2
    cat "$WORK/error.log" >&2
    exit 1
}

stop_nginx() {
    kill -QUIT "$NGINX_PID"
    wait "$NGINX_PID" || true
    NGINX_PID=
}
trap '[[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; cleanup' EXIT

client() {
    local url=$1
    echo >>"$WORK/ready"
    : <"$WORK/gate" # blocks until the gate's writer closes it
    # shellcheck disable=SC2086 # RETRY_ARGS is a list of words
    "$R" -q $RETRY_ARGS "$url" >/dev/null 2>>"$WORK/clients.err"
}

# one_run N: CLIENTS clients started together; appends a row to $ROWS.
one_run() {
    local port url ok=0 pids=()
    port=$(free_port)
    url="http://127.0.0.1:$port/x/"
    start_nginx "$port" # its probe asks for /, outside the limiter
    rm -f "$WORK/gate" "$WORK/ready"
    mkfifo "$WORK/gate"
    exec 3<>"$WORK/gate" # a writer, so every client's open succeeds and its read waits
    for _ in $(seq "$CLIENTS"); do
        client "$url" &
        pids+=($!)
    done
    while (($(wc -l <"$WORK/ready" 2>/dev/null || echo 0) < CLIENTS)); do sleep 0.05; done
    sleep 0.3 # the last ones reach their read
    exec 3>&- # end of file for every client at once: they start together
    for pid in "${pids[@]}"; do
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
