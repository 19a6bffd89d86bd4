#!/usr/bin/env python3
"""Loopback origin servers for the in-VM egress test (tests only, 127.0.0.1 only).

    egress-origin.py DIR CERTDIR

Serves three ports on 127.0.0.1 and writes them to DIR/ports ("https N", "http N", "denied N"):
  https   TLS with CERTDIR/host.corral.internal.pem: /hello, and DIR/www/ as static files (a dumb git
          repository for `git ls-remote`)
  http    plain: DIR/www/ as static files (a PEP 503 index for `pip download`), /hello
  denied  plain /hello: the test never allows it, so any request here is a failure
Every request is appended to DIR/origin.jsonl (server, method, path, headers). Never echoes a
request header back.
"""
import functools
import http.server
import json
import os
import ssl
import sys
import threading


def handler_for(name, root, log_path, lock):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=root, **kwargs)

        def log_message(self, *args):
            pass

        def record(self):
            with lock, open(log_path, "a") as f:
                f.write(json.dumps({"server": name, "method": self.command, "path": self.path,
                                    "headers": dict(self.headers.items())}) + "\n")

        def do_GET(self):
            self.record()
            if self.path == "/hello":
                body = f"hello from {name}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def do_HEAD(self):
            self.record()
            super().do_HEAD()

    return Handler


def main():
    out, certs = sys.argv[1], sys.argv[2]
    root = os.path.join(out, "www")
    log_path = os.path.join(out, "origin.jsonl")
    lock = threading.Lock()
    servers = {}
    for name in ("https", "http", "denied"):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                              handler_for(name, root, log_path, lock))
        if name == "https":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(certs, "host.corral.internal.pem"),
                                os.path.join(certs, "host.corral.internal.key"))
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        servers[name] = srv
    with open(os.path.join(out, "ports.tmp"), "w") as f:
        for name, srv in servers.items():
            f.write(f"{name} {srv.server_address[1]}\n")
    os.rename(os.path.join(out, "ports.tmp"), os.path.join(out, "ports"))
    threads = [threading.Thread(target=functools.partial(s.serve_forever), daemon=True)
               for s in servers.values()]
    for t in threads:
        t.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
