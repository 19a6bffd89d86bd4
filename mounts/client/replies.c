/* replies.c — decoding and checking FS_REPLY payloads, and answering the kernel.
 *
 * The server is trusted more than the guest, but a reply is still checked completely before
 * the kernel sees any of it: exact length, errno in range, names and types valid, sizes within
 * what was asked. Anything else is answered EIO and logged.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define FS_MAX_ERRNO 4095
/* READDIR entries carry no inode number; this is the one libfuse's high-level API uses. */
#define FS_UNKNOWN_INO 0xffffffffu

static bool
attr_valid (const FsAttr *a)
{
        switch (a->mode & S_IFMT) {
        case S_IFREG:
        case S_IFDIR:
        case S_IFLNK:
        case S_IFIFO:
        case S_IFSOCK:
        case S_IFCHR:
        case S_IFBLK:
                break;
        default:
                return false;
        }
        return (a->mode & ~(uint32_t) (S_IFMT | 07777)) == 0 && a->size <= (uint64_t) INT64_MAX &&
               a->atime_ns < 1000000000u && a->mtime_ns < 1000000000u && a->ctime_ns < 1000000000u;
}

static bool
entry_valid (const FsEntry *e)
{
        /* The root is never anybody's child. */
        return e->node != 0 && e->node != FS_ROOT_NODE && e->node <= FS_NODE_MAX &&
               attr_valid (&e->attr);
}

static void
stat_from_attr (const Fs *fs, const FsAttr *a, struct stat *st)
{
        memset (st, 0, sizeof *st);
        st->st_ino = a->ino;
        st->st_mode = a->mode;
        st->st_nlink = a->nlink;
        st->st_uid = fs->uid;
        st->st_gid = fs->gid;
        st->st_size = (off_t) a->size;
        st->st_blocks = (blkcnt_t) (a->blocks > (uint64_t) INT64_MAX ? INT64_MAX : a->blocks);
        st->st_blksize = 4096;
        st->st_atim.tv_sec = a->atime_s;
        st->st_atim.tv_nsec = a->atime_ns;
        st->st_mtim.tv_sec = a->mtime_s;
        st->st_mtim.tv_nsec = a->mtime_ns;
        st->st_ctim.tv_sec = a->ctime_s;
        st->st_ctim.tv_nsec = a->ctime_ns;
}

void
fs_entry_param (const Fs *fs, const FsEntry *e, double timeout, struct fuse_entry_param *ret)
{
        memset (ret, 0, sizeof *ret);
        ret->ino = fs_ino_of (fs, e->node);
        ret->generation = e->generation;
        stat_from_attr (fs, &e->attr, &ret->attr);
        ret->attr_timeout = timeout;
        ret->entry_timeout = timeout;
}

static void
protocol_error (Fs *fs, FsPending *p, const char *what)
{
        fs_log ("bad %s reply from the server (%s); answered EIO", fs_op_name (p->op), what);
        fs_reply_fail (fs, p, EIO);
}

void
fs_reply_fail (Fs *fs, FsPending *p, int errnum)
{
        if (!p->req)
                return;
        if (p->op == FS_OP_RELEASE || p->op == FS_OP_RELEASEDIR)
                errnum = 0; /* the handle is gone with the connection anyway */
        fuse_reply_err (p->req, errnum);
        p->req = NULL;
}

/* Per-operation success bodies ------------------------------------------------------------------ */

static void
complete_entry (Fs *fs, FsPending *p, FsReader *r)
{
        struct fuse_entry_param e;
        FsEntry ent;

        fs_read_entry (r, &ent);
        if (r->bad || r->left != 0 || !entry_valid (&ent)) {
                protocol_error (fs, p, "entry");
                return;
        }
        fs_entry_param (fs, &ent, fs->timeout, &e);
        /* Not delivered (the caller was interrupted): the lookup the server counted is ours
         * to give back. */
        if (fuse_reply_entry (p->req, &e) < 0)
                fs_send_forget (fs, ent.node, 1);
        if (p->op == FS_OP_LOOKUP)
                fs_la_missed (fs, p->parent);
}

static void
complete_attr (Fs *fs, FsPending *p, FsReader *r)
{
        struct stat st;
        FsAttr a;

        fs_read_attr (r, &a);
        if (r->bad || r->left != 0 || !attr_valid (&a)) {
                protocol_error (fs, p, "attributes");
                return;
        }
        stat_from_attr (fs, &a, &st);
        fuse_reply_attr (p->req, &st, fs->timeout);
}

static void
complete_readlink (Fs *fs, FsPending *p, FsReader *r)
{
        char target[FS_MAX_SYMLINK + 1];
        FsStr s = fs_read_str (r, FS_MAX_SYMLINK);

        if (r->bad || r->left != 0 || s.len == 0 || memchr (s.ptr, '\0', s.len)) {
                protocol_error (fs, p, "symlink target");
                return;
        }
        memcpy (target, s.ptr, s.len);
        target[s.len] = '\0';
        fuse_reply_readlink (p->req, target);
}

