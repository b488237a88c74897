#!/usr/bin/env bash
# A crontab of many jobs in one process: how late each slot of JOBS jobs of `@every 1s`
# starts its command (p50/p99/max, and whether every slot ran), the cost of a slot next to
# the floor (`/bin/sh -c true` alone), the scheduler's threads, RSS and descriptors idle
# and busy, the same before and after its state stalls for STALL_SECONDS, and how long a
# crontab of 10,000 lines takes to check. Writes the "crontab" section of BENCHMARKS.md.
# JOBS, SECONDS_RUN, IDLE_SECONDS and STALL_SECONDS shorten it for a quick look.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

JOBS=${JOBS:-100}
SECONDS_RUN=${SECONDS_RUN:-20}
IDLE_SECONDS=${IDLE_SECONDS:-60}
STALL_SECONDS=${STALL_SECONDS:-15}
TICKS=$(getconf CLK_TCK)
# The state on tmpfs, as the target says: a disk's fsyncs are the disk's figure.
STATE_ROOT=$(mktemp -d /dev/shm/retry-bench.XXXXXX)
trap 'rm -rf "$STATE_ROOT"; cleanup' EXIT

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# children_ticks PID: the CPU of PID's children that were waited for (the slot runs).
children_ticks() { awk '{ print $16 + $17 }' "/proc/$1/stat"; }
descriptors() { ls "/proc/$1/fd" | wc -l; }
# fewest_descriptors PID: the fewest over a second (a running slot holds three pipes).
fewest_descriptors() {
    local fewest=100000 n
    for _ in $(seq 20); do
        n=$(descriptors "$1")
        ((n < fewest)) && fewest=$n
        sleep 0.05
    done
    echo "$fewest"
}
# scheduler_ready LOG JOBS: waits until the log says the last job's schedule.
scheduler_ready() {
    for _ in $(seq 600); do
        grep -q "job idle$2: schedule\|job j$2: schedule" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "the scheduler did not start its jobs" >&2
    return 1
}

# Checking a crontab of 10,000 lines (every line its own name and schedule): the dry run.
for i in $(seq 10000); do echo "*/$((i % 59 + 1)) * * * * -a 3 --job check$i -- echo $i"; done >"$WORK/big.tab"
check_start=$(date +%s%N)
"$R" --crontab "$WORK/big.tab" --state "$STATE_ROOT/none" --dry-run >/dev/null
check_ms=$((($(date +%s%N) - check_start) / 1000000))

# Idle: yearly slots never come during the measurement; 100 jobs, then 1,000.
idle() {
    local jobs=$1
    for i in $(seq "$jobs"); do echo "@yearly --job idle$i -- true"; done >"$WORK/idle.tab"
    "$R" --crontab "$WORK/idle.tab" --catch-up none --state "$STATE_ROOT/idle$jobs" 2>"$WORK/idle.log" &
    PID=$!
    scheduler_ready "$WORK/idle.log" "$jobs"
    sleep 1
}
idle 1000
idle_threads_1000=$(status_field $PID Threads)
kill -TERM $PID
wait $PID || true
idle "$JOBS"
cpu0=$(cpu_ticks $PID)
switches0=$(status_field $PID voluntary_ctxt_switches)
idle_threads=$(status_field $PID Threads)
idle_fds=$(descriptors $PID)
sleep "$IDLE_SECONDS"
cpu1=$(cpu_ticks $PID)
switches1=$(status_field $PID voluntary_ctxt_switches)
idle_rss=$(status_field $PID VmRSS)
kill -TERM $PID
wait $PID || true

# The floor: what `/bin/sh -c true` alone costs, one after another.
floor_start=$(cpu_ticks $$)
floor_children=$(children_ticks $$)
for _ in $(seq 1000); do /bin/sh -c true; done
floor_ms=$(python3 -c "print(f'{($(children_ticks $$) - $floor_children) * 1000 / $TICKS / 1000:.2f}')")
: "$floor_start"
# The jobs' own command alone, one after another: a slot's share that is not retry's.
command_children=$(children_ticks $$)
for _ in $(seq 1000); do /bin/sh -c 'date +%s.%N' >/dev/null; done
command_ms=$(python3 -c "print(f'{($(children_ticks $$) - $command_children) * 1000 / $TICKS / 1000:.2f}')")
cores=$(nproc)

# Punctuality: every job's command is `date`, so each labelled line says when the
# slot's command ran; its lateness is that time less the slot in the label.
for i in $(seq "$JOBS"); do echo "@every 1s --job j$i -- date +%s.%N"; done >"$WORK/busy.tab"
"$R" --crontab "$WORK/busy.tab" --catch-up none --overlap skip --state "$STATE_ROOT/busy" \
    >"$WORK/slots" 2>"$WORK/busy.log" &
