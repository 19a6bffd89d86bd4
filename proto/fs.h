/* fs.h — the file-service wire format between the guest FUSE client (corral-fs) and the host
 * file server (corral-fsd). See FS-PROTOCOL.md.
 *
 * Frames use the common 12-byte header of proto.h with three frame types of their own
 * (PROTO_FRAME_FS_REQUEST / _FS_REPLY / _FS_NOTIFY); the header's channel field carries the
 * request id. Payloads are binary, big-endian, and decoded with bounds-checked readers: a
 * decoder never reads past the payload and never allocates.
 *
 * Plain C, no GLib: linked by the guest client and by the host server.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_PROTO_VERSION 1

/* Node 1 is the /workspace root: a virtual, read-only directory whose entries are the shares. */
#define FS_ROOT_NODE 1

/* Limits (the server enforces them; the client never asks for more). */
#define FS_MAX_NAME 255 /* one path component, bytes */
#define FS_MAX_SYMLINK 4095 /* a symlink target, bytes */
/* READ size / WRITE data per request: 1 MiB, what `dd bs=1M` and the kernel's largest FUSE
 * request carry (the frame limit has a page of room for the headers). */
#define FS_MAX_IO (1024u * 1024u)
#define FS_MAX_DIR_REPLY (256u * 1024u) /* READDIR(PLUS) reply payload */
#define FS_MAX_FORGETS 1024 /* entries in one BATCH_FORGET */

typedef enum {
        FS_OP_LOOKUP = 1, /* node, name -> entry */
        FS_OP_FORGET = 2, /* node, u64 nlookup -> (no reply) */
        FS_OP_BATCH_FORGET = 3, /* u32 count, count x (node, nlookup) -> (no reply) */
        FS_OP_GETATTR = 4, /* node -> attr */
        FS_OP_SETATTR = 5, /* node, handle, FsSetattr -> attr */
        FS_OP_READLINK = 6, /* node -> string */
        FS_OP_MKDIR = 7, /* node, name, u32 mode -> entry */
        FS_OP_UNLINK = 8, /* node, name -> empty */
        FS_OP_RMDIR = 9, /* node, name -> empty */
        FS_OP_SYMLINK = 10, /* node, name, string target -> entry */
        FS_OP_RENAME = 11, /* node, name, node newparent, name newname, u32 flags -> empty */
        FS_OP_LINK = 12, /* node, node newparent, name newname -> entry */
        FS_OP_OPEN = 13, /* node, u32 flags -> u64 handle, u32 open_flags */
        FS_OP_READ = 14, /* handle, u64 offset, u32 size -> raw bytes */
        FS_OP_WRITE = 15, /* handle, u64 offset, raw bytes -> u32 written */
        FS_OP_RELEASE = 16, /* handle -> empty */
        FS_OP_FSYNC = 17, /* handle, u32 datasync -> empty */
        FS_OP_OPENDIR = 18, /* node -> u64 handle */
        FS_OP_READDIRPLUS = 19, /* handle, u64 offset, u32 size -> dirents (each a lookup) */
        FS_OP_RELEASEDIR = 20, /* handle -> empty */
        FS_OP_STATFS = 21, /* node -> FsStatfs */
        FS_OP_CREATE =
                22, /* node, name, u32 mode, u32 flags -> entry, u64 handle, u32 open_flags */
        FS_OP_SETXATTR = 23, /* node, name -> empty (always refused: EROFS or ENOTSUP) */
        FS_OP_REMOVEXATTR = 24, /* node, name -> empty (always refused) */
        FS_OP_READDIR = 25, /* handle, u64 offset, u32 size -> dirents without attributes */
        FS_OP_MKNOD = 26, /* node, name, u32 mode, u32 rdev -> (always refused: EPERM) */
        /* File contents through the shared-memory region (FS-PROTOCOL.md, "Shared memory"): */
        FS_OP_READ_SHM = 27, /* handle, u64 offset, u32 size, u32 shm_offset -> u32 read */
        FS_OP_WRITE_SHM = 28, /* handle, u64 offset, u32 size, u32 shm_offset -> u32 written */
} FsOp;

