#!/usr/bin/env bash
# Side-by-side benchmarks of retry against Debian's C `retry` package, the
# `attempt` tool (crate attempt-cli) and curl (--retry), in one run:
#   start-up overhead over `true`; pass-through throughput and peak RSS at 1 GiB;
#   --hold-stdout and stdin replay at 1 GiB; one HTTP GET and a 1 GiB download
#   against a loopback server (bench/serve.py); a --compressed download of 100 MiB
#   (gzip-encoded) against curl --compressed.
# Prints a table of ratios and writes it into BENCHMARKS.md with the date and machine.
#
# Usage: bench/run.sh            (builds target/HOST/release/retry first, as the README's install does)
#        RETRY_BIN=path bench/run.sh   (measures that binary as it is)
# Knobs: RUNS (default 30) for the short benchmarks, STARTUP_RUNS (default 300) for
#        start-up, BIG_RUNS (default 10) for the 1 GiB ones, SIZE (default 1G),
#        GZ_SIZE (default 100M, the decoded size of the --compressed download),
#        NO_INSTALL=1 to skip installing tools,
#        SECTIONS="http compressed" to rerun only those sections: their rows replace
#        the same sections' rows in BENCHMARKS.md and the others are kept as they were.
set -euo pipefail
source "$(dirname "$0")/common.sh"

RUNS=${RUNS:-30}
# A start is about 2 ms: many runs keep a busy machine's noise out of the means.
STARTUP_RUNS=${STARTUP_RUNS:-300}
BIG_RUNS=${BIG_RUNS:-10}
SIZE=${SIZE:-1G}
GZ_SIZE=${GZ_SIZE:-100M}
ALL_SECTIONS="startup pass_through hold_stdout stdin_replay http compressed retry_after_herd"
SECTIONS=${SECTIONS:-$ALL_SECTIONS}
WARMUP=3