PID=$!
scheduler_ready "$WORK/busy.log" "$JOBS"
# From the next whole second: this one's slot may have come before the scheduler's
# start, and with --catch-up none such a slot never runs.
measured_from=$(($(date +%s) + 1))
sleep "$SECONDS_RUN"
measured_to=$(date +%s)
busy_cpu=$(($(cpu_ticks $PID) + $(children_ticks $PID)))
busy_self=$(cpu_ticks $PID)
busy_threads=$(status_field $PID Threads)
busy_rss=$(status_field $PID VmRSS)
busy_fds=$(fewest_descriptors $PID)
kill -TERM $PID
wait $PID || true
slots_run=$(wc -l <"$WORK/slots")
# The last second's slots may not have started when the scheduler is stopped: not counted.
read -r n within p50 p99 max missing < <(python3 - "$WORK/slots" "$measured_from" "$((measured_to - 1))" "$JOBS" <<'PY'
import sys, datetime, statistics
path, start, end, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
late, seen = [], set()
for line in open(path):
    try:
        key = line.split("] ", 1)[0].split(" [", 1)[1]
        label = key.split("@", 1)[1]
        ran = float(line.rsplit(" ", 1)[1])
    except (IndexError, ValueError):
        continue
    slot = datetime.datetime.fromisoformat(label.replace("Z", "+00:00")).timestamp()
    if start <= slot < end:
        late.append((ran - slot) * 1000)
        seen.add(key)
late.sort()
q = statistics.quantiles(late, n=100)
within = sum(1 for l in late if l <= 100) * 100 / len(late)
missing = jobs * (end - start) - len(seen)
print(len(late), f"{within:.1f}", f"{q[49]:.1f}", f"{q[98]:.1f}", f"{late[-1]:.1f}", missing)
PY
)

# A stall of the state: PostgreSQL's postmaster stopped (SIGSTOP) for STALL_SECONDS, so
# every new connection, the scheduler's and its slots', gets no answer; 5 jobs of
# `@every 1s` with connect_timeout=1. Descriptors, threads and RSS before and after.
start_postgres
state="postgres://postgres@127.0.0.1:$PG_PORT/postgres?connect_timeout=1"
for i in $(seq 5); do echo "@every 1s -a 1 --job s$i -- true"; done >"$WORK/stall.tab"
"$R" --crontab "$WORK/stall.tab" --state "$state" 2>"$WORK/stall.log" &
PID=$!
sleep 5
stall_fds0=$(fewest_descriptors $PID)
stall_threads0=$(status_field $PID Threads)
stall_rss0=$(status_field $PID VmRSS)
postmaster=$(head -1 "$PG_DIR/data/postmaster.pid")
kill -STOP "$postmaster"
# A reload during the stall: the changed job's records are read, and get no answer.
sed -i 's/--job s1 /--job s1 --timeout 9s /' "$WORK/stall.tab"
kill -HUP $PID
sleep "$STALL_SECONDS"
kill -CONT "$postmaster"
sleep 8
stall_fds1=$(fewest_descriptors $PID)
stall_threads1=$(status_field $PID Threads)
stall_rss1=$(status_field $PID VmRSS)
kill -TERM $PID
wait $PID || true

{
    machine
    echo "- retry: $("$R" --version | head -1)"
    echo "- load while measuring: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
    echo
    echo "| measure | result |"
    echo "|---|---|"
    echo "| lateness of the command's start, $JOBS jobs of \`@every 1s\`, $n slots (p50 / p99 / max) | $p50 ms / $p99 ms / $max ms |"
    echo "| slots whose command started within 100 ms | $within % |"
    echo "| slots of the $((measured_to - measured_from)) s measured that did not run | $missing |"
    echo "| CPU of the scheduler and its slot runs over ${SECONDS_RUN} s | $busy_cpu ticks (1 tick = $((1000 / TICKS)) ms), $busy_self of them the scheduler's |"
    echo "| CPU per slot ($slots_run slots: the scheduler, the slot's \`retry\`, \`/bin/sh\` and \`date\`) | $(python3 -c "print(f'{$busy_cpu * 1000 / $TICKS / max($slots_run, 1):.1f}')") ms |"
    echo "| the floor: CPU of \`/bin/sh -c true\` alone | $floor_ms ms |"
    echo "| the jobs' command alone (\`/bin/sh -c 'date +%s.%N'\`), and $JOBS of them spread over $cores cores | $command_ms ms, $(python3 -c "print(f'{$command_ms * $JOBS / $cores:.0f}')") ms |"
    echo "| threads / RSS / descriptors, $JOBS jobs busy | $busy_threads / $((busy_rss / 1024)) MiB / $busy_fds |"
    echo "| threads / RSS / descriptors, $JOBS jobs idle | $idle_threads / $((idle_rss / 1024)) MiB / $idle_fds |"
    echo "| threads, 1,000 jobs idle | $idle_threads_1000 |"
    echo "| idle CPU over ${IDLE_SECONDS} s ($JOBS \`@yearly\` jobs) | $((cpu1 - cpu0)) ticks |"
    echo "| voluntary wake-ups over ${IDLE_SECONDS} s (the file looked at every 2 s) | $((switches1 - switches0)) |"
    echo "| descriptors / threads / RSS before and after a ${STALL_SECONDS} s stall of the state (5 jobs, a reload during it) | $stall_fds0 / $stall_threads0 / $((stall_rss0 / 1024)) MiB, then $stall_fds1 / $stall_threads1 / $((stall_rss1 / 1024)) MiB |"
    echo "| checking a crontab of 10,000 lines (\`--dry-run\`) | $check_ms ms |"
} >"$WORK/section"
cat "$WORK/section"
python3 "$ROOT/bench/update-docs.py" crontab "$WORK/section" BENCHMARKS.md
