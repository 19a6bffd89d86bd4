/* ops.c — FUSE low-level operations: each one becomes one FS_REQUEST; the kernel is answered
 * when the reply arrives (replies.c). What can be decided without the server (a stale inode, a
 * name the protocol cannot carry, an operation the protocol does not have) is answered here.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static Fs *
fs_of (fuse_req_t req)
{
        return fuse_req_userdata (req);
}

/* Sends q for req; on any local failure the kernel gets the error and NULL is returned. The
 * caller may add context to the returned entry: its reply cannot arrive before we return. */
static FsPending *
submit (fuse_req_t req, const FsRequest *q)
{
        Fs *fs = fs_of (req);
        FsPending *p;
        int r;

        if (!fs->in_session) {
                fuse_reply_err (req, EIO);
                return NULL;
        }
        p = fs_pending_new (fs, req, q->op);
        if (!p) {
                /* The loop stops reading before the table is full; this is a safety net. */
                fuse_reply_err (req, EAGAIN);
                return NULL;
        }
        r = fs_send (fs, p, q);
        if (r < 0) {
                fuse_reply_err (req, r == -ENOMEM ? ENOMEM : EIO);
                fs_pending_free (fs, p);
                return NULL;
        }
        return p;
}

/* Fills q->node from ino; false (kernel answered ESTALE) for an inode of an old session. */
static bool
set_node (fuse_req_t req, fuse_ino_t ino, uint64_t *ret)
{
        uint64_t node = fs_node_of (fs_of (req), ino);

        if (node == 0) {
                fuse_reply_err (req, fs_of (req)->in_session ? ESTALE : EIO);
                return false;
        }
        *ret = node;
        return true;
}

static bool
set_handle (fuse_req_t req, const struct fuse_file_info *fi, uint64_t *ret)
{
        uint64_t handle = fi ? fs_handle_of (fs_of (req), fi->fh) : 0;

        if (handle == 0) {
                fuse_reply_err (req, EIO);
                return false;
        }
        *ret = handle;
        return true;
}

static bool
set_name (fuse_req_t req, const char *name, FsStr *ret)
{
        size_t len = strnlen (name, FS_MAX_NAME + 1);

        if (len > FS_MAX_NAME) {
                fuse_reply_err (req, ENAMETOOLONG);
                return false;
        }
        if (!fs_name_valid (name, len)) {
                fuse_reply_err (req, EINVAL);
                return false;
        }
        ret->ptr = name;
        ret->len = len;
        return true;
}

static void
node_name_op (fuse_req_t req, uint16_t op, fuse_ino_t parent, const char *name)
{
        FsRequest q = { .op = op };

        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name))
                submit (req, &q);
}

static void
node_op (fuse_req_t req, uint16_t op, fuse_ino_t ino)
{
        FsRequest q = { .op = op };

        if (set_node (req, ino, &q.node))
                submit (req, &q);
}

static void
handle_op (fuse_req_t req, uint16_t op, struct fuse_file_info *fi)
{
        FsRequest q = { .op = op };

        if (!fs_handle_of (fs_of (req), fi->fh)) {
                /* A handle of an old session: the server forgot it with the connection. */
                fuse_reply_err (req, 0);
                return;
        }
        if (set_handle (req, fi, &q.handle))
                submit (req, &q);
}

static uint32_t
wire_open_flags (int flags)
{
        uint32_t w;

        switch (flags & O_ACCMODE) {
        case O_WRONLY:
                w = FS_O_WRONLY;
                break;
        case O_RDWR:
                w = FS_O_RDWR;
                break;
        default:
                w = FS_O_RDONLY;
                break;
        }
        if (flags & O_TRUNC)
                w |= FS_O_TRUNC;
        if (flags & O_APPEND)
                w |= FS_O_APPEND;
        if (flags & O_EXCL)
                w |= FS_O_EXCL;
        return w;
}

/* Operations ------------------------------------------------------------------------------------ */

static void
op_init (void *data, struct fuse_conn_info *conn)
{
        /* One request carries any read or write the kernel makes. */
        conn->max_write = FS_MAX_IO;
        conn->max_read = FS_MAX_IO;
        if (conn->max_readahead > FS_MAX_IO)
                conn->max_readahead = FS_MAX_IO;
        conn->max_background = 64;
        conn->congestion_threshold = 48;
        /* Data arrives in the request buffer, never spliced: replies and writes are plain
         * memory copies into the channel. */
        conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
        /* No locks across the host boundary, no write-back (a write must reach the host before
         * write() returns, so an error such as ENOSPC is seen by the writer). */
        conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS | FUSE_CAP_WRITEBACK_CACHE);
        if (conn->capable & FUSE_CAP_READDIRPLUS)
                conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
        if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
                conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
}

