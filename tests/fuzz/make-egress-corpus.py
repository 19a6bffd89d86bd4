#!/usr/bin/env python3
"""Writes the seed corpora of fuzz-proxy-request, fuzz-policy, fuzz-client-hello and
fuzz-upstream-reply (tests/fuzz/corpus/<name>/). Run from anywhere after a format change; seeds are reviewed in git.
The ClientHellos are real ones, made by Python's ssl module into a memory BIO."""
import base64
import json
import os
import ssl
import struct
import urllib.parse

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(name, seeds):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    for key, data in seeds.items():
        with open(os.path.join(d, key), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())


def client_hello(sni):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def split_records(hello, size):
    body = hello[5:]
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += bytes([22, 3, 1, len(part) >> 8, len(part) & 0xff]) + part
    return out


write("proxy-request", {
    "get": "GET http://api.example.com/a?b=c HTTP/1.1\r\nHost: api.example.com\r\n"
           "Proxy-Authorization: Basic Y29ycmFsOnRva2Vu\r\nConnection: keep-alive\r\n\r\n",
    "connect": "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
    "connect-v6": "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n",
    "post-chunked": "POST http://a.example/upload HTTP/1.1\r\nHost: a.example\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "post-length": "POST http://a.example/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
    "dup-host": "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
    "numeric": "GET http://0x7f.1:80/ HTTP/1.0\r\n\r\n",
    "zone": "GET http://[fe80::1%25eth0]/ HTTP/1.0\r\n\r\n",
    "folded": "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n X: y\r\n\r\n",
    "bare-lf": "GET http://a.example/ HTTP/1.1\nHost: a.example\n\n",
    "nul": b"GET http://a.example\x00.evil/ HTTP/1.0\r\n\r\n",
    "cl-te": "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 4\r\n"
             "Transfer-Encoding: chunked\r\n\r\n",
    "authority": "[::ffff:127.0.0.1]:8080",
})

def frame(t, payload=b"", channel=0, flags=0):
    if isinstance(payload, dict):
        payload = json.dumps(payload, separators=(",", ":")).encode()
    return struct.pack(">BBBBII", 0xC0, 0x7A, t, flags, channel, len(payload)) + payload


def open_req(rid, channel):
    return frame(2, {"id": rid, "method": "egress.open", "params": {"channel": channel}})


head = b"GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"
write("proxy-request", {
    "stream-open-data": open_req(1, 1) + frame(5, head, 1) + frame(6, struct.pack(">I", 100), 1)
                        + frame(5, b"", 1, 0x80) + frame(9, b"", 1),
    "stream-reuse-id": open_req(1, 5) + open_req(2, 5),
    "stream-over-credit": open_req(1, 1) + frame(5, b"x" * 65536, 1) * 5,
    "stream-bad-json": frame(2, b'{"id":1,"method":"egress.open","params":{"channel":"1"}}'),
    "stream-unknown-channel": frame(5, b"data", 77) + frame(6, struct.pack(">I", 1), 77),
})

write("policy", {
    "allowlist": '{"preset":"allowlist","allow":["*.example.com","api.github.com:443",'
                 '"127.0.0.1:8080","[::1]:8080"],"deny":["bad.example.com"]}',
    "open-web": '{"preset":"open-web","deny":["*.evil.test"]}',
    "none": '{"preset":"none"}',
    "packages": '{"preset":"package-managers","allow":[]}',
    "bad-rule": '{"allow":["0x7f.1"]}',
    "nul-escape": '{"allow":["a.com\\u0000.evil"]}',
    "unknown-key": '{"preset":"none","rules":[]}',
    "deep": "[" * 200 + "]" * 200,
})

sni = client_hello("api.example.com")
write("client-hello", {
    "sni": sni,
    "no-sni": client_hello(None),
    "split": split_records(sni, 50),
    "truncated": sni[: len(sni) // 2],
    "long-sni": client_hello("a" * 63 + "." + "b" * 63 + ".example.com"),
    "not-tls": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
})

# fuzz-upstream-reply masks SECRET (tests/fuzz/fuzz-upstream-reply.c) in what an origin sends.
SECRET = b"s3cr/t+K&y%20"
echo = b"Authorization: Bearer " + SECRET + b"\r\n"


def reply(status, headers, body):
    head = b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers)
    return head + b"\r\n" + body


def chunked(body, size):
    out = b""
    for i in range(0, len(body), size):
        out += b"%x\r\n" % len(body[i:i + size]) + body[i:i + size] + b"\r\n"
    return out + b"0\r\nX-Trailer: " + SECRET + b"\r\n\r\n"


write("upstream-reply", {
    "plain": reply(b"200 OK", [b"Content-Length: %d" % len(echo)], echo),
    "base64": reply(b"200 OK", [], base64.b64encode(b"x" + echo)),
    "hex": reply(b"200 OK", [], echo.hex().encode()),
    "json": reply(b"200 OK", [], json.dumps({"h": echo.decode()}).replace("/", "\\/").encode()),
    "location": reply(b"302 Found", [b"Location: /x?h=" + urllib.parse.quote(echo).encode()], b""),
    "chunked": reply(b"200 OK", [b"Transfer-Encoding: chunked"], chunked(echo, 3)),
    "interim": reply(b"103 Early Hints", [b"Link: </s>"], b"") + reply(b"200 OK", [], echo),
    "gzip": reply(b"200 OK", [b"Content-Encoding: gzip"], b"\x1f\x8b\x08\x00"),
    "partial": reply(b"206 Partial Content", [b"Content-Range: bytes 0-3/9"], SECRET[:4]),
    "bad-chunk": reply(b"200 OK", [b"Transfer-Encoding: chunked"], b"zz\r\n" + SECRET),
    "bad-status": b"HTTP/1.1 2x0 OK\r\n\r\n",
})
