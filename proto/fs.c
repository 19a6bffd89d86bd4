/* fs.c — encoding and validation of the file-service messages (see fs.h, FS-PROTOCOL.md).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs.h"

#include <errno.h>
#include <string.h>

/* Reader -------------------------------------------------------------------------------------- */

void
fs_reader_init (FsReader *r, const void *data, size_t len)
{
        r->p = data;
        r->left = len;
        r->bad = false;
}

const uint8_t *
fs_read_bytes (FsReader *r, size_t n)
{
        const uint8_t *p;

        if (r->bad || r->left < n) {
                r->bad = true;
                r->left = 0;
                return NULL;
        }
        p = r->p;
        r->p += n;
        r->left -= n;
        return p;
}

uint8_t
fs_read_u8 (FsReader *r)
{
        const uint8_t *p = fs_read_bytes (r, 1);
        return p ? p[0] : 0;
}

uint16_t
fs_read_u16 (FsReader *r)
{
        const uint8_t *p = fs_read_bytes (r, 2);
        return p ? (uint16_t) ((p[0] << 8) | p[1]) : 0;
}

uint32_t
fs_read_u32 (FsReader *r)
{
        const uint8_t *p = fs_read_bytes (r, 4);
        return p ? ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3]
                 : 0;
}

uint64_t
fs_read_u64 (FsReader *r)
{
        uint64_t hi = fs_read_u32 (r);
        uint64_t lo = fs_read_u32 (r);
        return (hi << 32) | lo;
}

int64_t
fs_read_i64 (FsReader *r)
{
        return (int64_t) fs_read_u64 (r);
}

FsStr
fs_read_str (FsReader *r, size_t max_len)
{
        FsStr s = { NULL, 0 };
        uint16_t len = fs_read_u16 (r);
        const uint8_t *p;

        if (len > max_len) {
                r->bad = true;
                r->left = 0;
                return s;
        }
        p = fs_read_bytes (r, len);
        if (p) {
                s.ptr = (const char *) p;
                s.len = len;
        }
        return s;
}

void
fs_read_attr (FsReader *r, FsAttr *ret)
{
        ret->ino = fs_read_u64 (r);
        ret->size = fs_read_u64 (r);
        ret->blocks = fs_read_u64 (r);
        ret->mode = fs_read_u32 (r);
        ret->nlink = fs_read_u32 (r);
        ret->atime_s = fs_read_i64 (r);
        ret->atime_ns = fs_read_u32 (r);
        ret->mtime_s = fs_read_i64 (r);
        ret->mtime_ns = fs_read_u32 (r);
        ret->ctime_s = fs_read_i64 (r);
        ret->ctime_ns = fs_read_u32 (r);
}

void
fs_read_entry (FsReader *r, FsEntry *ret)
{
        ret->node = fs_read_u64 (r);
        ret->generation = fs_read_u64 (r);
        fs_read_attr (r, &ret->attr);
}

/* Writer -------------------------------------------------------------------------------------- */

void
fs_writer_init (FsWriter *w, void *buf, size_t cap)
{
        w->buf = buf;
        w->cap = cap;
        w->len = 0;
        w->overflow = false;
}

uint8_t *
fs_write_reserve (FsWriter *w, size_t n)
{
        uint8_t *p;

        if (w->overflow || w->cap - w->len < n) {
                w->overflow = true;
                return NULL;
        }
        p = w->buf + w->len;
        w->len += n;
        return p;
}

void
fs_write_bytes (FsWriter *w, const void *data, size_t n)
{
        uint8_t *p = fs_write_reserve (w, n);
        if (p && n)
                memcpy (p, data, n);
}

void
fs_write_u8 (FsWriter *w, uint8_t v)
{
        fs_write_bytes (w, &v, 1);
}

void
fs_write_u16 (FsWriter *w, uint16_t v)
{
        uint8_t b[2] = { (uint8_t) (v >> 8), (uint8_t) v };
        fs_write_bytes (w, b, 2);
}

void
fs_write_u32 (FsWriter *w, uint32_t v)
{
        uint8_t b[4] = { (uint8_t) (v >> 24), (uint8_t) (v >> 16), (uint8_t) (v >> 8),
                         (uint8_t) v };
        fs_write_bytes (w, b, 4);
}

void
fs_write_u64 (FsWriter *w, uint64_t v)
{
        fs_write_u32 (w, (uint32_t) (v >> 32));
        fs_write_u32 (w, (uint32_t) v);
}

void
fs_write_i64 (FsWriter *w, int64_t v)
{
        fs_write_u64 (w, (uint64_t) v);
}

