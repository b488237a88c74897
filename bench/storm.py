#!/usr/bin/env python3
"""The figures of bench/storm.sh.

storm.py run KEY LABEL RUN DIR CLIENTS MAX_TIME
    Prints one JSON line for one run of one row, from DIR/access.log (nginx's
    `$msec $status CLIENT` per request), DIR/ends (a line per client: exit status, when
    it left the gate, when its retry exited, CLIENT) and DIR/times (the gate's release
    and the outage's end, seconds since the epoch).
storm.py table LINES CLIENTS MAX_TIME KEY...
    Prints the Markdown table of every run's line (and of the rows the build refused),
    the rows in the order of the KEYs, each row's median, and the targets for the
    `--throttled wait` row as pass/fail lines.
"""
import collections
import json
import math
import statistics
import sys

REFERENCE = "ref"  # no fleet options, --jitter none: its peak is the yardstick
# --retry-budget api --throttled wait, with file state and with PostgreSQL state: the
# rows the targets are for.
TARGETS = ("budget-wait", "budget-wait-pg")
WINDOW_MS = 100
# A run whose last first request came later than the first retry's --delay after the
# release did not fail together (the machine was busy): its figures are marked.
LATE_S = 0.5


def sliding_peak(times_ms):
    """The most requests in any WINDOW_MS-long window [t, t + WINDOW_MS) starting at a request."""
    times_ms = sorted(times_ms)
    peak, first = 0, 0
    for last, t in enumerate(times_ms):
        while t - times_ms[first] >= WINDOW_MS:
            first += 1
        peak = max(peak, last - first + 1)
    return peak


def one_run(key, label, run, directory, clients, max_time):
    hits = [line.split() for line in open(f"{directory}/access.log")]
    released, recovered = (float(v) for v in open(f"{directory}/times").read().split())
    ends = [line.split() for line in open(f"{directory}/ends")]
    if len(ends) != clients:
        sys.exit(f"{directory}/ends: {len(ends)} clients ended, {clients} were started")
    statuses = collections.Counter(int(status) for status, _, _, _ in ends)
    first = {}
    for t, _, client in hits:
        first[client] = min(float(t), first.get(client, math.inf))
    if not set(first) <= {client for _, _, _, client in ends}:
        sys.exit(f"{directory}/access.log: requests from clients that were not started")
    # Every request nginx answered while the file existed is a 503, every later one is not.
    outage = sum(1 for _, status, _ in hits if status == "503")
    after = [round(float(t) * 1000) for t, status, _ in hits if status != "503"]
    print(json.dumps({
        "key": key,
        "label": label,
        "run": run,
        "outage_s": recovered - released,
        "per_client": outage / clients,
        "succeeded": statuses.get(0, 0),
        "peak": sliding_peak(after),
        "last_done_s": max(float(end) for _, _, end, _ in ends) - released,
        "longest_client_s": max(float(end) - float(start) for _, start, end, _ in ends),
        "last_first_s": max(first.values(), default=released) - released,
        "silent": clients - len(first),
        "requests": len(hits),
        "other_statuses": dict(collections.Counter(s for _, s, _ in hits if s not in ("200", "503"))),
        "statuses": {str(k): v for k, v in statuses.items()},
        "max_time": max_time,
    }))


def ended(statuses):
    return ", ".join(f"{n} × exit {code}" for code, n in sorted(statuses.items(), key=lambda kv: -kv[1]))


def cells(r, clients, bold=lambda s: s):
    late = " (late)" if r["last_first_s"] > LATE_S else ""
    return [
        bold(f"{r['outage_s']:.2f} s"),
        bold(f"{r['last_first_s']:.2f} s{late}"),
        bold(f"{r['per_client']:.2f}"),
        bold(f"{r['succeeded']:g} / {clients}"),
        bold(f"{r['peak']:g}"),
        bold(f"{r['last_done_s']:.1f} s"),
        bold(f"{r['requests']:g}"),
    ]


def median_of(runs):
    return {k: statistics.median(r[k] for r in runs)
            for k in ("outage_s", "last_first_s", "per_client", "succeeded", "peak", "last_done_s", "requests")}