install_tools() {
    local missing=()
    command -v hyperfine >/dev/null || missing+=(hyperfine)
    [[ -x /usr/bin/time ]] || missing+=(time)
    [[ -x /usr/bin/retry ]] || missing+=(retry)
    command -v curl >/dev/null || missing+=(curl)
    command -v python3 >/dev/null || missing+=(python3)
    if ((${#missing[@]})); then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
    command -v attempt >/dev/null || [[ -x $HOME/.cargo/bin/attempt ]] ||
        cargo install --locked attempt-cli
}

[[ ${NO_INSTALL:-} == 1 ]] || install_tools
export PATH="$HOME/.cargo/bin:$PATH"

DEB=/usr/bin/retry
ATT=$(command -v attempt || echo attempt)  # only a partial SECTIONS run may lack it
TRUE=$(command -v true)

ROWS=$WORK/rows.tsv
: >"$ROWS"

# row SECTION TOOL MEAN_S STDDEV_S RSS_KB BASELINE_TOOL NOTE
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"; }

# bench SECTION RUNS NAME CMD [NAME CMD]...: hyperfine, through a shell (for pipes)
# unless HF_SHELL=none; leaves "name<TAB>mean<TAB>stddev" lines in $WORK/last.tsv.
bench() {
    local section=$1 runs=$2
    shift 2
    local args=()
    while (($#)); do
        args+=(-n "$1" "$2")
        shift 2
    done
    echo "== $section" >&2
    hyperfine --style basic --shell="${HF_SHELL:-bash}" --warmup "$WARMUP" --runs "$runs" \
        --export-json "$WORK/hf.json" "${args[@]}" >&2
    python3 - "$WORK/hf.json" >"$WORK/last.tsv" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f'{r["command"]}\t{r["mean"]:.6f}\t{r["stddev"] or 0:.6f}')
EOF
}

# mean_of NAME: the mean of NAME from the last bench.
mean_of() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$WORK/last.tsv"; }
stddev_of() { awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$WORK/last.tsv"; }

# peak_rss CMD: the largest max RSS (KiB) over 3 runs of CMD, in which TIME marks
# the process to measure (it becomes /usr/bin/time on that process only).
peak_rss() {
    local cmd=${1//TIME//usr/bin/time -v -o $WORK/rss} best=0 kb
    for _ in 1 2 3; do
        bash -c "$cmd" >/dev/null 2>"$WORK/rss.err" || {
            echo "failed: $cmd" >&2
            cat "$WORK/rss.err" >&2
            return 1
        }
        kb=$(awk '/Maximum resident set size/ { print $NF }' "$WORK/rss")
        ((kb > best)) && best=$kb
    done
    echo "$best"
}

# record SECTION NAME RSS BASELINE NOTE: a row from the last bench.
record() { row "$1" "$2" "$(mean_of "$2")" "$(stddev_of "$2")" "$3" "$4" "$5"; }

# No shell in between: hyperfine execs each command directly.
startup() {
    HF_SHELL=none bench "start-up" "$STARTUP_RUNS" \
        "true" "$TRUE" \
        "retry" "$R -- $TRUE" \
        "debian retry" "$DEB -t 1 -- $TRUE" \
        "attempt" "$ATT -a 1 -- $TRUE"
    record start-up "true" "" "" "bare true"
    record start-up "retry" "" "true" "retry -- true"
    record start-up "debian retry" "" "true" "retry -t 1 -- true"
    record start-up "attempt" "" "true" "attempt -a 1 -- true"
}

pass_through() {
    local src="head -c $SIZE /dev/zero"
    bench "pass-through $SIZE" "$BIG_RUNS" \
        "direct pipe" "$src | wc -c" \
        "retry" "$R -- $src | wc -c" \
        "debian retry" "$DEB -t 1 -- $src | wc -c" \
        "attempt" "$ATT -a 1 -- $src | wc -c"
    record "pass-through $SIZE" "direct pipe" "$(peak_rss "TIME $src | wc -c")" "" "head piped to wc -c"
    record "pass-through $SIZE" "retry" "$(peak_rss "TIME $R -- $src | wc -c")" "direct pipe" \
        "target >= 0.95x, RSS < 8 MiB"
    record "pass-through $SIZE" "debian retry" "$(peak_rss "TIME $DEB -t 1 -- $src | wc -c")" \
        "direct pipe" "holds stdout in memory"
    record "pass-through $SIZE" "attempt" "$(peak_rss "TIME $ATT -a 1 -- $src | wc -c")" \
        "direct pipe" ""
}

hold_stdout() {
    local src="head -c $SIZE /dev/zero"
    bench "hold-stdout $SIZE" "$BIG_RUNS" \
        "direct pipe" "$src | wc -c" \
        "retry --hold-stdout" "$R --hold-stdout -- $src | wc -c"
    record "hold-stdout $SIZE" "direct pipe" "" "" "head piped to wc -c"
    record "hold-stdout $SIZE" "retry --hold-stdout" \
        "$(peak_rss "TIME $R --hold-stdout -- $src | wc -c")" "direct pipe" "RSS target < 16 MiB"
}

# The command fails once (a marker file remembers), so the second attempt must be
# fed the recorded stdin; each attempt's byte count goes to $WORK/counts.
stdin_replay() {
    local src="head -c $SIZE /dev/zero"
    local body="wc -c >>$WORK/counts; test -e $WORK/marker || { touch $WORK/marker; exit 1; }"
    local reset="rm -f $WORK/marker $WORK/counts"
    local cmd_ours="$R -q -a 2 --delay 0 -- sh -c '$body'"
    local cmd_deb="$DEB -t 2 -d 0 -- sh -c '$body'"
    local cmd_att="$ATT -q -a 2 fixed -w 0 -- sh -c '$body'"
    bench "stdin replay $SIZE" "$BIG_RUNS" \
        "direct, read twice" "$src | sh -c 'wc -c >/dev/null'; $src | sh -c 'wc -c >/dev/null'" \
        "retry" "$reset; $src | $cmd_ours" \
        "debian retry" "$reset; $src | $cmd_deb" \
        "attempt" "$reset; $src | $cmd_att"
    record "stdin replay $SIZE" "direct, read twice" "" "" "two pipes, no retry tool"
    local name cmd rss replayed
    for name in retry "debian retry" attempt; do
        case $name in
            retry) cmd=$cmd_ours ;;
            "debian retry") cmd=$cmd_deb ;;
            attempt) cmd=$cmd_att ;;
        esac
        rss=$(peak_rss "$reset; $src | TIME $cmd")
        replayed=$(sed -n 2p "$WORK/counts")
        record "stdin replay $SIZE" "$name" "$rss" "direct, read twice" \
            "2nd attempt read ${replayed:-nothing} bytes"
    done
}

http() {
    start_server
    local url=$URL
    if ! "$R" -q -a 1 "$url/" >/dev/null 2>"$WORK/http.err"; then
        echo "HTTP mode is not available in $R ($(head -1 "$WORK/http.err")); skipping the HTTP benchmarks" >&2
        row "HTTP GET" "retry" "" "" "" "" "skipped: HTTP mode not available in this build"
        return
    fi
    bench "HTTP GET" "$RUNS" \
        "curl -s" "curl -s $url/" \
        "curl -s --retry 3" "curl -s --retry 3 $url/" \
        "retry" "$R $url/"
    record "HTTP GET" "curl -s" "" "" "one GET on loopback"
    record "HTTP GET" "curl -s --retry 3" "" "curl -s" ""
    record "HTTP GET" "retry" "" "curl -s" "target <= curl"
    local big="$url/bytes/$SIZE"
    bench "download $SIZE" "$BIG_RUNS" \
        "curl -s -o" "curl -s -o $WORK/curl.bin $big" \
        "curl -s --retry 3 -o" "curl -s --retry 3 -o $WORK/curl.bin $big" \
        "retry -o" "$R -o $WORK/retry.bin $big"
    [[ $(stat -c %s "$WORK/retry.bin") == $(stat -c %s "$WORK/curl.bin") ]] ||
        { echo "retry -o wrote the wrong size" >&2; exit 1; }
    record "download $SIZE" "curl -s -o" "$(peak_rss "TIME curl -s -o $WORK/curl.bin $big")" "" ""
    record "download $SIZE" "curl -s --retry 3 -o" \
        "$(peak_rss "TIME curl -s --retry 3 -o $WORK/curl.bin $big")" "curl -s -o" ""
    record "download $SIZE" "retry -o" "$(peak_rss "TIME $R -o $WORK/retry.bin $big")" \
        "curl -s -o" "target >= 0.9x, RSS < 16 MiB"
    rm -f "$WORK"/*.bin
}

# A gzip-encoded body decoded on the fly: curl --compressed against retry --compressed.
compressed() {
    [[ -n $SERVER_PID ]] || start_server
    local gz="$URL/gzip/$GZ_SIZE" section="download --compressed $GZ_SIZE"
    # The server compresses the body once, on the first request for this size.
    curl -s --compressed -o /dev/null "$gz"
    bench "$section" "$BIG_RUNS" \
        "curl -s --compressed -o" "curl -s --compressed -o $WORK/curl.txt $gz" \
        "retry --compressed -o" "$R --compressed -o $WORK/retry.txt $gz"
    cmp -s "$WORK/curl.txt" "$WORK/retry.txt" ||
        { echo "retry --compressed wrote different bytes from curl" >&2; exit 1; }
    record "$section" "curl -s --compressed -o" \
        "$(peak_rss "TIME curl -s --compressed -o $WORK/curl.txt $gz")" "" "gzip, about 9:1"
    record "$section" "retry --compressed -o" \
        "$(peak_rss "TIME $R --compressed -o $WORK/retry.txt $gz")" \
        "curl -s --compressed -o" "target >= 0.9x, RSS < 16 MiB"
    rm -f "$WORK"/*.txt
}

# The Retry-After scenario against a real nginx (bench/retry-after-herd.sh, which
# also writes its own section): one summary row here.
retry_after_herd() {
    local clients=20
    CLIENTS=$clients RUNS=${HERD_RUNS:-5} SUMMARY="$WORK/herd.tsv" RETRY_BIN="$R" \
        "$ROOT/bench/retry-after-herd.sh" >&2
    local lo hi requests peak
    read -r lo hi requests peak <"$WORK/herd.tsv"
    row "Retry-After herd (nginx, Retry-After: 2)" "retry" "" "" "" "" \
        "$lo-$hi of $clients through per run (target >= 19), $requests requests a run, retry peak $peak per 100 ms"
}

for section in $SECTIONS; do
    [[ " $ALL_SECTIONS " == *" $section "* ]] || { echo "unknown section: $section" >&2; exit 2; }
    "$section"
done

# The binary as the tables name it: its path in this tree, else its name (no machine's paths).
shown_bin() {
    case $R in
    "$ROOT"/*) echo "${R#"$ROOT"/}" ;;
    *) echo "$(basename "$R"), given as RETRY_BIN" ;;
    esac
}

tools() {
    echo "- Tools: $(hyperfine --version), $(curl --version | head -1 | cut -d' ' -f1-2)," \
        "attempt $($ATT --version 2>&1 | awk '{print $NF}'), Debian retry $(dpkg-query -W -f='${Version}' retry 2>/dev/null || echo '?')"
    echo "- retry: $("$R" -V) ($(shown_bin))"
    echo "- Runs: $STARTUP_RUNS (start-up), $RUNS (HTTP GET), $BIG_RUNS (1 GiB), $WARMUP warm-up; peak RSS is the largest of 3 runs"
}

TABLE=$WORK/table.md
python3 - "$ROWS" >"$TABLE" <<'EOF'
import sys

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

def nbytes(section):
    """The size a section moves: its last word, such as 1G or 100M."""
    size = section.split()[-1]
    return int(size[:-1]) * units[size[-1]]

means = {(r[0], r[1]): float(r[2]) for r in rows if r[2]}
throughput_sections = ("pass-through", "hold-stdout", "download")

def ratio(section, mean, base):
    if not base or not mean:
        return ""
    b = means[(section, base)]
    m = float(mean)
    if section.startswith(throughput_sections):
        return f"{b / m:.2f}x throughput"
    return f"{m / b:.2f}x time"

def rate(section, mean):
    if not mean or not section.startswith(throughput_sections + ("stdin",)):
        return ""
    reads = 2 if section.startswith("stdin") else 1
    return f"{reads * nbytes(section) / float(mean) / 1e6:,.0f} MB/s"

print("| benchmark | tool | mean ± σ | rate | vs | ratio | peak RSS | note |")
print("|---|---|---|---|---|---|---|---|")
for section, tool, mean, sd, rss, base, note in rows:
    shown = f"{float(mean) * 1e3:.1f} ± {float(sd) * 1e3:.1f} ms" if mean else "–"
    mem = f"{int(rss) / 1024:.1f} MiB" if rss else ""
    print(f"| {section} | {tool} | {shown} | {rate(section, mean)} | {base} | "
          f"{ratio(section, mean, base)} | {mem} | {note} |")
EOF

if [[ $SECTIONS == "$ALL_SECTIONS" ]]; then
    {
        echo
        machine
        tools
        echo
        cat "$TABLE"
    } >"$WORK/section.md"
else
    # A partial run: the other sections' rows and the header stay as last written.
    "$ROOT/bench/merge-rows.py" "$ROOT/BENCHMARKS.md" "$TABLE" \
        "- Rerun on $(date) with SECTIONS=\"$SECTIONS\": $(tools | sed -n 2p | cut -c3-)" \
        >"$WORK/section.md"
fi
cat "$WORK/section.md"

"$ROOT/bench/update-docs.py" run "$WORK/section.md" "$ROOT/BENCHMARKS.md"