void
fs_write_str (FsWriter *w, const char *s, size_t len)
{
        if (len > UINT16_MAX) {
                w->overflow = true;
                return;
        }
        fs_write_u16 (w, (uint16_t) len);
        fs_write_bytes (w, s, len);
}

void
fs_write_attr (FsWriter *w, const FsAttr *a)
{
        fs_write_u64 (w, a->ino);
        fs_write_u64 (w, a->size);
        fs_write_u64 (w, a->blocks);
        fs_write_u32 (w, a->mode);
        fs_write_u32 (w, a->nlink);
        fs_write_i64 (w, a->atime_s);
        fs_write_u32 (w, a->atime_ns);
        fs_write_i64 (w, a->mtime_s);
        fs_write_u32 (w, a->mtime_ns);
        fs_write_i64 (w, a->ctime_s);
        fs_write_u32 (w, a->ctime_ns);
}

void
fs_write_entry (FsWriter *w, const FsEntry *e)
{
        fs_write_u64 (w, e->node);
        fs_write_u64 (w, e->generation);
        fs_write_attr (w, &e->attr);
}

void
fs_reply_error (FsWriter *w, int errnum, const char *rule)
{
        size_t len = rule ? strnlen (rule, FS_MAX_RULE) : 0;

        fs_write_u32 (w, (uint32_t) (errnum > 0 ? errnum : -errnum));
        fs_write_str (w, rule ? rule : "", len);
}

/* Validation ---------------------------------------------------------------------------------- */

bool
fs_name_valid (const char *name, size_t len)
{
        if (!name || len == 0 || len > FS_MAX_NAME)
                return false;
        if (len == 1 && name[0] == '.')
                return false;
        if (len == 2 && name[0] == '.' && name[1] == '.')
                return false;
        return memchr (name, '/', len) == NULL && memchr (name, '\0', len) == NULL;
}

static bool
target_valid (FsStr s)
{
        return s.len > 0 && s.len <= FS_MAX_SYMLINK && memchr (s.ptr, '\0', s.len) == NULL;
}

/* xattr names: 1..255 bytes, no NUL (they may contain '.' and '/'). */
static bool
xattr_name_valid (FsStr s)
{
        return s.len > 0 && s.len <= FS_MAX_NAME && memchr (s.ptr, '\0', s.len) == NULL;
}

static int
check_name (FsStr s)
{
        if (s.len > FS_MAX_NAME)
                return -ENAMETOOLONG;
        return fs_name_valid (s.ptr, s.len) ? 0 : -EINVAL;
}

