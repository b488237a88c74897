#!/usr/bin/env bash
# Start-up of several builds of retry against Debian's C `retry`, all running `true`:
# wall time (the binaries take turns, start by start), instructions (valgrind's callgrind), page
# faults (perf's software counter) and the dynamic relocations each binary applies.
# Writes the table into BENCHMARKS.md. Builds nothing: name the binaries to compare.
#
# Usage: bench/startup.sh NAME=PATH...   e.g. bench/startup.sh retry=target/release/retry
# Knobs: RUNS (default 1000) starts of every binary, in turn; NO_INSTALL=1 to skip
#        installing valgrind and perf.
set -euo pipefail
# common.sh builds the static target/HOST/release/retry unless RETRY_BIN is set; this script measures only its arguments.
RETRY_BIN=${RETRY_BIN:-/bin/true}
source "$(dirname "$0")/common.sh"

RUNS=${RUNS:-1000}
DEB=/usr/bin/retry
TRUE=$(command -v true)

if [[ ${NO_INSTALL:-} != 1 ]]; then
    missing=()
    command -v valgrind >/dev/null || missing+=(valgrind)
    command -v perf >/dev/null || missing+=(linux-perf)
    [[ -x $DEB ]] || missing+=(retry)
    if ((${#missing[@]})); then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
fi

# args_of I: the command line of binary I, running `true` once.
args_of() {
    if (($1 == 0)); then echo "$DEB -t 1 -- $TRUE"; else echo "${paths[$1]} -- $TRUE"; fi
}

names=("debian retry")
paths=("$DEB")
for spec in "$@"; do
    names+=("${spec%%=*}")
    paths+=("$(realpath "${spec#*=}")")
done
cmds=()
for i in "${!names[@]}"; do cmds+=("$(args_of "$i")"); done

# Wall time: every run starts each binary once, in turn, so a busy moment of the machine
# hits all of them alike; "name<TAB>ms" lines, one per start.
python3 - "$RUNS" "${#names[@]}" "${names[@]}" "${cmds[@]}" >"$WORK/times.tsv" <<'EOF2'
import os, sys, time

runs, n = int(sys.argv[1]), int(sys.argv[2])
names, cmds = sys.argv[3:3 + n], [c.split() for c in sys.argv[3 + n:]]
null = os.open(os.devnull, os.O_RDWR)
fds = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
for r in range(runs + 5):  # the first 5 rounds warm the caches and are not kept
    for name, cmd in zip(names, cmds):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=fds)
        _, status = os.waitpid(pid, 0)
        took = time.perf_counter_ns() - t0
        if status != 0:
            sys.exit(f"{name} failed: {cmd}")
        if r >= 5:
            print(f"{name}\t{took / 1e6:.4f}")
EOF2

# instructions I: the fewest of 9 runs, since whether the command has already exited
# at the first wait changes the work done; "" without valgrind.
instructions() {
    command -v valgrind >/dev/null || return 0
    local cmd
    read -ra cmd <<<"$(args_of "$1")"
    for _ in $(seq 9); do
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "${cmd[@]}" 2>&1 |
            awk '/Collected :/ { print $NF }'
    done | sort -n | head -1
}

# faults I: page faults of the tool and of `true` together, mean of 100 runs.
faults() {
    command -v perf >/dev/null || return 0
    local cmd
    read -ra cmd <<<"$(args_of "$1")"
    perf stat -x, -r 100 -e page-faults "${cmd[@]}" 2>&1 >/dev/null | awk -F, 'NR == 1 { print $1 }'
}

# relocs PATH: counts of RELATIVE (packed or not), symbol and IRELATIVE relocations, and .relr.dyn size.
relocs() {
    local relr
    relr=$(readelf -S -W "$1" | sed 's/\[ */[/' | awk '$2 == ".relr.dyn" { print $6 }')
    relr=$((16#${relr:-0}))
    # A packed .relr.dyn section is listed as "N offsets": relative relocations too.
    readelf -r -W "$1" | awk -v relr="$relr" '
        /R_X86_64_RELATIVE/ { rel++ } /^ *[0-9]+ offsets$/ { rel += $1 }
        /R_X86_64_(GLOB_DAT|JUMP_SLO|64)/ { sym++ }
        /R_X86_64_IRELATIV/ { irel++ }
        END { printf "%d\t%d\t%d\t%d\n", rel, sym, irel, relr }'
}

ROWS=$WORK/rows.tsv
: >"$ROWS"
for i in "${!names[@]}"; do
    p=${paths[$i]}
    link=$(file -L "$p" | grep -o 'static-pie linked\|dynamically linked\|statically linked' || echo '?')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${names[$i]}" "$link" "$(stat -L -c %s "$p")" \
        "$(instructions "$i")" "$(faults "$i")" "$(relocs "$p")" >>"$ROWS"
done

TABLE=$WORK/table.md
python3 - "$ROWS" "$WORK" >"$TABLE" <<'EOF'
import statistics, sys

times = {}
for line in open(sys.argv[2] + "/times.tsv"):
    name, ms = line.rstrip("\n").split("\t")
    times.setdefault(name, []).append(float(ms))
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
base = statistics.median(times["debian retry"])
print("| build | linkage | size | time: median (quartiles) | vs Debian | instructions | page faults "
      "(with `true`) | RELATIVE relocs | symbol relocs | IRELATIVE | .relr.dyn |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name, link, size, ir, pf, rel, sym, irel, relr in rows:
    t = statistics.median(times[name])
    q = statistics.quantiles(times[name], n=4)
    spread = f"{q[0]:.2f}–{q[2]:.2f}"
    irs = f"{int(ir):,}" if ir else "–"
    pfs = f"{float(pf):.0f}" if pf else "–"
    relrs = f"{int(relr):,} B" if int(relr) else ""
    print(f"| {name} | {link} | {int(size) / 1e6:.2f} MB | {t:.2f} ms ({spread}) | "
          f"{t / base:.2f}x | {irs} | {pfs} | {int(rel):,} | {sym} | {irel} | {relrs} |")
EOF

{
    echo
    machine
    echo "- $RUNS starts of each binary, taking turns start by start (after 5 warm-up turns);" \
        "time from posix_spawn to waitpid, stdio on /dev/null"
    echo "- Instructions: callgrind, the fewest of 9 runs; page faults: perf stat, mean of 100 runs"
    echo
    cat "$TABLE"
} | tee "$WORK/section.md"

"$ROOT/bench/update-docs.py" startup "$WORK/section.md" "$ROOT/BENCHMARKS.md"