def table(lines, clients, max_time, keys):
    rows = {}
    for line in sorted(lines, key=lambda line: keys.index(json.loads(line)["key"])):
        r = json.loads(line)
        rows.setdefault(r["key"], {"label": r["label"], "runs": [], "refused": None})
        if "refused" in r:
            rows[r["key"]]["refused"] = r["refused"]
        else:
            rows[r["key"]]["runs"].append(r)
    out = [
        f"| fleet options | run | outage | last client's first request | requests per client during the outage (503s ÷ {clients}) "
        f"| clients succeeded (exit 0) | peak / {WINDOW_MS} ms after recovery (sliding window) "
        "| release to last client done | requests in all | how the clients ended |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.values():
        label = row["label"]
        if row["refused"] is not None:
            out.append(f"| {label} | – | not supported by this build: it refused these flags "
                       f"with exit 125 ({row['refused']}) | | | | | | | |")
            continue
        for r in row["runs"]:
            extra = "".join(f"; {n} answered {status}" for status, n in r["other_statuses"].items())
            extra += f"; {r['silent']} sent no request" if r["silent"] else ""
            out.append(f"| {label} | {r['run']} | " + " | ".join(cells(r, clients))
                       + f" | {ended(r['statuses'])}{extra} |")
            label = ""
        out.append("| | median | " + " | ".join(cells(median_of(row["runs"]), clients, lambda s: f"**{s}**")) + " | |")
    if any(r["last_first_s"] > LATE_S for row in rows.values() for r in row["runs"]):
        out += ["", f"(late): a client's first request came more than {LATE_S:g} s (the first "
                "retry's --delay) after the release: the machine was too busy to start the clients "
                "together, so they did not fail together, and the run understates the storm."]
    return out + [""] + targets(rows, clients, max_time)


def check(what, runs, key, form, ok):
    """A line `- pass|FAIL: WHAT (n of N runs: values)`: pass when every run's value is ok."""
    if not runs:
        return f"- not checked: {what} (the row did not run: not supported by this build)"
    values = [r[key] for r in runs]
    good = sum(1 for v in values if ok(v))
    word = "pass" if good == len(values) else "FAIL"
    return f"- {word}: {what} ({good} of {len(values)} runs: {', '.join(form.format(v) for v in values)})"


def targets(rows, clients, max_time):
    """The aims for the --throttled wait rows that ran, each a pass/fail line over its runs."""
    lines = []
    for key in TARGETS:
        if key in rows:
            lines += target_lines(rows, rows[key], clients, max_time) + [""]
    return lines or [f"- not checked: the targets (no row of {', '.join(TARGETS)} ran)"]


def target_lines(rows, target, clients, max_time):
    """The aims for one row: at most 1.2 requests per client in the outage, 95% succeed,
    a peak after recovery at most a quarter of the reference's, all done in --max-time."""
    runs = target["runs"]
    least = math.ceil(0.95 * clients)
    lines = [
        f"Targets for {target['label']}, each checked in every run:",
        "",
        check("at most 1.2 requests per client during the outage", runs, "per_client", "{:.2f}",
              lambda v: v <= 1.2),
        check(f"at least {least} of {clients} clients succeed (95%)", runs, "succeeded", "{}",
              lambda v: v >= least),
    ]
    reference = rows.get(REFERENCE, {"label": REFERENCE, "runs": []})
    if reference["runs"]:
        ref_peak = statistics.median(r["peak"] for r in reference["runs"])
        bound = 0.25 * ref_peak
        lines.append(check(f"peak / {WINDOW_MS} ms after recovery at most 0.25 × the reference peak "
                           f"({reference['label']}: median {ref_peak:g}) = {bound:g}",
                           runs, "peak", "{}", lambda v: v <= bound))
    else:
        lines.append(f"- not checked: peak after recovery (the reference row {reference['label']} did not run)")
    lines.append(check(f"every client done before its --max-time of {max_time:g} s (the longest "
                       "client, from the gate to its exit)", runs, "longest_client_s", "{:.1f} s",
                       lambda v: v < max_time))
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "run":
        key, label, run, directory, clients, max_time = sys.argv[2:8]
        one_run(key, label, int(run), directory, int(clients), float(max_time))
    elif sys.argv[1] == "table":
        print("\n".join(table(open(sys.argv[2]).readlines(), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:])))
    else:
        sys.exit(__doc__)
