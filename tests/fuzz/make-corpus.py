#!/usr/bin/env python3
"""Writes the seed corpus of fuzz-frames: valid sessions, limits and known-bad shapes.

Run from the repository root after a protocol change; the seeds are small and reviewed in git.
Layout of each seed: one byte choosing the fuzzer's chunk size, then the byte stream.
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(__file__), "corpus", "frames")
TYPES = dict(HELLO=1, REQUEST=2, RESPONSE=3, EVENT=4, DATA=5, CREDIT=6, PING=7, PONG=8, CLOSE=9)


def frame(t, payload=b"", channel=0, flags=0, length=None):
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload, separators=(",", ":")).encode()
    n = len(payload) if length is None else length
    return struct.pack(">BBBBII", 0xC0, 0x7A, TYPES[t], flags, channel, n) + payload


hello = frame("HELLO", {"version": 1, "min_version": 1, "role": "host", "nonce": "0" * 32})
seeds = {
    "session": hello
    + frame("REQUEST", {"id": 1, "method": "exec.start",
                        "params": {"argv": ["/bin/true"], "channel": 1, "stdin": True}})
    + frame("DATA", b"input", channel=1)
    + frame("DATA", b"", channel=1, flags=0x80)
    + frame("CREDIT", struct.pack(">I", 65536), channel=1)
    + frame("PING", b"12345678")
    + frame("CLOSE", channel=1),
    "response": frame("RESPONSE", {"id": 9, "error": {"code": "not-found", "message": "x",
                                                     "errno": "ENOENT"}})
    + frame("EVENT", {"event": "exec.exit", "params": {"proc": 1, "channel": 1, "code": 0}}),
    "len-zero-json": frame("REQUEST", b"", length=0),
    "len-max-plus-one": frame("DATA", b"", channel=1, length=4097),
    "len-ffffffff": frame("DATA", b"", channel=1, length=0xFFFFFFFF),
    "truncated": hello[:20],
    "garbage-then-hello": b"\x00\xffgarbage\xc0\x7a\x02" + hello,
    "bad-utf8": frame("REQUEST", b'{"id":1,"method":"\xc3\x28"}'),
    "deep": frame("REQUEST", b'{"a":' + b"[" * 40 + b"]" * 40 + b"}"),
    "wrong-types": frame("REQUEST", {"id": "1", "method": 5, "params": []}),
    "stream3": frame("DATA", b"x", channel=1, flags=3),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    for chunk in (0, 6, 127):
        with open(os.path.join(OUT, f"{name}-{chunk}"), "wb") as f:
            f.write(bytes([chunk]) + data)