int
fs_request_decode (const uint8_t *payload, size_t len, FsRequest *ret)
{
        FsReader r;
        FsRequest q;
        int res = 0;

        memset (&q, 0, sizeof q);
        fs_reader_init (&r, payload, len);
        q.op = fs_read_u16 (&r);
        if (fs_read_u16 (&r) != 0 || r.bad)
                return -EINVAL;

        switch (q.op) {
        case FS_OP_LOOKUP:
        case FS_OP_UNLINK:
        case FS_OP_RMDIR:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                res = check_name (q.name);
                break;
        case FS_OP_SETXATTR:
        case FS_OP_REMOVEXATTR:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                if (!r.bad && q.name.len > FS_MAX_NAME)
                        res = -ENAMETOOLONG;
                else if (!r.bad && !xattr_name_valid (q.name))
                        res = -EINVAL;
                break;
        case FS_OP_FORGET:
                q.node = fs_read_u64 (&r);
                q.nlookup = fs_read_u64 (&r);
                break;
        case FS_OP_BATCH_FORGET:
                q.count = fs_read_u32 (&r);
                if (q.count == 0 || q.count > FS_MAX_FORGETS)
                        return -EINVAL;
                q.data_len = (size_t) q.count * 16;
                q.data = fs_read_bytes (&r, q.data_len);
                break;
        case FS_OP_GETATTR:
        case FS_OP_READLINK:
        case FS_OP_OPENDIR:
        case FS_OP_STATFS:
                q.node = fs_read_u64 (&r);
                break;
        case FS_OP_SETATTR:
                q.node = fs_read_u64 (&r);
                q.handle = fs_read_u64 (&r);
                q.set.valid = fs_read_u32 (&r);
                q.set.mode = fs_read_u32 (&r);
                q.set.uid = fs_read_u32 (&r);
                q.set.gid = fs_read_u32 (&r);
                q.set.size = fs_read_u64 (&r);
                q.set.atime_s = fs_read_i64 (&r);
                q.set.atime_ns = fs_read_u32 (&r);
                q.set.mtime_s = fs_read_i64 (&r);
                q.set.mtime_ns = fs_read_u32 (&r);
                if (q.set.valid == 0 || (q.set.valid & ~FS_SET_KNOWN) != 0 ||
                    q.set.atime_ns >= 1000000000u || q.set.mtime_ns >= 1000000000u ||
                    q.set.size > (uint64_t) INT64_MAX)
                        res = -EINVAL;
                break;
        case FS_OP_MKDIR:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                q.mode = fs_read_u32 (&r);
                res = check_name (q.name);
                break;
        case FS_OP_MKNOD:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                q.mode = fs_read_u32 (&r);
                q.rdev = fs_read_u32 (&r);
                res = check_name (q.name);
                break;
        case FS_OP_SYMLINK:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                q.name2 = fs_read_str (&r, UINT16_MAX);
                res = check_name (q.name);
                if (res == 0 && !r.bad) {
                        if (q.name2.len > FS_MAX_SYMLINK)
                                res = -ENAMETOOLONG;
                        else if (!target_valid (q.name2))
                                res = -EINVAL;
                }
                break;
        case FS_OP_RENAME:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                q.node2 = fs_read_u64 (&r);
                q.name2 = fs_read_str (&r, UINT16_MAX);
                q.flags = fs_read_u32 (&r);
                res = check_name (q.name);
                if (res == 0)
                        res = check_name (q.name2);
                if (res == 0 && ((q.flags & ~(FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE)) != 0 ||
                                 q.flags == (FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE)))
                        res = -EINVAL;
                break;
        case FS_OP_LINK:
                q.node = fs_read_u64 (&r);
                q.node2 = fs_read_u64 (&r);
                q.name2 = fs_read_str (&r, UINT16_MAX);
                res = check_name (q.name2);
                break;
        case FS_OP_OPEN:
                q.node = fs_read_u64 (&r);
                q.flags = fs_read_u32 (&r);
                if ((q.flags & ~FS_O_KNOWN) != 0 || (q.flags & FS_O_ACCMODE) == 3)
                        res = -EINVAL;
                break;
        case FS_OP_CREATE:
                q.node = fs_read_u64 (&r);
                q.name = fs_read_str (&r, UINT16_MAX);
                q.mode = fs_read_u32 (&r);
                q.flags = fs_read_u32 (&r);
                res = check_name (q.name);
                if (res == 0 && ((q.flags & ~FS_O_KNOWN) != 0 || (q.flags & FS_O_ACCMODE) == 3))
                        res = -EINVAL;
                break;
        case FS_OP_READ:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                q.handle = fs_read_u64 (&r);
                q.offset = fs_read_u64 (&r);
                q.size = fs_read_u32 (&r);
                if (q.size > (q.op == FS_OP_READ ? FS_MAX_IO : FS_MAX_DIR_REPLY) ||
                    q.offset > (uint64_t) INT64_MAX)
                        res = -EINVAL;
                break;
        case FS_OP_WRITE:
                q.handle = fs_read_u64 (&r);
                q.offset = fs_read_u64 (&r);
                if (r.bad)
                        break;
                q.data_len = r.left;
                q.data = fs_read_bytes (&r, r.left);
                if (q.data_len > FS_MAX_IO || q.offset > (uint64_t) INT64_MAX - q.data_len)
                        res = -EINVAL;
                break;
        case FS_OP_READ_SHM:
        case FS_OP_WRITE_SHM:
                q.handle = fs_read_u64 (&r);
                q.offset = fs_read_u64 (&r);
                q.size = fs_read_u32 (&r);
                q.shm_offset = fs_read_u32 (&r);
                if (q.size > FS_MAX_IO || q.offset > (uint64_t) INT64_MAX - q.size ||
                    q.shm_offset < FS_SHM_HEADER || (uint64_t) q.shm_offset + q.size > FS_SHM_MAX)
                        res = -EINVAL;
                break;
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
                q.handle = fs_read_u64 (&r);
                break;
        case FS_OP_FSYNC:
                q.handle = fs_read_u64 (&r);
                q.flags = fs_read_u32 (&r);
                if (q.flags > 1)
                        res = -EINVAL;
                break;
        default:
                return -ENOSYS;
        }

        if (r.bad || r.left != 0)
                return -EINVAL;
        if (res < 0)
                return res;
        *ret = q;
        return 0;
}

