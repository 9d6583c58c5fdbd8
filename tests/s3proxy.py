"""A small fault-injecting HTTP proxy in front of the local S3 server (tests only).

moto answers every request; real stores also refuse (403), throttle (503 SlowDown) and
lose objects.  :class:`FaultProxy` listens on 127.0.0.1 on a free port, forwards each
request to ``upstream`` unchanged, and lets a test decide per request: ``rule(method, path,
n)`` returns None (forward) or ``(status, code)`` (answer that S3 error instead), ``n`` being
the request's number.  ``silent=True`` accepts connections and never answers (an endpoint
that hangs).
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ERR = (
    "<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{code}</Message>"
    "<RequestId>nbbench-test</RequestId></Error>"
)


class FaultProxy:
    def __init__(self, upstream: str, rule=None, silent: bool = False):
        u = urllib.parse.urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port
        self.rule = rule
        self.silent = silent
        self.count = 0
        self.injected = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.count += 1
                    n = proxy.count
                verdict = proxy.rule(self.command, self.path, n) if proxy.rule else None
                if verdict is not None:
                    with proxy._lock:
                        proxy.injected += 1
                    status, code = verdict
                    data = _ERR.format(code=code).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection(proxy.up_host, proxy.up_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        if silent:
            self._sock = socket.socket()
            self._sock.bind(("127.0.0.1", 0))
            self._sock.listen(64)
            self.port = self._sock.getsockname()[1]
            self._server = None
        else:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self._server.daemon_threads = True
            self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        if self._server is not None:
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        else:
            self._sock.close()
