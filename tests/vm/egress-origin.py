#!/usr/bin/env python3
"""Loopback origin servers for the in-VM egress test (tests only, 127.0.0.1 only).

    egress-origin.py DIR CERTDIR

Serves four ports on 127.0.0.1 and writes them to DIR/ports ("https N", "http N", "denied N",
"other N"):
  https   TLS with CERTDIR/host.corral.internal.pem: /hello, and DIR/www/ as static files (a dumb git
          repository for `git ls-remote`), and /reflect?form=F[&pad=N]: the request's headers
          sent back as a careless or hostile bound host would (see reflect())
  http    plain: DIR/www/ as static files (a PEP 503 index for `pip download`), /hello
  denied  plain /hello: the test never allows it, so any request here is a failure
  other   TLS like https, on another port of the same name: no binding names it
Every request is appended to DIR/origin.jsonl (server, method, path, headers).
"""
import base64
import functools
import gzip
import http.server
import json
import os
import ssl
import sys
import threading
import urllib.parse


def reflect(handler, form, pad):
    """The request's headers back in form: base64/base64url (after pad bytes), hex, reversed,
    json (with "\\/" as PHP writes it), gzip (whatever was asked), location (a 302 with them
    percent-encoded), chunked (5-byte chunks), range (a 206 of the asked Range), partial (206)."""
    handler.protocol_version = "HTTP/1.1"  # chunks need it; the proxy asks to close anyway
    text = "".join(f"{k}: {v}\n" for k, v in handler.headers.items()).encode()
    status, extra, body = 200, {}, text
    if form in ("base64", "base64url"):
        enc = base64.b64encode if form == "base64" else base64.urlsafe_b64encode
        body = enc(b"xyz"[:pad] + text)
    elif form == "hex":
        body = text.hex().encode()
    elif form == "reversed":
        body = text[::-1]
    elif form == "json":
        body = json.dumps({"headers": text.decode()}).replace("/", "\\/").encode()
    elif form == "gzip":
        body, extra = gzip.compress(text), {"Content-Encoding": "gzip"}
    elif form == "location":
        status, body = 302, b""
        extra = {"Location": "/next?h=" + urllib.parse.quote(text.decode(), safe="")}
    elif form == "partial":
        status, extra = 206, {"Content-Range": f"bytes 0-{len(text) - 1}/*"}
    elif form == "range" and handler.headers.get("Range", "").startswith("bytes="):
        a, b = (int(x) for x in handler.headers["Range"][6:].split("-"))
        status, body = 206, text[a:b + 1]
        extra = {"Content-Range": f"bytes {a}-{b}/{len(text)}"}
    handler.send_response(status)
    for k, v in extra.items():
        handler.send_header(k, v)
    if form == "chunked":
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for i in range(0, len(body), 5):
            piece = body[i:i + 5]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")
        return
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


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
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/reflect" and name in ("https", "other"):
                q = urllib.parse.parse_qs(url.query)
                reflect(self, q.get("form", ["plain"])[0], int(q.get("pad", ["0"])[0]))
                return
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
    for name in ("https", "http", "denied", "other"):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                              handler_for(name, root, log_path, lock))
        if name in ("https", "other"):
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