int
fs_request_encode (const FsRequest *q, FsWriter *w)
{
        fs_write_u16 (w, q->op);
        fs_write_u16 (w, 0);

        switch (q->op) {
        case FS_OP_LOOKUP:
        case FS_OP_UNLINK:
        case FS_OP_RMDIR:
        case FS_OP_SETXATTR:
        case FS_OP_REMOVEXATTR:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                break;
        case FS_OP_FORGET:
                fs_write_u64 (w, q->node);
                fs_write_u64 (w, q->nlookup);
                break;
        case FS_OP_BATCH_FORGET:
                fs_write_u32 (w, q->count);
                fs_write_bytes (w, q->data, q->data_len);
                break;
        case FS_OP_GETATTR:
        case FS_OP_READLINK:
        case FS_OP_OPENDIR:
        case FS_OP_STATFS:
                fs_write_u64 (w, q->node);
                break;
        case FS_OP_SETATTR:
                fs_write_u64 (w, q->node);
                fs_write_u64 (w, q->handle);
                fs_write_u32 (w, q->set.valid);
                fs_write_u32 (w, q->set.mode);
                fs_write_u32 (w, q->set.uid);
                fs_write_u32 (w, q->set.gid);
                fs_write_u64 (w, q->set.size);
                fs_write_i64 (w, q->set.atime_s);
                fs_write_u32 (w, q->set.atime_ns);
                fs_write_i64 (w, q->set.mtime_s);
                fs_write_u32 (w, q->set.mtime_ns);
                break;
        case FS_OP_MKDIR:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                fs_write_u32 (w, q->mode);
                break;
        case FS_OP_MKNOD:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                fs_write_u32 (w, q->mode);
                fs_write_u32 (w, q->rdev);
                break;
        case FS_OP_SYMLINK:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                fs_write_str (w, q->name2.ptr, q->name2.len);
                break;
        case FS_OP_RENAME:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                fs_write_u64 (w, q->node2);
                fs_write_str (w, q->name2.ptr, q->name2.len);
                fs_write_u32 (w, q->flags);
                break;
        case FS_OP_LINK:
                fs_write_u64 (w, q->node);
                fs_write_u64 (w, q->node2);
                fs_write_str (w, q->name2.ptr, q->name2.len);
                break;
        case FS_OP_OPEN:
                fs_write_u64 (w, q->node);
                fs_write_u32 (w, q->flags);
                break;
        case FS_OP_CREATE:
                fs_write_u64 (w, q->node);
                fs_write_str (w, q->name.ptr, q->name.len);
                fs_write_u32 (w, q->mode);
                fs_write_u32 (w, q->flags);
                break;
        case FS_OP_READ:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                fs_write_u64 (w, q->handle);
                fs_write_u64 (w, q->offset);
                fs_write_u32 (w, q->size);
                break;
        case FS_OP_WRITE:
                fs_write_u64 (w, q->handle);
                fs_write_u64 (w, q->offset);
                fs_write_bytes (w, q->data, q->data_len);
                break;
        case FS_OP_READ_SHM:
        case FS_OP_WRITE_SHM:
                fs_write_u64 (w, q->handle);
                fs_write_u64 (w, q->offset);
                fs_write_u32 (w, q->size);
                fs_write_u32 (w, q->shm_offset);
                break;
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
                fs_write_u64 (w, q->handle);
                break;
        case FS_OP_FSYNC:
                fs_write_u64 (w, q->handle);
                fs_write_u32 (w, q->flags);
                break;
        default:
                return -EINVAL;
        }
        return w->overflow ? -EMSGSIZE : 0;
}

const char *
fs_op_name (uint16_t op)
{
        static const char *const names[] = {
                [FS_OP_LOOKUP] = "lookup",
                [FS_OP_FORGET] = "forget",
                [FS_OP_BATCH_FORGET] = "batch-forget",
                [FS_OP_GETATTR] = "getattr",
                [FS_OP_SETATTR] = "setattr",
                [FS_OP_READLINK] = "readlink",
                [FS_OP_MKDIR] = "mkdir",
                [FS_OP_UNLINK] = "unlink",
                [FS_OP_RMDIR] = "rmdir",
                [FS_OP_SYMLINK] = "symlink",
                [FS_OP_RENAME] = "rename",
                [FS_OP_LINK] = "link",
                [FS_OP_OPEN] = "open",
                [FS_OP_READ] = "read",
                [FS_OP_WRITE] = "write",
                [FS_OP_RELEASE] = "release",
                [FS_OP_FSYNC] = "fsync",
                [FS_OP_OPENDIR] = "opendir",
                [FS_OP_READDIRPLUS] = "readdirplus",
                [FS_OP_RELEASEDIR] = "releasedir",
                [FS_OP_STATFS] = "statfs",
                [FS_OP_CREATE] = "create",
                [FS_OP_SETXATTR] = "setxattr",
                [FS_OP_REMOVEXATTR] = "removexattr",
                [FS_OP_READDIR] = "readdir",
                [FS_OP_MKNOD] = "mknod",
        };
        if (op < sizeof names / sizeof names[0] && names[op])
                return names[op];
        return "unknown";
}