static void
op_lookup (fuse_req_t req, fuse_ino_t parent, const char *name)
{
        FsRequest q = { .op = FS_OP_LOOKUP };
        FsPending *p;

        if (!set_node (req, parent, &q.node) || !set_name (req, name, &q.name))
                return;
        if (fs_la_answer (fs_of (req), req, q.node, q.name.ptr, q.name.len))
                return;
        p = submit (req, &q);
        if (p)
                p->parent = q.node;
}

static void
op_forget (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
        Fs *fs = fs_of (req);
        uint64_t node = fs_node_of (fs, ino);

        if (node != 0)
                fs_send_forget (fs, node, nlookup);
        fuse_reply_none (req);
}

static void
op_forget_multi (fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
        Fs *fs = fs_of (req);
        FsForgets batch;

        fs_forgets_init (&batch);
        for (size_t i = 0; i < count; i++) {
                uint64_t node = fs_node_of (fs, forgets[i].ino);

                if (node != 0)
                        fs_forgets_add (fs, &batch, node, forgets[i].nlookup);
        }
        fs_forgets_flush (fs, &batch);
        fuse_reply_none (req);
}

static void
op_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        node_op (req, FS_OP_GETATTR, ino);
}

static void
op_setattr (
        fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
        Fs *fs = fs_of (req);
        FsRequest q = { .op = FS_OP_SETATTR };

        if (!set_node (req, ino, &q.node))
                return;
        if (fi && (q.handle = fs_handle_of (fs, fi->fh)) == 0) {
                fuse_reply_err (req, EIO);
                return;
        }
        if (to_set & FUSE_SET_ATTR_MODE) {
                q.set.valid |= FS_SET_MODE;
                q.set.mode = attr->st_mode & 07777;
        }
        /* Every file shows as the client's user: changing to that owner changes nothing, and is
         * what cp -a and tar do. Any other owner is the server's to refuse. */
        if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != fs->uid) {
                q.set.valid |= FS_SET_UID;
                q.set.uid = attr->st_uid;
        }
        if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != fs->gid) {
                q.set.valid |= FS_SET_GID;
                q.set.gid = attr->st_gid;
        }
        if (to_set & FUSE_SET_ATTR_SIZE) {
                if (attr->st_size < 0) {
                        fuse_reply_err (req, EINVAL);
                        return;
                }
                q.set.valid |= FS_SET_SIZE;
                q.set.size = (uint64_t) attr->st_size;
        }
        if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
                q.set.valid |= FS_SET_ATIME_NOW;
        } else if (to_set & FUSE_SET_ATTR_ATIME) {
                q.set.valid |= FS_SET_ATIME;
                q.set.atime_s = attr->st_atim.tv_sec;
                q.set.atime_ns = (uint32_t) attr->st_atim.tv_nsec;
        }
        if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
                q.set.valid |= FS_SET_MTIME_NOW;
        } else if (to_set & FUSE_SET_ATTR_MTIME) {
                q.set.valid |= FS_SET_MTIME;
                q.set.mtime_s = attr->st_mtim.tv_sec;
                q.set.mtime_ns = (uint32_t) attr->st_mtim.tv_nsec;
        }
        if (q.set.atime_ns >= 1000000000u || q.set.mtime_ns >= 1000000000u) {
                fuse_reply_err (req, EINVAL);
                return;
        }
        if (q.set.valid == 0) {
                /* Nothing the server would change (ctime only, or the same owner). */
                q = (FsRequest){ .op = FS_OP_GETATTR, .node = q.node };
        }
        submit (req, &q);
}

static void
op_readlink (fuse_req_t req, fuse_ino_t ino)
{
        node_op (req, FS_OP_READLINK, ino);
}

static void
op_mknod (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
        FsRequest q = { .op = FS_OP_MKNOD, .mode = mode, .rdev = (uint32_t) rdev };

        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name))
                submit (req, &q);
}

static void
op_mkdir (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
        FsRequest q = { .op = FS_OP_MKDIR, .mode = mode & 07777 };

        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name))
                submit (req, &q);
}

static void
op_unlink (fuse_req_t req, fuse_ino_t parent, const char *name)
{
        node_name_op (req, FS_OP_UNLINK, parent, name);
}