static void
complete_empty (Fs *fs, FsPending *p, FsReader *r)
{
        if (r->left != 0) {
                protocol_error (fs, p, "trailing bytes");
                return;
        }
        fuse_reply_err (p->req, 0);
}

static void
complete_open (Fs *fs, FsPending *p, FsReader *r)
{
        FsEntry ent = { 0 };
        struct fuse_entry_param e;
        uint64_t handle;
        uint32_t open_flags = 0;
        bool dir = p->op == FS_OP_OPENDIR, create = p->op == FS_OP_CREATE;
        int res;

        if (create)
                fs_read_entry (r, &ent);
        handle = fs_read_u64 (r);
        if (!dir)
                open_flags = fs_read_u32 (r);
        if (r->bad || r->left != 0 || handle == 0 || handle > FS_NODE_MAX ||
            (create && !entry_valid (&ent)) || !p->has_fi) {
                protocol_error (fs, p, "handle");
                return;
        }
        p->fi.fh = fs_fh_of (fs, handle);
        /* Unknown open_flags bits are hints a newer server may add: ignored. */
        p->fi.keep_cache = (open_flags & FS_OPEN_KEEP_CACHE) != 0;
        if (create) {
                fs_entry_param (fs, &ent, fs->timeout, &e);
                res = fuse_reply_create (p->req, &e, &p->fi);
        } else {
                res = fuse_reply_open (p->req, &p->fi);
        }
        if (res < 0) {
                if (create)
                        fs_send_forget (fs, ent.node, 1);
                fs_send_release (fs, dir ? FS_OP_RELEASEDIR : FS_OP_RELEASE, handle);
        }
}

static void
complete_read (Fs *fs, FsPending *p, FsReader *r)
{
        size_t n = r->left;

        if (n > p->size) {
                protocol_error (fs, p, "more data than asked for");
                return;
        }
        fuse_reply_buf (p->req, (const char *) fs_read_bytes (r, n), n);
}

static void
complete_read_shm (Fs *fs, FsPending *p, FsReader *r)
{
        uint32_t n = fs_read_u32 (r);

        if (r->bad || r->left != 0 || n > p->size || p->shm_slot < 0) {
                protocol_error (fs, p, "read count");
                return;
        }
        /* The kernel cannot take a reply straight from the device's memory (see shm.c). */
        memcpy (fs->shm_bounce, fs->shm + fs_shm_offset (p->shm_slot), n);
        fuse_reply_buf (p->req, (const char *) fs->shm_bounce, n);
}

static void
complete_write (Fs *fs, FsPending *p, FsReader *r)
{
        uint32_t written = fs_read_u32 (r);

        if (r->bad || r->left != 0 || written > p->size) {
                protocol_error (fs, p, "write count");
                return;
        }
        fuse_reply_write (p->req, written);
}

static void
complete_statfs (Fs *fs, FsPending *p, FsReader *r)
{
        struct statvfs sv = { 0 };

        sv.f_blocks = fs_read_u64 (r);
        sv.f_bfree = fs_read_u64 (r);
        sv.f_bavail = fs_read_u64 (r);
        sv.f_files = fs_read_u64 (r);
        sv.f_ffree = fs_read_u64 (r);
        sv.f_bsize = fs_read_u32 (r);
        sv.f_namemax = fs_read_u32 (r);
        if (r->bad || r->left != 0) {
                protocol_error (fs, p, "statfs");
                return;
        }
        sv.f_frsize = sv.f_bsize;
        /* The protocol's limit, whatever the host's file system allows. */
        if (sv.f_namemax == 0 || sv.f_namemax > FS_MAX_NAME)
                sv.f_namemax = FS_MAX_NAME;
        fuse_reply_statfs (p->req, &sv);
}

/* Directories ----------------------------------------------------------------------------------- */

void
fs_forget_dirents (Fs *fs, FsReader r, uint32_t from, uint32_t count)
{
        FsForgets forgets;

        fs_forgets_init (&forgets);
        for (uint32_t i = 0; i < count; i++) {
                FsEntry ent;

                fs_read_u64 (&r);
                fs_read_u32 (&r);
                fs_read_str (&r, FS_MAX_NAME);
                fs_read_entry (&r, &ent);
                if (r.bad)
                        break;
                if (i >= from)
                        fs_forgets_add (fs, &forgets, ent.node, 1);
        }
        fs_forgets_flush (fs, &forgets);
}

static bool
dirent_type_valid (uint32_t type)
{
        return (type & ~(uint32_t) S_IFMT) == 0;
}

