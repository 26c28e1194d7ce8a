#!/usr/bin/python3
"""s3_fault_proxy: an HTTP proxy in front of an S3 server that breaks requests on purpose.

Usage: s3_fault_proxy.py UPSTREAM_PORT LISTEN_PORT EVERY FAULTS LOG

Every request is forwarded to 127.0.0.1:UPSTREAM_PORT unchanged (the Host header too, so
Signature V4 still verifies), except every EVERY-th one, which gets the next fault of the
comma-separated FAULTS, in turn:
  slowdown     503 with S3's <Error><Code>SlowDown</Code>, no Retry-After
  retry_after  503 SlowDown with Retry-After: 1
  internal     500 InternalError
  reset        the connection reset (RST) before any answer
  cut          the upstream's status and full Content-Length, half the body, then close
  stall        nothing for 3 s, then close
  slow_reads   an object GET (no query) waits 40 ms, then is forwarded (with EVERY=1:
               a store 40 ms away for reads, the listing at loopback speed)
  hang_reads   an object GET (no query: not a listing) gets nothing for 60 s, then a
               close; any other request is forwarded (with EVERY=1: the listing works,
               every read hangs)
  delay        0.3 s, then the request is forwarded (a slow store: concurrent readers
               of one object overlap)
  deny_part2   an UploadPart of part 2 (PUT ...partNumber=2...) gets 403 AccessDenied
               (not retried); any other request is forwarded
  hang_part2   an UploadPart of part 2 gets nothing for 60 s, then a close; any other
               request is forwarded
  lose_complete  the first CompleteMultipartUpload (POST ...?uploadId=...) is forwarded
               and its answer lost (the connection reset after the upstream answered: the
               object exists); a later Complete is answered 404 NoSuchUpload, as stores
               that forget finished uploads answer (radosgw itself answers 200 again);
               any other request is forwarded
  drop_complete  as lose_complete, but the first Complete never reaches the upstream
               (nothing completed; the upload is still open there)
Each fault is logged to LOG as one line "FAULT method path".
"""
import http.client
import http.server
import socket
import struct
import sys
import threading
import time

UPSTREAM = int(sys.argv[1])
PORT = int(sys.argv[2])
EVERY = int(sys.argv[3])
FAULTS = sys.argv[4].split(",")
LOG = open(sys.argv[5], "a", buffering=1)
lock = threading.Lock()
count = [0]
completes_lost = [0]


def next_fault():
    with lock:
        count[0] += 1
        n = count[0]
    if n % EVERY:
        return None
    return FAULTS[(n // EVERY - 1) % len(FAULTS)]


def s3_error(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s'
            '</Message></Error>' % (code, message)).encode()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def upstream(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=30)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp, data

    def handle_one(self):
        fault = next_fault()
        if fault in ("hang_reads", "slow_reads") and (self.command != "GET" or "?" in self.path):
            fault = None
        if fault == "deny_part2" and (self.command != "PUT" or "partNumber=2&" not in self.path):
            fault = None
        if fault == "hang_part2" and (self.command != "PUT" or "partNumber=2&" not in self.path):
            fault = None
        if fault in ("lose_complete", "drop_complete"):
            complete = self.command == "POST" and "uploadId=" in self.path
            with lock:
                retried = complete and completes_lost[0] > 0
                completes_lost[0] += complete
            if retried:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                return self.reply(404, s3_error("NoSuchUpload", "The specified upload does not exist."))
            fault = fault if complete else None
        if fault and fault != "slow_reads":
            LOG.write("%s %s %s\n" % (fault, self.command, self.path))
        if fault == "slowdown":
            return self.reply(503, s3_error("SlowDown", "Please reduce your request rate."))
        if fault == "retry_after":
            return self.reply(503, s3_error("SlowDown", "Please reduce your request rate."),
                              [("Retry-After", "1")])
        if fault == "internal":
            return self.reply(500, s3_error("InternalError", "We encountered an internal error."))
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "delay":
            time.sleep(0.3)
            fault = None
        if fault == "deny_part2":
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            return self.reply(403, s3_error("AccessDenied", "Access Denied"))
        if fault in ("hang_reads", "hang_part2"):
            time.sleep(60)
            self.close_connection = True
            return
        if fault == "drop_complete":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "stall":
            time.sleep(3)
            self.close_connection = True
            return
        if fault == "slow_reads":
            time.sleep(0.04)
        resp, data = self.upstream()
        if fault == "lose_complete":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fault == "cut" and len(data) > 1:
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_one


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5: a client opening dozens of connections at
    # once (read-ahead raised to 128 in flight) lost SYNs and waited out their 1-3-7 s
    # retransmits, which no real store does.
    request_queue_size = 256


Server(("127.0.0.1", PORT), Proxy).serve_forever()