static void
op_rmdir (fuse_req_t req, fuse_ino_t parent, const char *name)
{
        node_name_op (req, FS_OP_RMDIR, parent, name);
}

static void
op_symlink (fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
        FsRequest q = { .op = FS_OP_SYMLINK };
        size_t len = strnlen (target, FS_MAX_SYMLINK + 1);

        if (len > FS_MAX_SYMLINK) {
                fuse_reply_err (req, ENAMETOOLONG);
                return;
        }
        if (len == 0) {
                fuse_reply_err (req, ENOENT);
                return;
        }
        q.name2.ptr = target;
        q.name2.len = len;
        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name))
                submit (req, &q);
}

static void
op_rename (fuse_req_t req,
           fuse_ino_t parent,
           const char *name,
           fuse_ino_t newparent,
           const char *newname,
           unsigned int flags)
{
        FsRequest q = { .op = FS_OP_RENAME };

        if (flags & ~(unsigned) (RENAME_NOREPLACE | RENAME_EXCHANGE)) {
                /* RENAME_WHITEOUT is for overlay file systems, not for shares. */
                fuse_reply_err (req, EINVAL);
                return;
        }
        q.flags = ((flags & RENAME_NOREPLACE) ? FS_RENAME_NOREPLACE : 0) |
                  ((flags & RENAME_EXCHANGE) ? FS_RENAME_EXCHANGE : 0);
        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name) &&
            set_node (req, newparent, &q.node2) && set_name (req, newname, &q.name2))
                submit (req, &q);
}

static void
op_link (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
        FsRequest q = { .op = FS_OP_LINK };

        if (set_node (req, ino, &q.node) && set_node (req, newparent, &q.node2) &&
            set_name (req, newname, &q.name2))
                submit (req, &q);
}

static void
keep_fi (FsPending *p, const struct fuse_file_info *fi)
{
        if (!p)
                return;
        p->has_fi = true;
        p->fi = *fi;
}

static void
op_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_OPEN, .flags = wire_open_flags (fi->flags) & ~FS_O_EXCL };

        if (set_node (req, ino, &q.node))
                keep_fi (submit (req, &q), fi);
}

static void
op_create (
        fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_CREATE,
                        .mode = mode & 07777,
                        .flags = wire_open_flags (fi->flags) };

        if (set_node (req, parent, &q.node) && set_name (req, name, &q.name))
                keep_fi (submit (req, &q), fi);
}

static void
op_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_READ, .offset = (uint64_t) off };
        FsPending *p;
        int slot;

        if (off < 0) {
                fuse_reply_err (req, EINVAL);
                return;
        }
        /* The kernel honours max_read; a larger size would only be answered short. */
        q.size = size > FS_MAX_IO ? FS_MAX_IO : (uint32_t) size;
        if (!set_handle (req, fi, &q.handle))
                return;
        slot = fs_shm_take (fs_of (req));
        if (slot >= 0) {
                q.op = FS_OP_READ_SHM;
                q.shm_offset = fs_shm_offset (slot);
        }
        p = submit (req, &q);
        if (p) {
                p->size = q.size;
                p->shm_slot = slot;
        } else {
                fs_shm_release (fs_of (req), slot);
        }
}

static void
op_write (fuse_req_t req,
          fuse_ino_t ino,
          const char *buf,
          size_t size,
          off_t off,
          struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_WRITE,
                        .offset = (uint64_t) off,
                        .data = (const uint8_t *) buf };
        Fs *fs = fs_of (req);
        FsPending *p;
        int slot;

        if (off < 0) {
                fuse_reply_err (req, EINVAL);
                return;
        }
        /* Short writes are legal; the kernel sends the rest again. */
        q.data_len = size > FS_MAX_IO ? FS_MAX_IO : size;
        if (!set_handle (req, fi, &q.handle))
                return;
        /* With shared memory the port carries where the bytes are, not the bytes. */
        slot = fs_shm_take (fs);
        if (slot >= 0) {
                memcpy (fs->shm + fs_shm_offset (slot), buf, q.data_len);
                q.op = FS_OP_WRITE_SHM;
                q.size = (uint32_t) q.data_len;
                q.shm_offset = fs_shm_offset (slot);
                q.data = NULL;
                q.data_len = 0;
        }
        p = submit (req, &q);
        if (p) {
                p->size = slot >= 0 ? q.size : (uint32_t) q.data_len;
                p->shm_slot = slot;
        } else {
                fs_shm_release (fs, slot);
        }
}

static void
op_flush (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        /* Writes go through to the host before write() returns, so close() has nothing to
         * flush. ENOSYS tells the kernel so once; it never sends FLUSH again. */
        fuse_reply_err (req, ENOSYS);
}