/* Every dirent is checked first: a bad one anywhere rejects the whole reply. */
bool
fs_dirents_valid (FsReader r, uint32_t count, bool plus)
{
        for (uint32_t i = 0; i < count; i++) {
                FsDirent d;

                d.next_offset = fs_read_u64 (&r);
                d.type = fs_read_u32 (&r);
                d.name = fs_read_str (&r, FS_MAX_NAME);
                if (plus)
                        fs_read_entry (&r, &d.entry);
                if (r.bad || d.next_offset > (uint64_t) INT64_MAX || !dirent_type_valid (d.type) ||
                    !fs_name_valid (d.name.ptr, d.name.len) || (plus && !entry_valid (&d.entry)))
                        return false;
        }
        return !r.bad && r.left == 0;
}

static void
complete_readdir (Fs *fs, FsPending *p, FsReader *r)
{
        bool plus = p->op == FS_OP_READDIRPLUS;
        uint32_t count = fs_read_u32 (r);
        FsReader start = *r;
        size_t used = 0;
        uint32_t i;

        if (r->bad || !fs_dirents_valid (*r, count, plus)) {
                if (plus && !r->bad)
                        fs_forget_dirents (fs, start, 0, count);
                protocol_error (fs, p, "directory entries");
                return;
        }
        for (i = 0; i < count; i++) {
                char name[FS_MAX_NAME + 1];
                FsDirent d;
                size_t need;

                d.next_offset = fs_read_u64 (r);
                d.type = fs_read_u32 (r);
                d.name = fs_read_str (r, FS_MAX_NAME);
                memcpy (name, d.name.ptr, d.name.len);
                name[d.name.len] = '\0';
                if (plus) {
                        struct fuse_entry_param e;

                        fs_read_entry (r, &d.entry);
                        fs_entry_param (fs, &d.entry, fs->timeout, &e);
                        need = fuse_add_direntry_plus (p->req, (char *) fs->dirbuf + used,
                                                       p->size - used, name, &e,
                                                       (off_t) d.next_offset);
                } else {
                        struct stat st = { .st_ino = FS_UNKNOWN_INO, .st_mode = d.type };

                        need = fuse_add_direntry (p->req, (char *) fs->dirbuf + used,
                                                  p->size - used, name, &st, (off_t) d.next_offset);
                }
                if (need > p->size - used)
                        break; /* the kernel asks again from the last offset it got */
                used += need;
        }
        if (plus && i < count)
                fs_forget_dirents (fs, start, i, count);
        if (fuse_reply_buf (p->req, (const char *) fs->dirbuf, used) < 0 && plus)
                fs_forget_dirents (fs, start, 0, i);
}

/* Dispatch -------------------------------------------------------------------------------------- */

void
fs_reply_complete (Fs *fs, FsPending *p, const uint8_t *payload, size_t len)
{
        FsReader r;
        uint32_t err;

        if (p->la) {
                fs_la_reply (fs, p, payload, len);
                return;
        }
        fs_reader_init (&r, payload, len);
        err = fs_read_u32 (&r);
        if (err != 0) {
                FsStr rule = fs_read_str (&r, FS_MAX_RULE);

                if (r.bad || r.left != 0 || err > FS_MAX_ERRNO) {
                        protocol_error (fs, p, "error");
                        return;
                }
                if (rule.len)
                        fs_debug ("%s refused by rule %.*s: %s", fs_op_name (p->op), (int) rule.len,
                                  rule.ptr, strerror ((int) err));
                fs_reply_fail (fs, p, (int) err);
                return;
        }
        if (!p->req)
                return; /* a clean-up RELEASE: nobody waits */

        switch (p->op) {
        case FS_OP_LOOKUP:
        case FS_OP_MKDIR:
        case FS_OP_SYMLINK:
        case FS_OP_LINK:
        case FS_OP_MKNOD:
                complete_entry (fs, p, &r);
                break;
        case FS_OP_GETATTR:
        case FS_OP_SETATTR:
                complete_attr (fs, p, &r);
                break;
        case FS_OP_READLINK:
                complete_readlink (fs, p, &r);
                break;
        case FS_OP_OPEN:
        case FS_OP_OPENDIR:
        case FS_OP_CREATE:
                complete_open (fs, p, &r);
                break;
        case FS_OP_READ:
                complete_read (fs, p, &r);
                break;
        case FS_OP_READ_SHM:
                complete_read_shm (fs, p, &r);
                break;
        case FS_OP_WRITE:
        case FS_OP_WRITE_SHM:
                complete_write (fs, p, &r);
                break;
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                complete_readdir (fs, p, &r);
                break;
        case FS_OP_STATFS:
                complete_statfs (fs, p, &r);
                break;
        default:
                /* UNLINK, RMDIR, RENAME, RELEASE, FSYNC, RELEASEDIR, SETXATTR, REMOVEXATTR */
                complete_empty (fs, p, &r);
                break;
        }
        p->req = NULL;
}
