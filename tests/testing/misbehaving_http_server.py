#!/usr/bin/python3
"""A web server that misbehaves on purpose, for the HTTP shard tests.

usage: misbehaving_http_server.py ROOT PORT

Serves files under ROOT with Range support (HTTP/1.1, keep-alive); the first path
segment picks the behaviour for the file named by the rest:
  /ok/F          correct answers
  /stall/F       headers, half the body, then silence (the client must time out)
  /close/F       headers, half the body, then the connection closes
  /lie/F         a Content-Length one byte larger than the body, then close
  /short/F       a Content-Range naming more bytes than the body it sends (keep-alive)
  /flaky/F       503 to every odd-numbered request for F, correct answers otherwise
  /die_after/N/F correct for the first N requests for F, 500 for every one after
  /drip/F        correct headers (Content-Length too), then the body a byte every 0.2 s
  /drip_after/N/F correct for the first N requests for F, then /drip/ for every one after
  /silent/F      reads the request, then never answers (the connection stays open)
  /silent_after/N/F correct for the first N requests for F, then /silent/ for the rest
"""
import collections
import http.server
import os
import re
import sys
import threading
import time

ROOT = sys.argv[1]
COUNTS = collections.Counter()
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = self.path.lstrip("/").split("/")
        mode, rest = parts[0], parts[1:]
        limit = 0
        if mode in ("die_after", "drip_after", "silent_after"):
            limit, rest = int(rest[0]), rest[1:]
        name = "/".join(rest)
        with LOCK:
            COUNTS[self.path] += 1
            count = COUNTS[self.path]
        path = os.path.join(ROOT, name)
        if mode == "silent" or (mode == "silent_after" and count > limit):
            time.sleep(600)
            self.close_connection = True
            return
        drip = mode == "drip" or (mode == "drip_after" and count > limit)
        if not os.path.isfile(path):
            return self.status_only(404)
        if (mode == "flaky" and count % 2 == 1) or (mode == "die_after" and count > limit):
            return self.status_only(503 if mode == "flaky" else 500)
        with open(path, "rb") as f:
            data = f.read()
        first, last = 0, len(data) - 1
        m = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if m:
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else last, len(data) - 1)
            if first >= len(data):
                return self.status_only(416)
        body = data[first:last + 1]
        self.send_response(206 if m else 200)
        declared = len(body) + (1 if mode == "lie" else 0)
        if m:
            shown_last = last + (100 if mode == "short" else 0)
            self.send_header("Content-Range", f"bytes {first}-{shown_last}/{len(data)}")
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        if mode in ("stall", "close"):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if mode == "stall":
                time.sleep(60)
            self.close_connection = True
            return
        if drip:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(0.2)
            return
        self.wfile.write(body)
        if mode == "lie":
            self.close_connection = True

    def status_only(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
