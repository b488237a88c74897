#!/usr/bin/env bash
# A crontab of many jobs in one process: how late each slot of JOBS jobs of `@every 1s`
# starts its command (p50/p99/max, and how many within 100 ms), and the CPU an idle
# crontab of JOBS yearly jobs uses. Writes the "crontab" section of BENCHMARKS.md.
# JOBS, SECONDS_RUN and IDLE_SECONDS shorten it for a quick look.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

JOBS=${JOBS:-100}
SECONDS_RUN=${SECONDS_RUN:-20}
IDLE_SECONDS=${IDLE_SECONDS:-60}
TICKS=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# children_ticks PID: the CPU of PID's children that were waited for (the slot runs).
children_ticks() { awk '{ print $16 + $17 }' "/proc/$1/stat"; }

# Idle: yearly slots never come during the measurement.
for i in $(seq "$JOBS"); do echo "@yearly --job idle$i -- true"; done >"$WORK/idle.tab"
"$R" --crontab "$WORK/idle.tab" --catch-up none --state "$WORK/idle-state" 2>"$WORK/idle.log" &
PID=$!
sleep 2
cpu0=$(cpu_ticks $PID)
switches0=$(status_field $PID voluntary_ctxt_switches)
threads=$(status_field $PID Threads)
sleep "$IDLE_SECONDS"
cpu1=$(cpu_ticks $PID)
switches1=$(status_field $PID voluntary_ctxt_switches)
rss=$(status_field $PID VmRSS)
kill -TERM $PID
wait $PID || true

# Punctuality: every job's command is `date`, so each labelled line says when the
# slot's command ran; its lateness is that time less the slot in the label.
for i in $(seq "$JOBS"); do echo "@every 1s --job j$i -- date +%s.%N"; done >"$WORK/busy.tab"
"$R" --crontab "$WORK/busy.tab" --catch-up none --state "$WORK/busy-state" \
    >"$WORK/slots" 2>"$WORK/busy.log" &
PID=$!
sleep "$SECONDS_RUN"
busy_cpu=$(($(cpu_ticks $PID) + $(children_ticks $PID)))
busy_self=$(cpu_ticks $PID)
kill -TERM $PID
wait $PID || true
# Every slot that ran in the time measured, the start-up's included (as in busy_cpu).
slots_run=$(wc -l <"$WORK/slots")
read -r n within p50 p99 max < <(python3 - "$WORK/slots" <<'PY'
import sys, datetime, statistics
late = []
for line in open(sys.argv[1]):
    try:
        label, ran = line.split("] ", 1)[0].split("@", 1)[1], float(line.rsplit(" ", 1)[1])
    except (IndexError, ValueError):
        continue
    slot = datetime.datetime.fromisoformat(label.replace("Z", "+00:00")).timestamp()
    late.append((ran - slot) * 1000)
# The first seconds are the start-up (first starts recorded, catch-up of none): left out.
late = sorted(late[len(late) // 10:])
q = statistics.quantiles(late, n=100)
within = sum(1 for l in late if l <= 100) * 100 / len(late)
print(len(late), f"{within:.1f}", f"{q[49]:.1f}", f"{q[98]:.1f}", f"{late[-1]:.1f}")
PY
)

{
    machine
    echo "- retry: $("$R" --version | head -1)"
    echo "- load while measuring: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
    echo
    echo "| measure | result |"
    echo "|---|---|"
    echo "| lateness of the command's start, $JOBS jobs of \`@every 1s\`, $n slots (p50 / p99 / max) | $p50 ms / $p99 ms / $max ms |"
    echo "| slots whose command started within 100 ms | $within % |"
    echo "| CPU of the scheduler and its slot runs over ${SECONDS_RUN} s | $busy_cpu ticks (1 tick = $((1000 / TICKS)) ms), $busy_self of them the scheduler's |"
    echo "| CPU per slot ($slots_run slots: the scheduler, the slot's \`retry\`, \`/bin/sh\` and \`date\`) | $(python3 -c "print(f'{$busy_cpu * 1000 / $TICKS / max($slots_run, 1):.1f}')") ms |"
    echo "| idle CPU over ${IDLE_SECONDS} s ($JOBS \`@yearly\` jobs) | $((cpu1 - cpu0)) ticks |"
    echo "| voluntary wake-ups over ${IDLE_SECONDS} s (the file looked at every 2 s) | $((switches1 - switches0)) |"
    echo "| threads / RSS while idle | $threads / $((rss / 1024)) MiB |"
} >"$WORK/section"
cat "$WORK/section"
python3 "$ROOT/bench/update-docs.py" crontab "$WORK/section" BENCHMARKS.md
