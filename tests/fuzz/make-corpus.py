#!/usr/bin/env python3
"""Writes the seed corpora of fuzz-frames and fuzz-fs-stateful.

fuzz-frames: valid sessions, limits and known-bad shapes. Layout of each seed: one byte choosing
the fuzzer's chunk size, then the byte stream.
fuzz-fs-stateful: request sequences that reach the states where reference counts matter (the
program format is described at the top of fuzz-fs-stateful.c).

Run from the repository root after a protocol change; the seeds are small and reviewed in git.
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


# fuzz-fs-stateful ------------------------------------------------------------------------------

OUT_STATEFUL = os.path.join(os.path.dirname(__file__), "corpus", "fs-stateful")
NAMES = ["a", "b", "x.txt", "d", "sub", "empty", ".git", "hooks", "config", "pre-commit",
         "out", "fifo", "hl", "new", "c", "s", "t", "x.txt~", "HEAD"]
OP = dict(LOOKUP=1, FORGET=2, BATCH_FORGET=3, GETATTR=4, SETATTR=5, READLINK=6, MKDIR=7,
          UNLINK=8, RMDIR=9, SYMLINK=10, RENAME=11, LINK=12, OPEN=13, READ=14, WRITE=15,
          RELEASE=16, FSYNC=17, OPENDIR=18, READDIRPLUS=19, RELEASEDIR=20, STATFS=21, CREATE=22,
          SETXATTR=23, REMOVEXATTR=24, READDIR=25, MKNOD=26, READ_SHM=27, WRITE_SHM=28,
          SHARE=29, RESET=30, APPROVED_DELETE=31)
RO, RW, RW_NODELETE = 0, 1, 2
RDONLY, WRONLY, RDWR, TRUNC = 0, 1, 2, 0x10
ROOT = 0
ALL = 0xFF  # a FORGET count of UINT64_MAX


class Program:
    """Builds a program; node and handle arguments are indices in the fuzzer's tables, which
    the builder predicts (each new entry or handle the server hands out takes the next index)."""

    def __init__(self, s=RW, t=None):
        self.data = bytearray([s + (0 if t is None else 3 + 6 * t)])
        self.nodes = {}  # (parent index, name) -> index
        self.handles = 0

    def step(self, op, *args):
        self.data += bytes([OP[op], *args])
        return self

    def entry(self, parent, name):
        if (parent, name) not in self.nodes:
            self.nodes[(parent, name)] = len(self.nodes) + 1
        return self.nodes[(parent, name)]

    def handle(self):
        self.handles += 1
        return self.handles - 1

    def lookup(self, parent, name):
        self.step("LOOKUP", parent, NAMES.index(name))
        return self.entry(parent, name)

    def open(self, node, flags=RDWR, ok=True):
        self.step("OPEN", node, flags)
        return self.handle() if ok else None

    def opendir(self, node):
        self.step("OPENDIR", node)
        return self.handle()

    def create(self, parent, name, flags=RDWR, mode=0o644, ok=True):
        self.step("CREATE", parent, NAMES.index(name), mode >> 8, mode & 0xFF, flags)
        return (self.entry(parent, name), self.handle()) if ok else None

    def write(self, handle, data=b"new", offset=0):
        return self.step("WRITE", handle, offset, len(data), *data)

    def name_op(self, op, parent, name):
        return self.step(op, parent, NAMES.index(name))

    def rename(self, parent, name, newparent, newname, flags=0):
        return self.step("RENAME", parent, NAMES.index(name), newparent, NAMES.index(newname),
                         flags)

    def share(self, action, arg=0):
        return self.step("SHARE", action, arg)

    def remove_share(self, name):
        return self.share(0 if name == "s" else 1)

    def add_share(self, name, mode, path=0):
        return self.share(2 if name == "s" else 3, mode + 3 * path)

    def set_mode(self, name, mode):
        return self.share(4 if name == "s" else 5, mode)


def forget_open_handle():
    # Issue 17: the guest's FORGET took back the reference an open handle held.
    p = Program()
    f = p.lookup(p.lookup(ROOT, "s"), "x.txt")
    h = p.open(f)
    p.step("FORGET", f, ALL).write(h).step("RELEASE", h)
    return p


def rename_over_open_file(mode):
    p = Program(mode)
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    h = p.open(a)
    p.lookup(s, "x.txt")
    p.rename(s, "x.txt", s, "a").write(h).step("GETATTR", a).step("FORGET", a, 1)
    p.write(h, b"late").step("RELEASE", h).lookup(s, "a")
    return p


def unlink_open_file():
    p = Program()
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    h = p.open(a)
    p.name_op("UNLINK", s, "a").step("READ", h, 0, 1).write(h).step("GETATTR", a)
    p.step("FORGET", a, ALL).step("RELEASE", h).step("GETATTR", a)
    return p


def share_removed_with_open_handles():
    p = Program(RW, RO)
    s = p.lookup(ROOT, "s")
    d = p.lookup(s, "d")
    dh = p.opendir(d)
    fh = p.open(p.lookup(d, "a"))
    p.remove_share("s").step("READ", fh, 0, 1).write(fh).step("READDIRPLUS", dh, 0, 0xFF)
    p.step("READDIR", dh, 0, 0xFF).step("FORGET", s, ALL).step("FORGET", d, ALL)
    p.add_share("s", RW).step("LOOKUP", ROOT, NAMES.index("s")).write(fh)
    p.step("RELEASE", fh).step("RELEASEDIR", dh)
    return p


def readdir_after_remove():
    p = Program(RW, RW)
    root = p.opendir(ROOT)
    p.step("READDIRPLUS", root, 0, 0xFF)  # the share roots "s" and "t" become nodes 1, 2
    p.entry(ROOT, "s")
    t = p.entry(ROOT, "t")
    th = p.opendir(t)
    p.remove_share("t").step("READDIRPLUS", root, 0, 0xFF).step("READDIR", th, 0, 0xFF)
    p.step("READDIRPLUS", th, 0, 0xFF).name_op("LOOKUP", t, "a").step("FORGET", t, ALL)
    p.step("RELEASEDIR", th).step("RELEASEDIR", root)
    return p


def create_forget_release():
    p = Program()
    s = p.lookup(ROOT, "s")
    n, h = p.create(s, "new")
    p.step("FORGET", n, ALL).write(h).step("FSYNC", h, 1).step("RELEASE", h)
    p.name_op("UNLINK", s, "new")
    return p


def mode_changes_with_open_file():
    p = Program(RO)
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    p.open(a, RDWR, ok=False)  # refused in ro
    p.set_mode("s", RW)
    h = p.open(a, RDWR | TRUNC)
    p.set_mode("s", RO).write(h).set_mode("s", RW_NODELETE).write(h)
    p.name_op("UNLINK", s, "a").step("RELEASE", h)
    return p


def rename_folder_with_open_child():
    p = Program()
    s = p.lookup(ROOT, "s")
    d = p.lookup(s, "d")
    h = p.open(p.lookup(d, "a"))
    p.rename(s, "d", s, "new").step("FORGET", d, ALL).write(h)
    p.rename(s, "new", s, "empty", 2).step("FORGET", s, ALL).write(h).step("RELEASE", h)
    return p


def reset_with_open_handles():
    p = Program()
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    h = p.open(a)
    p.step("RESET").write(h).step("GETATTR", a).step("RELEASE", h)
    p.lookup(ROOT, "s")
    return p


def batch_forget():
    p = Program()
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    p.lookup(s, "a")
    b = p.lookup(s, "b")
    h = p.open(b)
    p.step("BATCH_FORGET", 3, a, 1, a, ALL, b, ALL, s, 0xFE).write(h).step("RELEASE", h)
    return p


def read_only_everything():
    p = Program(RO, RO)
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    p.open(a, RDWR | TRUNC, ok=False)
    h = p.open(a, RDONLY)
    p.write(h).step("SETATTR", a, 1, h, 0x08, 0, 0, 0)
    p.create(s, "new", ok=False)
    p.name_op("UNLINK", s, "a").rename(s, "a", s, "b").name_op("RMDIR", s, "empty")
    p.step("MKDIR", s, NAMES.index("new"), 0o7, 0o377).step("SYMLINK", s, 13, 1)
    p.step("WRITE_SHM", h, 0, 1, 0).step("READ_SHM", h, 0, 1, 0).step("RELEASE", h)
    return p


def protected_paths():
    p = Program(RW_NODELETE)
    s = p.lookup(ROOT, "s")
    git = p.lookup(s, ".git")
    hooks = p.lookup(git, "hooks")
    p.create(hooks, "a", RDWR, 0o755, ok=False)
    h = p.open(p.lookup(hooks, "pre-commit"), RDONLY)
    p.rename(s, ".git", s, "new").rename(hooks, "pre-commit", s, "x.txt")
    p.rename(s, "x.txt", hooks, "pre-commit").step("FORGET", git, ALL).write(h)
    p.step("RELEASE", h)
    return p


def approved_delete_of_open_file():
    p = Program(RW_NODELETE)
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    h = p.open(a)
    p.step("APPROVED_DELETE", 0, 0, NAMES.index("a"), 0).write(h).step("GETATTR", a)
    p.step("APPROVED_DELETE", 0, 1, NAMES.index("d"), NAMES.index("a"))
    p.step("FORGET", a, ALL).step("RELEASE", h)
    return p


def nested_shares():
    p = Program(RW)
    p.add_share("t", RO, 2)  # "t" is share/d, read-only
    s = p.lookup(ROOT, "s")
    t = p.lookup(ROOT, "t")
    h = p.open(p.lookup(p.lookup(s, "d"), "a"))
    p.open(p.lookup(t, "a"), RDWR, ok=False)
    p.write(h).rename(s, "d", s, "new").write(1).set_mode("t", RW).name_op("UNLINK", t, "a")
    p.step("RELEASE", h)
    return p


def symlinks_and_links():
    p = Program()
    s = p.lookup(ROOT, "s")
    out = p.lookup(s, "out")
    p.step("READLINK", out).step("OPEN", out, RDWR).step("OPENDIR", out)
    p.name_op("LOOKUP", out, "a")
    p.step("SYMLINK", s, NAMES.index("new"), 1).step("LINK", p.lookup(s, "hl"), s, 13)
    p.step("LINK", p.lookup(s, "a"), s, NAMES.index("c"))
    p.step("OPEN", p.lookup(s, "hl"), RDWR).step("OPEN", p.lookup(s, "fifo"), RDONLY)
    return p


def handle_limit():
    p = Program()
    a = p.lookup(p.lookup(ROOT, "s"), "a")
    for _ in range(20):
        p.open(a, RDONLY)
    p.handles = 16
    p.step("FORGET", a, ALL)
    for h in range(0, 16, 3):
        p.step("RELEASE", h)
    return p


def create_at_handle_limit():
    # A CREATE that made the file but found no free handle left its new node behind.
    p = Program()
    s = p.lookup(ROOT, "s")
    for _ in range(16):
        p.opendir(s)
    p.create(s, "new", ok=False)
    return p


def release_after_share_removed():
    # RELEASE of a written file whose share went away: the audit line read the freed share.
    p = Program()
    s = p.lookup(ROOT, "s")
    a = p.lookup(s, "a")
    h = p.open(a)
    p.write(h).step("FORGET", s, ALL).step("FORGET", a, ALL).remove_share("s")
    p.step("RELEASE", h)
    return p


stateful_seeds = {
    "rename-over-open-file": rename_over_open_file(RW),
    "rename-over-open-file-nodelete": rename_over_open_file(RW_NODELETE),
    "unlink-open-file": unlink_open_file(),
    "share-removed-with-open-handles": share_removed_with_open_handles(),
    "readdir-after-remove": readdir_after_remove(),
    "create-forget-release": create_forget_release(),
    "mode-changes-with-open-file": mode_changes_with_open_file(),
    "rename-folder-with-open-child": rename_folder_with_open_child(),
    "reset-with-open-handles": reset_with_open_handles(),
    "batch-forget": batch_forget(),
    "read-only-everything": read_only_everything(),
    "protected-paths": protected_paths(),
    "approved-delete-of-open-file": approved_delete_of_open_file(),
    "nested-shares": nested_shares(),
    "symlinks-and-links": symlinks_and_links(),
    "handle-limit": handle_limit(),
    "forget-open-handle": forget_open_handle(),
    "create-at-handle-limit": create_at_handle_limit(),
    "release-after-share-removed": release_after_share_removed(),
}

# Seeds that still crash the server: written once the fix is in, so that the replay in suite
# `fuzz` keeps passing meanwhile (each one names the bug it reproduces).
PENDING_FIX: set = set()

os.makedirs(OUT_STATEFUL, exist_ok=True)
for name, program in stateful_seeds.items():
    if name in PENDING_FIX:
        continue
    with open(os.path.join(OUT_STATEFUL, name), "wb") as f:
        f.write(bytes(program.data))
