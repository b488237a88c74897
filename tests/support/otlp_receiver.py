"""An OTLP/HTTP trace receiver for the tests, on OpenTelemetry's own messages (PyPI's
opentelemetry-proto): it decodes each POST to /v1/traces as an
ExportTraceServiceRequest and prints one JSON line per span (IDs in hex), with the
resource's attributes and the request's headers. Its first line is "PORT N".

    python3 otlp_receiver.py MODE
    MODE: accept (200 and an empty ExportTraceServiceResponse), fail (HTTP 500),
          silent (reads the request, never answers)
"""

import http.server
import json
import socketserver
import sys
import threading
import time

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

MODE = sys.argv[1]


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {kv.key: value_of(kv.value) for kv in pairs}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if MODE == "silent":
            time.sleep(3600)
            return
        if MODE == "fail":
            self.answer(500, b"")
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(json.dumps({
                        "path": self.path,
                        "headers": headers,
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "status": span.status.code,
                        "message": span.status.message,
                        "links": [[l.trace_id.hex(), l.span_id.hex()] for l in span.links],
                    }), flush=True)
        self.answer(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
# Ends when the test closes its stdin (or dies).
sys.stdin.read()
