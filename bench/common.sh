# Shared by bench/run.sh and bench/herd.sh (sourced, not run): the binary under
# test, a scratch directory, the loopback server and the machine description.

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

# R: the binary measured; RETRY_BIN=path measures that one as it is.
if [[ -z ${RETRY_BIN:-} ]]; then
    cargo build --release --locked
    RETRY_BIN=${CARGO_TARGET_DIR:-target}/release/retry
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
