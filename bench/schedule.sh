#!/usr/bin/env bash
# The scheduler's idle cost and its punctuality: an idle `retry --schedule` over 60 s
# (CPU ticks, context switches, RSS from /proc), and how late 20 slots of
# `@every 1s` start their command (min/median/max). Writes the "schedule" section
# of BENCHMARKS.md. IDLE_SECONDS and SLOTS shorten it for a quick look.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

IDLE_SECONDS=${IDLE_SECONDS:-60}
SLOTS=${SLOTS:-20}
TICKS=$(getconf CLK_TCK)

# cpu_ticks PID: user + system time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# mib KIB: kibibytes as mebibytes with one decimal.
mib() { echo "$(($1 / 1024)).$((($1 % 1024) * 10 / 1024))"; }
# status_field PID NAME: a number from /proc/PID/status.
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# Idle: a yearly slot never comes during the measurement.
"$R" --schedule '@yearly' --catch-up none --state "$WORK/idle-state" -- true 2>"$WORK/idle.log" &
PID=$!
sleep 1
cpu0=$(cpu_ticks $PID)
switches0=$(status_field $PID voluntary_ctxt_switches)
sleep "$IDLE_SECONDS"
cpu1=$(cpu_ticks $PID)
switches1=$(status_field $PID voluntary_ctxt_switches)
rss=$(status_field $PID VmRSS)
hwm=$(status_field $PID VmHWM)
anon=$(status_field $PID RssAnon)
file=$(status_field $PID RssFile)
kill -TERM $PID
wait $PID || true

# Punctuality: the command is `date`, so its output is the moment the slot's command ran.
"$R" --schedule '@every 1s' --catch-up none --state "$WORK/slot-state" -- date +%s.%N \
    >"$WORK/slots" 2>"$WORK/slots.log" &
PID=$!
for _ in $(seq $((SLOTS * 10 + 50))); do
    (($(wc -l <"$WORK/slots") >= SLOTS)) && break
    sleep 0.1
done
kill -TERM $PID
wait $PID || true
read -r n min median max < <(head -n "$SLOTS" "$WORK/slots" | python3 -c '
import sys, statistics
late = sorted((float(t) % 1) * 1000 for t in sys.stdin)
print(len(late), f"{late[0]:.1f}", f"{statistics.median(late):.1f}", f"{late[-1]:.1f}")')

{
    machine
    echo "- retry: $("$R" --version | head -1)"
    echo
    echo "| measure | result |"
    echo "|---|---|"
    echo "| idle CPU over ${IDLE_SECONDS} s (\`--schedule @yearly\`) | $((cpu1 - cpu0)) ticks (1 tick = $((1000 / TICKS)) ms) |"
    echo "| voluntary wake-ups over ${IDLE_SECONDS} s | $((switches1 - switches0)) |"
    echo "| RSS while idle / peak | $(mib "$rss") MiB / $(mib "$hwm") MiB |"
    echo "| of which anonymous / mapped from the binary and libraries | $(mib "$anon") MiB / $(mib "$file") MiB |"
    echo "| lateness of the command's start over $n slots of \`@every 1s\` (min / median / max) | $min ms / $median ms / $max ms |"
} >"$WORK/section"
cat "$WORK/section"
python3 "$ROOT/bench/update-docs.py" schedule "$WORK/section" BENCHMARKS.md
