# Shared by bench/run.sh and bench/herd.sh (sourced, not run): the binary under
# test, a scratch directory, the loopback server and the machine description.

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

# R: the binary measured, built as the README's install command builds it (statically
# linked, relative relocations packed); RETRY_BIN=path measures that one as it is.
if [[ -z ${RETRY_BIN:-} ]]; then
    HOST=$(rustc -vV | sed -n 's/^host: //p')
    RUSTFLAGS='-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs' \
        cargo build --release --locked --bin retry --target "$HOST"
    RETRY_BIN=${CARGO_TARGET_DIR:-target}/$HOST/release/retry
fi
R=$(realpath "$RETRY_BIN")

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server [ARGS]: starts bench/serve.py on 127.0.0.1 and sets URL (no trailing slash).
start_server() {
    rm -f "$WORK/port"
    "$ROOT/bench/serve.py" "$@" >"$WORK/port" &
    SERVER_PID=$!
    for _ in $(seq 50); do [[ -s $WORK/port ]] && break; sleep 0.1; done
    URL="http://127.0.0.1:$(head -1 "$WORK/port")"
}

stop_server() {
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
    SERVER_PID=
}

# machine: the date and machine lines every table starts with.
machine() {
    echo "- Date: $(date)"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
    echo "- Memory: $(free -h | awk '/^Mem:/ { print $2 }') total"
    echo "- Kernel: $(uname -r)"
}

# start_herd_server OUTAGE STATS [GATHER]: the multi-threaded Rust server of
# examples/herd_server.rs (503 for OUTAGE seconds, then 200; JSON summary to STATS on
# SIGTERM), so that the server is never what limits the clients. With GATHER, the first
# GATHER requests are answered together and the outage starts then. Sets URL.
HERD_SERVER=$ROOT/${CARGO_TARGET_DIR:-target}/release/examples/herd_server
start_herd_server() {
    [[ -n ${HERD_SERVER_BUILT:-} ]] || cargo build --release --locked --example herd_server && HERD_SERVER_BUILT=1
    rm -f "$WORK/port"
    "$HERD_SERVER" --down-for "$1" --stats "$2" --gather "${3:-0}" >"$WORK/port" &
    SERVER_PID=$!
    for _ in $(seq 50); do [[ -s $WORK/port ]] && break; sleep 0.1; done
    URL="http://127.0.0.1:$(head -1 "$WORK/port")"
}

# herd_capacity: requests a second the herd server answers here (keep-alive GETs, 3 s, 32 connections).
herd_capacity() {
    start_herd_server 0 "$WORK/capacity.json"
    "$HERD_SERVER" --load "$URL/" 3 32
    stop_server
}

# gate_clients N FN ARGS...: starts N copies of FN ARGS that wait at a FIFO and start
# together, as clients that failed together would; sets PIDS.
gate_clients() {
    local n=$1
    shift
    rm -f "$WORK/gate" "$WORK/ready"
    mkfifo "$WORK/gate"
    exec 3<>"$WORK/gate" # a writer, so every client's open succeeds and its read waits
    PIDS=()
    for _ in $(seq "$n"); do
        (
            echo >>"$WORK/ready"
            : <"$WORK/gate" # blocks until the gate's writer closes it
            "$@"
        ) &
        PIDS+=($!)
    done
    while (($(wc -l <"$WORK/ready" 2>/dev/null || echo 0) < n)); do sleep 0.05; done
    sleep 0.3 # the last ones reach their read
    exec 3>&- # end of file for every client at once
}
