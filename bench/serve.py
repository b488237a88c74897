#!/usr/bin/env python3
"""Loopback HTTP server for the benchmarks.

  GET /            -> 200, "ok\n"
  GET /bytes/N     -> 200, N zero bytes (N may end in K, M or G), sent in 1 MiB writes
  GET /gzip/N      -> 200, Content-Encoding: gzip, N bytes of log-like text once decoded
                      (compressed on the first request for N, then served from memory)

--herd SECONDS answers 503 (with no Retry-After) to every request during the first
SECONDS after the first request, then 200; it logs each request's arrival time and, on SIGTERM or
SIGINT, writes a JSON summary to --stats FILE: total requests, 503s, 200s, and the peak
number of requests in any 100 ms window after recovery.

Prints the port it listens on (127.0.0.1 only) as its first stdout line.
"""

import argparse
import gzip
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = bytes(1 << 20)
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    return int(text[: len(text) - len(unit)]) * UNITS[unit]


GZIPPED = {}
GZIP_LOCK = threading.Lock()


def gzipped(n):
    """N bytes of numbered log lines, gzip-encoded (about 8:1, like real text)."""
    with GZIP_LOCK:
        if n not in GZIPPED:
            line = b" GET /api/v1/items?page=%d HTTP/1.1 200 1532 0.004 client=10.0.%d.%d\n"
            lines, size, i = [], 0, 0
            while size < n:
                text = b"%09d" % i + line % (i % 977, i % 251, i % 13)
                lines.append(text)
                size += len(text)
                i += 1
            GZIPPED[n] = gzip.compress(b"".join(lines)[:n], compresslevel=6)
        return GZIPPED[n]


class State:
    def __init__(self, outage):
        # The outage clock starts at the first request, so client start-up is not part of it.
        self.start = None
        self.outage = outage
        self.lock = threading.Lock()
        self.arrivals = []  # (seconds since start, status)

    def status_now(self):
        with self.lock:
            if self.start is None:
                self.start = time.monotonic()
        now = time.monotonic() - self.start
        status = 503 if self.outage is not None and now < self.outage else 200
        if self.outage is not None:
            with self.lock:
                self.arrivals.append((now, status))
        return status


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        status = self.server.state.status_now()
        if status != 200:
            self.reply(status, b"unavailable\n")
        elif self.path.startswith("/bytes/"):
            self.send_zeros(parse_size(self.path[len("/bytes/") :]))
        elif self.path.startswith("/gzip/"):
            self.send_gzip(gzipped(parse_size(self.path[len("/gzip/") :])))
        else:
            self.reply(200, b"ok\n")

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_zeros(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        view = memoryview(CHUNK)
        while n > 0:
            step = min(n, len(CHUNK))
            self.wfile.write(view[:step])
            n -= step


    def send_gzip(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        view = memoryview(body)
        for at in range(0, len(body), len(CHUNK)):
            self.wfile.write(view[at : at + len(CHUNK)])


def peak_in_window(times, window):
    """Most arrivals in any half-open interval [t, t + window)."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def summary(state):
    with state.lock:
        arrivals = sorted(state.arrivals)
    after = [t for t, _ in arrivals if t >= state.outage]
    return {
        "total": len(arrivals),
        "status_503": sum(1 for _, s in arrivals if s == 503),
        "status_200": sum(1 for _, s in arrivals if s == 200),
        "peak_100ms_after_recovery": peak_in_window(after, 0.1),
        "peak_100ms_during_outage": peak_in_window(
            [t for t, s in arrivals if s == 503], 0.1
        ),
        "last_request_s": round(arrivals[-1][0], 3) if arrivals else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--herd", type=float, help="answer 503 for this many seconds")
    ap.add_argument("--stats", help="write the herd summary here on exit")
    args = ap.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 1024
    server.state = State(args.herd)

    def stop(*_):
        if args.herd is not None and args.stats:
            with open(args.stats, "w") as f:
                json.dump(summary(server.state), f)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