#define FS_OP_MAX FS_OP_WRITE_SHM

/* The shared-memory region: a header page (FS_SHM_MAGIC, then the server's HELLO nonce), then
 * file contents at offsets the client chooses. */
#define FS_SHM_HEADER 4096u
#define FS_SHM_MAGIC "corral-fs-shm-1"
#define FS_SHM_MAX (256u * 1024u * 1024u)

/* OPEN / CREATE flags on the wire (not the host's O_* values). */
#define FS_O_ACCMODE 0x3u
#define FS_O_RDONLY 0x0u
#define FS_O_WRONLY 0x1u
#define FS_O_RDWR 0x2u
#define FS_O_TRUNC 0x10u
#define FS_O_APPEND 0x20u
#define FS_O_EXCL 0x40u
#define FS_O_KNOWN (FS_O_ACCMODE | FS_O_TRUNC | FS_O_APPEND | FS_O_EXCL)

/* open_flags in OPEN/CREATE replies */
#define FS_OPEN_KEEP_CACHE 0x1u /* the file did not change since the client last cached it */

/* RENAME flags */
#define FS_RENAME_NOREPLACE 0x1u
#define FS_RENAME_EXCHANGE 0x2u

/* SETATTR valid bits */
#define FS_SET_MODE 0x01u
#define FS_SET_UID 0x02u
#define FS_SET_GID 0x04u
#define FS_SET_SIZE 0x08u
#define FS_SET_ATIME 0x10u
#define FS_SET_MTIME 0x20u
#define FS_SET_ATIME_NOW 0x40u
#define FS_SET_MTIME_NOW 0x80u
#define FS_SET_KNOWN 0xFFu

/* NOTIFY kinds (server -> client, header channel 0) */
typedef enum {
        FS_NOTIFY_INVAL_ENTRY = 1, /* node parent, name: the name is gone or changed */
        FS_NOTIFY_INVAL_NODE = 2, /* node: attributes/content changed */
} FsNotifyKind;

typedef struct {
        uint64_t ino; /* the host inode number (stable, what stat() shows) */
        uint64_t size;
        uint64_t blocks;
        uint32_t mode; /* S_IFMT bits + permission bits */
        uint32_t nlink;
        int64_t atime_s, mtime_s, ctime_s;
        uint32_t atime_ns, mtime_ns, ctime_ns;
} FsAttr;

typedef struct {
        uint64_t node; /* the server's node id: the client's FUSE inode */
        uint64_t generation;
        FsAttr attr;
} FsEntry;

typedef struct {
        uint32_t valid; /* FS_SET_* */
        uint32_t mode;
        uint32_t uid, gid;
        uint64_t size;
        int64_t atime_s, mtime_s;
        uint32_t atime_ns, mtime_ns;
} FsSetattr;

typedef struct {
        uint64_t blocks, bfree, bavail, files, ffree;
        uint32_t bsize, namelen;
} FsStatfs;

/* A string on the wire: u16 length + bytes (no terminator). Borrowed from the payload. */
typedef struct {
        const char *ptr;
        size_t len;
} FsStr;

/* A decoded request. Fields not used by op are zero. Strings borrow the payload. */
typedef struct {
        uint16_t op;
        uint64_t node; /* parent for name-based ops */
        uint64_t node2; /* newparent (RENAME, LINK) */
        uint64_t handle;
        uint64_t offset;
        uint64_t nlookup;
        uint32_t size;
        uint32_t flags;
        uint32_t mode;
        uint32_t rdev;
        FsStr name;
        FsStr name2; /* RENAME newname, LINK newname, SYMLINK target */
        FsSetattr set;
        const uint8_t *data; /* WRITE payload, BATCH_FORGET entries */
        size_t data_len;
        uint32_t count; /* BATCH_FORGET */
        uint32_t shm_offset; /* READ_SHM, WRITE_SHM */
} FsRequest;