static void
op_release (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        handle_op (req, FS_OP_RELEASE, fi);
}

static void
op_fsync (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_FSYNC, .flags = datasync ? 1 : 0 };

        if (set_handle (req, fi, &q.handle))
                submit (req, &q);
}

static void
op_opendir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        FsRequest q = { .op = FS_OP_OPENDIR };

        if (set_node (req, ino, &q.node))
                keep_fi (submit (req, &q), fi);
}

static void
readdir_common (fuse_req_t req, uint16_t op, size_t size, off_t off, struct fuse_file_info *fi)
{
        FsRequest q = { .op = op, .offset = (uint64_t) off };
        FsPending *p;
        size_t ask;

        if (off < 0) {
                fuse_reply_err (req, EINVAL);
                return;
        }
        if (size > FS_MAX_DIR_REPLY)
                size = FS_MAX_DIR_REPLY;
        /* A wire entry is smaller than the kernel's: ask for as many as fit in size. A plus entry
         * is 98 + name bytes on the wire and at most 159 + name in the kernel's buffer; a plain
         * one 14 + name against 31 + name. Entries that still do not fit are given back. */
        ask = op == FS_OP_READDIRPLUS ? size * 3 / 5 : size * 2 / 5;
        if (ask < 512)
                ask = 512;
        q.size = (uint32_t) ask;
        if (!set_handle (req, fi, &q.handle))
                return;
        p = submit (req, &q);
        if (p)
                p->size = (uint32_t) size;
}

static void
op_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
        readdir_common (req, FS_OP_READDIR, size, off, fi);
}

static void
op_readdirplus (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
        readdir_common (req, FS_OP_READDIRPLUS, size, off, fi);
}

static void
op_releasedir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        handle_op (req, FS_OP_RELEASEDIR, fi);
}

static void
op_statfs (fuse_req_t req, fuse_ino_t ino)
{
        node_op (req, FS_OP_STATFS, ino);
}

static void
op_setxattr (
        fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags)
{
        FsRequest q = { .op = FS_OP_SETXATTR };
        size_t len = strnlen (name, FS_MAX_NAME + 1);

        /* Sent so that the server says which rule refuses it (EROFS or ENOTSUP). */
        if (len == 0 || len > FS_MAX_NAME) {
                fuse_reply_err (req, len ? ERANGE : EINVAL);
                return;
        }
        q.name.ptr = name;
        q.name.len = len;
        if (set_node (req, ino, &q.node))
                submit (req, &q);
}

static void
op_removexattr (fuse_req_t req, fuse_ino_t ino, const char *name)
{
        FsRequest q = { .op = FS_OP_REMOVEXATTR };
        size_t len = strnlen (name, FS_MAX_NAME + 1);

        if (len == 0 || len > FS_MAX_NAME) {
                fuse_reply_err (req, len ? ERANGE : EINVAL);
                return;
        }
        q.name.ptr = name;
        q.name.len = len;
        if (set_node (req, ino, &q.node))
                submit (req, &q);
}

/* Shares carry no extended attributes. ENOSYS makes the kernel answer EOPNOTSUPP itself from
 * then on, without asking again: this matters because the kernel looks up security.capability
 * before every write. EOPNOTSUPP is what cp -a, rsync -X, Python's shutil.copystat and
 * libattr treat as "this file system has no xattrs" and silently skip; ENODATA would make cp -a
 * try (and fail) to set them on copies out of the share. git never asks. */
static void
op_getxattr (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
        fuse_reply_err (req, ENOSYS);
}

static void
op_listxattr (fuse_req_t req, fuse_ino_t ino, size_t size)
{
        fuse_reply_err (req, ENOSYS);
}

const struct fuse_lowlevel_ops fs_ops = {
        .init = op_init,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .setattr = op_setattr,
        .readlink = op_readlink,
        .mknod = op_mknod,
        .mkdir = op_mkdir,
        .unlink = op_unlink,
        .rmdir = op_rmdir,
        .symlink = op_symlink,
        .rename = op_rename,
        .link = op_link,
        .open = op_open,
        .read = op_read,
        .write = op_write,
        .flush = op_flush,
        .release = op_release,
        .fsync = op_fsync,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .releasedir = op_releasedir,
        .statfs = op_statfs,
        .create = op_create,
        .setxattr = op_setxattr,
        .removexattr = op_removexattr,
        .getxattr = op_getxattr,
        .listxattr = op_listxattr,
};
