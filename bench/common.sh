# Shared by the bench/ scripts (sourced, not run): the binary under test, a scratch
# directory, the loopback servers (bench/serve.py, examples/herd_server.rs, a real
# nginx), the FIFO gate that starts clients together and the machine description.

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
NGINX_PID=
BOUNCER_PID=
PG_DIR=
cleanup() {
    [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null
    [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    stop_postgres
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_postgres [SETTINGS...]: a throwaway PostgreSQL on 127.0.0.1 (max_connections
# 100, its default; fsync off; SETTINGS are more `-c NAME=VALUE` words) and PgBouncer in
# front of it as CI runs it (transaction mode, default_pool_size 2, max_client_conn 200),
# both as nobody, with trust authentication for the roles postgres and fleet (created
# here, no superuser: the superuser's reserved slots stay free for the script's looks).
# Sets PG_BIN, PG_DIR, PG_PORT, BOUNCER_PORT and BOUNCER_PID (pgbouncer's own, from its
# pid file); both are stopped at exit.
start_postgres() {
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    PG_DIR=$WORK/pg
    mkdir -p "$PG_DIR"
    chown nobody "$PG_DIR" "$WORK"
    PG_PORT=$(free_port)
    as_nobody "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust --no-sync >/dev/null
    as_nobody "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -o \
        "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c max_connections=100 $*" start >/dev/null
    psql_as postgres -q -c "CREATE ROLE fleet LOGIN; GRANT CREATE ON SCHEMA public TO fleet;"
    BOUNCER_PORT=$(free_port)
    printf '"postgres" ""\n"fleet" ""\n' >"$PG_DIR/users"
    printf '%s\n' "[databases]" "* = host=127.0.0.1 port=$PG_PORT" "[pgbouncer]" \
        "listen_addr = 127.0.0.1" "listen_port = $BOUNCER_PORT" "unix_socket_dir =" \
        "auth_type = trust" "auth_file = $PG_DIR/users" "admin_users = postgres" \
        "pool_mode = transaction" "default_pool_size = 2" "max_client_conn = 200" \
        "ignore_startup_parameters = extra_float_digits,options,application_name" \
        "logfile = $PG_DIR/pgbouncer.log" "pidfile = $PG_DIR/pgbouncer.pid" >"$PG_DIR/pgbouncer.ini"
    chown nobody "$PG_DIR/users" "$PG_DIR/pgbouncer.ini"
    runuser -u nobody -- pgbouncer "$PG_DIR/pgbouncer.ini" >/dev/null 2>&1 &
    for _ in $(seq 50); do
        if [[ -s $PG_DIR/pgbouncer.pid ]] && (echo >"/dev/tcp/127.0.0.1/$BOUNCER_PORT") 2>/dev/null; then
            BOUNCER_PID=$(cat "$PG_DIR/pgbouncer.pid")
            return
        fi
        sleep 0.1
    done
    echo "pgbouncer did not start:" >&2
    cat "$PG_DIR/pgbouncer.log" >&2
    exit 1
}

# stop_postgres: stops what start_postgres started, if anything.
stop_postgres() {
    [[ -n $BOUNCER_PID ]] && kill "$BOUNCER_PID" 2>/dev/null
    [[ -n $PG_DIR ]] && as_nobody "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1
    BOUNCER_PID= PG_DIR=
}

as_nobody() { runuser -u nobody -- "$@"; }

# psql_as USER ARGS...: psql on the server itself (never through the pooler).
psql_as() {
    local user=$1
    shift
    "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$user" -d postgres -X "$@"
}

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
# together, as clients that failed together would; sets PIDS, and RELEASED to the
# wall-clock time of the release (seconds since the epoch, as nginx's $msec).
gate_clients() {
    local n=$1
    shift
    rm -f "$WORK/gate" "$WORK/ready"
    mkfifo "$WORK/gate"
    exec 3<>"$WORK/gate" # a writer, so every client's open succeeds and its read waits
    PIDS=()
    for _ in $(seq "$n"); do
        (
            exec 3>&- # only the script holds the gate open, or its end of file never comes
            {
                echo >>"$WORK/ready"
                # Opening succeeds at once (the script is a writer); the read waits
                # until the script closes the gate: end of file for every client at once.
                read -r _ || true
            } <"$WORK/gate"
            "$@"
        ) &
        PIDS+=($!)
    done
    while (($(wc -l <"$WORK/ready" 2>/dev/null || echo 0) < n)); do sleep 0.05; done
    sleep 0.3 # the last ones reach their read
    RELEASED=$EPOCHREALTIME
    exec 3>&- # end of file for every client at once
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# need_nginx: installs Debian's nginx (and curl and python3, used beside it) if missing.
NGINX=/usr/sbin/nginx
need_nginx() {
    if [[ ! -x $NGINX ]] || ! command -v python3 >/dev/null || ! command -v curl >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx python3 curl
    fi
    chmod 755 "$WORK" # the workers run as nobody when root starts nginx
    mkdir -p "$WORK/tmp"
}

# start_nginx PORT HTTP SERVER: a real nginx on 127.0.0.1:PORT with its own prefix,
# pid file and error log ($WORK/nginx-error.log); HTTP goes into its http block and
# SERVER into its server block. The log format `bench` writes `$msec $status`, a line
# a request. worker_connections is NGINX_CONNECTIONS (4096) and the workers may open
# twice that many descriptors: nginx must never be what limits the clients. Waits
# until it answers (at /ready, which logs nothing) and sets NGINX_PID.
start_nginx() {
    local port=$1 connections=${NGINX_CONNECTIONS:-4096}
    rm -f "$WORK/nginx-error.log"
    cat >"$WORK/nginx.conf" <<CONF
worker_processes auto;
worker_rlimit_nofile $((2 * connections));
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections $connections; }
http {
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    log_format bench '\$msec \$status';
    access_log off;
    $2
    server {
        listen 127.0.0.1:$port backlog=4096;
        location = /ready { return 204; }
        $3
    }
}
CONF
    "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -g 'daemon off;' 2>>"$WORK/nginx-error.log" &
    NGINX_PID=$!
    for _ in $(seq 50); do
        curl -fs -o /dev/null "http://127.0.0.1:$port/ready" && return
        sleep 0.1
    done
    echo "nginx did not start:" >&2
    cat "$WORK/nginx-error.log" >&2
    exit 1
}

# stop_nginx: stops nginx gracefully (its access log is then complete) and fails if
# its error log says it ran short of connections or descriptors, or logged an error.
stop_nginx() {
    kill -QUIT "$NGINX_PID"
    wait "$NGINX_PID" || true
    NGINX_PID=
    if grep -E 'worker_connections are not enough|Too many open files|\[(error|crit|alert|emerg)\]' "$WORK/nginx-error.log" >&2; then
        echo "nginx limited the clients or failed (its error log, above): the figures are not valid" >&2
        exit 1
    fi
}