/* Bounds-checked big-endian reader / writer ---------------------------------------------------- */

typedef struct {
        const uint8_t *p;
        size_t left;
        bool bad; /* a read ran past the end; every later read returns zeros */
} FsReader;

void fs_reader_init (FsReader *r, const void *data, size_t len);
uint8_t fs_read_u8 (FsReader *r);
uint16_t fs_read_u16 (FsReader *r);
uint32_t fs_read_u32 (FsReader *r);
uint64_t fs_read_u64 (FsReader *r);
int64_t fs_read_i64 (FsReader *r);
FsStr fs_read_str (FsReader *r, size_t max_len);
const uint8_t *fs_read_bytes (FsReader *r, size_t n);
void fs_read_attr (FsReader *r, FsAttr *ret);
void fs_read_entry (FsReader *r, FsEntry *ret);

typedef struct {
        uint8_t *buf;
        size_t cap;
        size_t len;
        bool overflow; /* a write did not fit; the buffer content is unusable */
} FsWriter;

void fs_writer_init (FsWriter *w, void *buf, size_t cap);
void fs_write_u8 (FsWriter *w, uint8_t v);
void fs_write_u16 (FsWriter *w, uint16_t v);
void fs_write_u32 (FsWriter *w, uint32_t v);
void fs_write_u64 (FsWriter *w, uint64_t v);
void fs_write_i64 (FsWriter *w, int64_t v);
void fs_write_str (FsWriter *w, const char *s, size_t len);
void fs_write_bytes (FsWriter *w, const void *data, size_t n);
void fs_write_attr (FsWriter *w, const FsAttr *attr);
void fs_write_entry (FsWriter *w, const FsEntry *entry);
/* Reserves n bytes and returns where they start (NULL on overflow). */
uint8_t *fs_write_reserve (FsWriter *w, size_t n);

/* Requests ------------------------------------------------------------------------------------ */

/* Decodes and validates a request payload: known op, every field present, no trailing bytes,
 * names are 1..FS_MAX_NAME bytes without '/' or NUL and not "." or "..", symlink targets
 * 1..FS_MAX_SYMLINK bytes without NUL, flags and valid bits known, sizes within FS_MAX_IO /
 * FS_MAX_DIR_REPLY. Returns 0, or -EINVAL (malformed), -ENAMETOOLONG (a name or target over
 * its limit), -ENOSYS (unknown op). Nothing in *ret is meaningful on error. */
int fs_request_decode (const uint8_t *payload, size_t len, FsRequest *ret);

/* Encodes a request (the inverse of fs_request_decode); -EMSGSIZE if it does not fit. */
int fs_request_encode (const FsRequest *req, FsWriter *w);

/* true for a single valid path component (see fs_request_decode). */
bool fs_name_valid (const char *name, size_t len);

/* Replies ------------------------------------------------------------------------------------- */

/* Every reply starts with: u32 errno (0 = success), then on error: string rule (0..64 bytes,
 * the policy rule that refused the request, empty when none), and nothing else. On success the
 * op-specific body follows (see FS-PROTOCOL.md). */
#define FS_MAX_RULE 64

void fs_reply_error (FsWriter *w, int errnum, const char *rule);

/* Dirents in READDIR / READDIRPLUS replies: u64 next_offset, u32 type (S_IFMT bits),
 * string name, then for READDIRPLUS an FsEntry. The reply body is u32 count + count dirents. */
typedef struct {
        uint64_t next_offset;
        uint32_t type;
        FsStr name;
        FsEntry entry; /* READDIRPLUS only */
} FsDirent;

const char *fs_op_name (uint16_t op);
