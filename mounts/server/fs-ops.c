/* fs-ops.c — one function per file-service operation.
 *
 * Each op resolves what it needs beneath the share root (fs-resolve.c), asks the rules
 * (fs-policy.c), and only then touches the host. Every syscall on a name uses a directory fd
 * that was resolved beneath the root and one validated component, with AT_SYMLINK_NOFOLLOW or
 * O_NOFOLLOW; special files are stat()ed but never opened.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-resolve.h"

#define REFUSE(ctx, r, err) ((ctx)->rule = (r), -(err))

/* Helpers ------------------------------------------------------------------------------------- */

void
fs_stat_to_attr (const struct stat *st, FsAttr *ret)
{
        memset (ret, 0, sizeof *ret);
        ret->ino = st->st_ino;
        ret->size = (uint64_t) st->st_size;
        ret->blocks = (uint64_t) st->st_blocks;
        ret->mode = st->st_mode & (S_IFMT | 0777);
        ret->nlink = (uint32_t) st->st_nlink;
        ret->atime_s = st->st_atim.tv_sec;
        ret->atime_ns = (uint32_t) st->st_atim.tv_nsec;
        ret->mtime_s = st->st_mtim.tv_sec;
        ret->mtime_ns = (uint32_t) st->st_mtim.tv_nsec;
        ret->ctime_s = st->st_ctim.tv_sec;
        ret->ctime_ns = (uint32_t) st->st_ctim.tv_nsec;
}

static void
root_attr (FsServer *s, FsAttr *ret)
{
        memset (ret, 0, sizeof *ret);
        ret->ino = FS_ROOT_NODE;
        ret->mode = S_IFDIR | 0555;
        ret->nlink = 2 + g_hash_table_size (s->shares);
}

int
fs_node_open (FsNode *node, char *path, size_t size, int flags, int *ret_fd)
{
        int r = fs_node_path (node, path, size);

        if (r < 0)
                return r;
        return fs_resolve_open (node->share->root_fd, node->share->dev, path, flags, 0, ret_fd);
}

static int
open_node (FsNode *node, int flags, int *ret_fd)
{
        char path[FS_MAX_PATH];

        return fs_node_open (node, path, sizeof path, flags, ret_fd);
}

/* Replies with the attributes of what fd refers to. */
static int
reply_attr (FsCtx *ctx, int fd)
{
        struct stat st;
        FsAttr attr;

        if (fstat (fd, &st) < 0)
                return -errno;
        fs_stat_to_attr (&st, &attr);
        fs_write_attr (ctx->w, &attr);
        return 0;
}

/* A share node from the request (never the workspace root). */
static FsNode *
share_node (FsCtx *ctx, uint64_t id, int *ret_err)
{
        FsNode *node = fs_node_get (ctx->s, id, ret_err);

        if (node)
                ctx->share = node->share;
        return node;
}

/* parent + name: the joined path (for the rules and the audit log) and an O_PATH fd of the
 * parent folder. */
static int
open_parent (FsNode *parent, FsStr name, char *path, size_t size, int *ret_dirfd)
{
        size_t len;
        int r = fs_node_path (parent, path, size);

        if (r < 0)
                return r;
        len = strlen (path);
        if (len + name.len + 2 > size)
                return -ENAMETOOLONG;
        r = fs_resolve_open (parent->share->root_fd, parent->share->dev, path, O_PATH | O_DIRECTORY,
                             0, ret_dirfd);
        if (r < 0)
                return r;
        if (len > 0)
                path[len++] = '/';
        memcpy (path + len, name.ptr, name.len);
        path[len + name.len] = '\0';
        return 0;
}

static char *
name_dup (FsStr name)
{
        return g_strndup (name.ptr, name.len);
}

static int
check_writable (FsCtx *ctx, FsShare *share)
{
        if (share->mode == FS_MODE_RO)
                return REFUSE (ctx, FS_RULE_READ_ONLY, EROFS);
        return 0;
}

static mode_t
clean_mode (uint32_t mode)
{
        /* No set-id or sticky bits ever (the server may run as root). */
        return mode & 0777;
}

static int
reply_entry (FsCtx *ctx, FsNode *node, const struct stat *st)
{
        FsEntry e = { .node = node->id, .generation = 0 };

        fs_stat_to_attr (st, &e.attr);
        fs_write_entry (ctx->w, &e);
        fs_node_ref_lookup (node);
        return 0;
}

/* The child node for a name that now exists; replies with its entry. */
static int
reply_child_entry (FsCtx *ctx, FsNode *parent, int dirfd, FsStr name)
{
        char cname[FS_MAX_NAME + 1];
        struct stat st;
        FsNode *node = NULL;
        int err = 0;

        memcpy (cname, name.ptr, name.len);
        cname[name.len] = '\0';
        if (fstatat (dirfd, cname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        node = fs_node_child (ctx->s, parent, name.ptr, name.len, &err);
        if (!node)
                return REFUSE (ctx, FS_RULE_LIMIT, -err);
        return reply_entry (ctx, node, &st);
}

/* Lookup, attributes ------------------------------------------------------------------------- */

static int
op_lookup (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        g_autofd int fd = -1;
        FsNode *parent = NULL, *node = NULL;
        struct stat st;
        int r, err = 0;

        if (q->node == FS_ROOT_NODE) {
                FsShare *share = fs_server_find_share (ctx->s, q->name.ptr, q->name.len);
                if (!share)
                        return -ENOENT;
                if (fstat (share->root_fd, &st) < 0)
                        return -errno;
                node = fs_share_root_node (ctx->s, share, &err);
                if (!node)
                        return REFUSE (ctx, FS_RULE_LIMIT, -err);
                return reply_entry (ctx, node, &st);
        }

        parent = share_node (ctx, q->node, &r);
        if (!parent)
                return r;
        {
                char path[FS_MAX_PATH], cname[FS_MAX_NAME + 1];
                bool exists;

                r = open_parent (parent, q->name, path, sizeof path, &fd);
                if (r < 0)
                        return r;
                memcpy (cname, q->name.ptr, q->name.len);
                cname[q->name.len] = '\0';
                exists = fstatat (fd, cname, &st, AT_SYMLINK_NOFOLLOW) == 0;
                /* Hidden paths do not exist for the guest, whether or not they do here. */
                if (fs_check_hidden (ctx->s, parent->share, path, exists ? &st : NULL)) {
                        ctx->path = g_strdup (path);
                        return REFUSE (ctx, FS_RULE_HIDDEN, ENOENT);
                }
        }
        return reply_child_entry (ctx, parent, fd, q->name);
}

static int
op_forget (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        FsReader r;

        if (q->op == FS_OP_FORGET) {
                FsNode *node = g_hash_table_lookup (ctx->s->nodes, &q->node);
                if (node)
                        fs_node_forget (ctx->s, node, q->nlookup);
                return 0;
        }
        fs_reader_init (&r, q->data, q->data_len);
        for (uint32_t i = 0; i < q->count; i++) {
                uint64_t id = fs_read_u64 (&r), n = fs_read_u64 (&r);
                FsNode *node = g_hash_table_lookup (ctx->s->nodes, &id);
                if (node)
                        fs_node_forget (ctx->s, node, n);
        }
        return 0;
}

static int
op_getattr (FsCtx *ctx)
{
        g_autofd int fd = -1;
        FsNode *node = NULL;
        FsAttr attr;
        int r;

        if (ctx->q->node == FS_ROOT_NODE) {
                root_attr (ctx->s, &attr);
                fs_write_attr (ctx->w, &attr);
                return 0;
        }
        node = share_node (ctx, ctx->q->node, &r);
        if (!node)
                return r;
        r = open_node (node, O_PATH, &fd);
        if (r < 0)
                return r;
        return reply_attr (ctx, fd);
}

static int
op_readlink (FsCtx *ctx)
{
        char path[FS_MAX_PATH], target[FS_MAX_SYMLINK + 1];
        g_autofd int fd = -1;
        FsNode *node = NULL;
        ssize_t n;
        int r;

        if (ctx->q->node == FS_ROOT_NODE)
                return -EINVAL;
        node = share_node (ctx, ctx->q->node, &r);
        if (!node)
                return r;
        r = fs_node_open (node, path, sizeof path, O_PATH, &fd);
        if (r < 0)
                return r;
        n = readlinkat (fd, "", target, sizeof target);
        if (n < 0)
                return -errno;
        if ((size_t) n > FS_MAX_SYMLINK)
                return -ENAMETOOLONG;
        /* Followed in the guest, a link that leaves the share would show the guest's own files
         * under the share's name (or, for a client on the host, the host's): refuse it. */
        if (!fs_symlink_target_inside (path, target, (size_t) n)) {
                ctx->path = g_strdup (path);
                return REFUSE (ctx, FS_RULE_OUTSIDE, EACCES);
        }
        fs_write_str (ctx->w, target, (size_t) n);
        return 0;
}

static int
op_statfs (FsCtx *ctx)
{
        struct statfs sf;
        FsNode *node = NULL;
        int fd, r;

        if (ctx->q->node == FS_ROOT_NODE) {
                memset (&sf, 0, sizeof sf);
                sf.f_bsize = 4096;
                sf.f_namelen = FS_MAX_NAME;
        } else {
                node = share_node (ctx, ctx->q->node, &r);
                if (!node)
                        return r;
                fd = node->share->root_fd;
                if (fstatfs (fd, &sf) < 0)
                        return -errno;
        }
        fs_write_u64 (ctx->w, sf.f_blocks);
        fs_write_u64 (ctx->w, sf.f_bfree);
        fs_write_u64 (ctx->w, sf.f_bavail);
        fs_write_u64 (ctx->w, sf.f_files);
        fs_write_u64 (ctx->w, sf.f_ffree);
        fs_write_u32 (ctx->w, (uint32_t) sf.f_bsize);
        fs_write_u32 (ctx->w, (uint32_t) MIN (sf.f_namelen, FS_MAX_NAME));
        return 0;
}

/* Creating ------------------------------------------------------------------------------------ */

/* Common start of the name-creating ops: writable share, parent resolved, and a new entry of
 * this type allowed at the path (fs_check_change). */
static int
begin_create (FsCtx *ctx, const char *op, mode_t type, FsNode **ret_parent, int *ret_dirfd)
{
        const FsRequest *q = ctx->q;
        char path[FS_MAX_PATH];
        FsNode *parent = NULL;
        int r;

        ctx->audit_op = op;
        if (q->node == FS_ROOT_NODE) {
                ctx->path = name_dup (q->name);
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        }
        parent = share_node (ctx, q->node, &r);
        if (!parent)
                return r;
        r = open_parent (parent, q->name, path, sizeof path, ret_dirfd);
        if (r < 0)
                return r;
        ctx->path = g_strdup (path);
        r = check_writable (ctx, parent->share);
        if (r == 0)
                r = fs_check_change (ctx, parent->share, *ret_dirfd, path, FS_CHANGE_CREATE, type);
        if (r != 0) {
                if (r > 0)
                        r = REFUSE (ctx, FS_RULE_GIT, EPERM);
                close (*ret_dirfd);
                *ret_dirfd = -1;
                return r;
        }
        *ret_parent = parent;
        return 0;
}

static int
op_mkdir (FsCtx *ctx)
{
        g_autofree char *name = name_dup (ctx->q->name);
        g_autofd int dirfd = -1, fd = -1;
        FsNode *parent = NULL;
        int r = begin_create (ctx, "mkdir", S_IFDIR, &parent, &dirfd);

        if (r < 0)
                return r;
        if (mkdirat (dirfd, name, clean_mode (ctx->q->mode)) < 0)
                return -errno;
        fd = openat (dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                struct stat st;

                fs_share_mark_created (parent->share, fd);
                if (fstat (fd, &st) == 0)
                        fs_keep_note_made (ctx->s, &st);
        }
        fs_keep_note (ctx->s, FS_JOURNAL_ADD, parent->share, ctx->path, NULL,
                      &(struct stat){ .st_mode = S_IFDIR }, NULL, false);
        return reply_child_entry (ctx, parent, dirfd, ctx->q->name);
}

static int
op_symlink (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        g_autofree char *name = name_dup (q->name);
        g_autofree char *target = name_dup (q->name2);
        g_autofd int dirfd = -1;
        FsNode *parent = NULL;
        int r = begin_create (ctx, "symlink", S_IFLNK, &parent, &dirfd);

        if (r < 0)
                return r;
        ctx->path2 = g_strdup (target);
        if (!fs_symlink_target_allowed (ctx->path, target, q->name2.len))
                return REFUSE (ctx, FS_RULE_OUTSIDE, EPERM);
        if (symlinkat (target, dirfd, name) < 0)
                return -errno;
        fs_keep_note (ctx->s, FS_JOURNAL_ADD, parent->share, ctx->path, NULL,
                      &(struct stat){ .st_mode = S_IFLNK }, NULL, false);
        return reply_child_entry (ctx, parent, dirfd, q->name);
}

static int
op_mknod (FsCtx *ctx)
{
        g_autofd int dirfd = -1;
        FsNode *parent = NULL;
        int r = begin_create (ctx, "mknod", S_IFREG, &parent, &dirfd);

        if (r < 0)
                return r;
        return REFUSE (ctx, FS_RULE_SPECIAL, EPERM);
}

static int
op_link (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        FsNode *node = NULL;
        int r;

        ctx->audit_op = "link";
        ctx->path = name_dup (q->name2);
        if (q->node == FS_ROOT_NODE || q->node2 == FS_ROOT_NODE)
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        node = share_node (ctx, q->node, &r);
        if (!node)
                return r;
        r = check_writable (ctx, node->share);
        if (r < 0)
                return r;
        /* A hard link made by the guest could later pair a file with a protected path or let
         * rw-nodelete lose content through the other name; git and editors fall back to
         * rename or copy when link() fails. */
        return REFUSE (ctx, FS_RULE_NO_LINKS, EPERM);
}

static int
op_xattr (FsCtx *ctx)
{
        FsNode *node = NULL;
        int r;

        if (ctx->q->node == FS_ROOT_NODE)
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        node = share_node (ctx, ctx->q->node, &r);
        if (!node)
                return r;
        ctx->audit_op = fs_op_name (ctx->q->op);
        r = check_writable (ctx, node->share);
        if (r < 0) {
                char path[FS_MAX_PATH];
                if (fs_node_path (node, path, sizeof path) == 0)
                        ctx->path = g_strdup (path);
                return r;
        }
        ctx->audit_op = NULL; /* not a change, not a rule: extended attributes are not shared */
        return -ENOTSUP;
}

/* Deleting ------------------------------------------------------------------------------------ */

static int
op_remove (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        bool is_rmdir = q->op == FS_OP_RMDIR;
        g_autofree char *name = name_dup (q->name), *created_key = NULL;
        char path[FS_MAX_PATH];
        g_autofd int dirfd = -1;
        FsNode *parent = NULL, *child;
        struct stat st;
        int r;

        ctx->audit_op = is_rmdir ? "rmdir" : "unlink";
        if (q->node == FS_ROOT_NODE) {
                ctx->path = g_strdup (name);
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        }
        parent = share_node (ctx, q->node, &r);
        if (!parent)
                return r;
        r = open_parent (parent, q->name, path, sizeof path, &dirfd);
        if (r < 0)
                return r;
        ctx->path = g_strdup (path);
        r = check_writable (ctx, parent->share);
        if (r < 0)
                return r;
        if (parent->share->mode == FS_MODE_RW_NODELETE)
                return REFUSE (ctx, FS_RULE_NO_DELETE, EPERM);
        r = fs_check_change (ctx, parent->share, dirfd, path, FS_CHANGE_REMOVE, 0);
        if (r < 0)
                return r;

        /* What goes is kept first (rw keeps it for undo; it never refuses). */
        if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!is_rmdir)
                fs_keep_before_drop (ctx->s, parent->share, dirfd, name, path);
        /* The inode number may be reused: its created-in-this-session mark goes with it. */
        created_key = fs_created_key_at (dirfd, name);
        if (unlinkat (dirfd, name, is_rmdir ? AT_REMOVEDIR : 0) < 0)
                return -errno;
        fs_keep_note (ctx->s, FS_JOURNAL_DELETE, parent->share, path, NULL, &st, NULL, false);
        if (created_key)
                g_hash_table_remove (parent->share->created, created_key);
        child = fs_node_find_child (parent, q->name.ptr, q->name.len);
        if (child)
                fs_node_detach (ctx->s, child);
        return 0;
}

/* Renaming ------------------------------------------------------------------------------------ */

/* rw-nodelete allows one kind of replace: a non-empty new regular file renamed over an
 * existing regular file, the editors' "write a temporary file, rename it over" save, with the
 * old version kept. Everything else that would drop a file is refused. */
static int
check_nodelete_rename (
        FsCtx *ctx, FsShare *share, int dirfd, const char *src, int ndirfd, const char *dst)
{
        struct stat sst, dst_st;
        int r;

        if (ctx->q->flags & FS_RENAME_EXCHANGE)
                return REFUSE (ctx, FS_RULE_NO_DELETE, EPERM);
        if (ctx->q->flags & FS_RENAME_NOREPLACE)
                return 0;
        if (fstatat (ndirfd, dst, &dst_st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstatat (dirfd, src, &sst, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (sst.st_dev == dst_st.st_dev && sst.st_ino == dst_st.st_ino)
                return 0; /* same file: rename() does nothing */
        if (!S_ISREG (sst.st_mode) || sst.st_size == 0 || !S_ISREG (dst_st.st_mode) ||
            dst_st.st_nlink > 1 || (uint64_t) dst_st.st_size > FS_KEEP_MAX)
                return REFUSE (ctx, FS_RULE_NO_DELETE, EPERM);
        r = fs_keep_copy (ctx->s, share, ndirfd, dst, ctx->path2);
        if (r == -EDQUOT)
                return REFUSE (ctx, FS_RULE_KEEP_FULL, EDQUOT);
        if (r < 0)
                return REFUSE (ctx, FS_RULE_NO_DELETE, EPERM);
        return 0;
}

static void
rename_nodes (
        FsServer *s, FsNode *parent, FsStr name, FsNode *nparent, FsStr newname, uint32_t flags)
{
        FsNode *src = fs_node_find_child (parent, name.ptr, name.len);
        FsNode *dst = fs_node_find_child (nparent, newname.ptr, newname.len);

        if (flags & FS_RENAME_EXCHANGE) {
                /* Park dst under a name no guest can use (a component cannot hold '/'). */
                if (dst)
                        fs_node_move (s, dst, nparent, "/", 1);
                if (src)
                        fs_node_move (s, src, nparent, newname.ptr, newname.len);
                if (dst)
                        fs_node_move (s, dst, parent, name.ptr, name.len);
                return;
        }
        if (dst && dst != src)
                fs_node_detach (s, dst);
        if (src)
                fs_node_move (s, src, nparent, newname.ptr, newname.len);
}

static int
op_rename (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        g_autofree char *name = name_dup (q->name), *newname = name_dup (q->name2);
        char path[FS_MAX_PATH], npath[FS_MAX_PATH];
        g_autofd int dirfd = -1, ndirfd = -1;
        FsNode *parent = NULL, *nparent = NULL;
        struct stat sst, dst_st;
        bool has_dst, same;
        int r;

        ctx->audit_op = "rename";
        ctx->path = g_strdup (name);
        if (q->node == FS_ROOT_NODE || q->node2 == FS_ROOT_NODE)
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        parent = share_node (ctx, q->node, &r);
        if (!parent)
                return r;
        nparent = share_node (ctx, q->node2, &r);
        if (!nparent)
                return r;
        if (parent->share != nparent->share)
                return REFUSE (ctx, FS_RULE_OUTSIDE, EXDEV);
        r = open_parent (parent, q->name, path, sizeof path, &dirfd);
        if (r == 0)
                r = open_parent (nparent, q->name2, npath, sizeof npath, &ndirfd);
        if (r < 0)
                return r;
        g_free (ctx->path);
        ctx->path = g_strdup (path);
        ctx->path2 = g_strdup (npath);

        r = check_writable (ctx, parent->share);
        if (r == 0)
                r = fs_check_rename (ctx, parent->share, dirfd, name, path, ndirfd, newname, npath,
                                     (q->flags & FS_RENAME_EXCHANGE) != 0);
        if (r == 0 && parent->share->mode == FS_MODE_RW_NODELETE)
                r = check_nodelete_rename (ctx, parent->share, dirfd, name, ndirfd, newname);
        if (r < 0)
                return r;
        if (fstatat (dirfd, name, &sst, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        has_dst = fstatat (ndirfd, newname, &dst_st, AT_SYMLINK_NOFOLLOW) == 0;
        same = has_dst && sst.st_dev == dst_st.st_dev && sst.st_ino == dst_st.st_ino;
        /* rw: what a rename replaces is kept first, for undo (nodelete kept it above). */
        if (has_dst && !same && !(q->flags & (FS_RENAME_EXCHANGE | FS_RENAME_NOREPLACE)) &&
            parent->share->mode == FS_MODE_RW)
                fs_keep_before_drop (ctx->s, parent->share, ndirfd, newname, npath);

        {
                unsigned int flags = 0;
                if (q->flags & FS_RENAME_NOREPLACE)
                        flags |= RENAME_NOREPLACE;
                if (q->flags & FS_RENAME_EXCHANGE)
                        flags |= RENAME_EXCHANGE;
                if (renameat2 (dirfd, name, ndirfd, newname, flags) < 0)
                        return -errno;
        }
        if (!same)
                fs_keep_note (ctx->s, FS_JOURNAL_RENAME, parent->share, path, npath, &sst,
                              has_dst ? &dst_st : NULL, (q->flags & FS_RENAME_EXCHANGE) != 0);

        /* Hold both parents: detaching a replaced node must not free them under us. */
        fs_node_hold (parent);
        fs_node_hold (nparent);
        rename_nodes (ctx->s, parent, q->name, nparent, q->name2, q->flags);
        fs_node_release (ctx->s, nparent);
        fs_node_release (ctx->s, parent);
        return 0;
}

/* Attributes ---------------------------------------------------------------------------------- */

static int
check_content_change (FsCtx *ctx, FsShare *share, const char *path, const struct stat *st)
{
        int r = check_writable (ctx, share);

        if (r == 0)
                r = fs_check_change_at (ctx, share, path, FS_CHANGE_WRITE, 0);
        if (r > 0)
                r = REFUSE (ctx, FS_RULE_GIT, EPERM);
        if (r < 0)
                return r;
        if (S_ISREG (st->st_mode) && st->st_nlink > 1)
                return REFUSE (ctx, FS_RULE_HARDLINK, EPERM);
        return 0;
}

/* The file's content is kept before its first change (fs_keep_before_change); in
 * rw-nodelete, when it cannot be, a lossy change is refused, never made with the content lost. */
static int
keep_before_change (FsCtx *ctx, FsShare *share, int pathfd, const struct stat *st, bool lossy)
{
        int r = fs_keep_before_change (ctx->s, share, pathfd, st, ctx->path, lossy);

        if (r == 0)
                return 0;
        if (r == -EDQUOT || r == -EFBIG)
                return REFUSE (ctx, FS_RULE_KEEP_FULL, EDQUOT);
        return REFUSE (ctx, FS_RULE_NO_DELETE, EPERM);
}

static int
setattr_apply (FsCtx *ctx, FsNode *node, int pathfd, const struct stat *st)
{
        const FsSetattr *set = &ctx->q->set;
        char proc[64];

        snprintf (proc, sizeof proc, "/proc/self/fd/%d", pathfd);
        if (set->valid & FS_SET_SIZE) {
                int err = 0;
                FsHandle *h = ctx->q->handle ? fs_handle_get (ctx->s, ctx->q->handle, &err) : NULL;
                g_autofd int fd = -1;

                if (ctx->q->handle && !h)
                        return err;
                if (h && (h->node != node || !h->can_write))
                        return -EBADF;
                if (!h) {
                        int r = fs_reopen (pathfd, O_WRONLY, &fd);
                        if (r < 0)
                                return r == -EACCES && !S_ISREG (st->st_mode)
                                               ? REFUSE (ctx, FS_RULE_SPECIAL, EACCES)
                                               : r;
                }
                if (ftruncate (h ? h->fd : fd, (off_t) set->size) < 0)
                        return -errno;
        }
        if (set->valid & FS_SET_MODE) {
                if (S_ISLNK (st->st_mode))
                        return -EOPNOTSUPP;
                if (chmod (proc, clean_mode (set->mode)) < 0)
                        return -errno;
        }
        if (set->valid & (FS_SET_ATIME | FS_SET_MTIME | FS_SET_ATIME_NOW | FS_SET_MTIME_NOW)) {
                struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

                if (set->valid & FS_SET_ATIME_NOW)
                        ts[0].tv_nsec = UTIME_NOW;
                else if (set->valid & FS_SET_ATIME)
                        ts[0] = (struct timespec){ set->atime_s, set->atime_ns };
                if (set->valid & FS_SET_MTIME_NOW)
                        ts[1].tv_nsec = UTIME_NOW;
                else if (set->valid & FS_SET_MTIME)
                        ts[1] = (struct timespec){ set->mtime_s, set->mtime_ns };
                if (S_ISLNK (st->st_mode)) {
                        if (utimensat (pathfd, "", ts, AT_EMPTY_PATH) < 0 && errno != EINVAL)
                                return -errno;
                } else if (utimensat (AT_FDCWD, proc, ts, 0) < 0) {
                        return -errno;
                }
        }
        return 0;
}

static int
op_setattr (FsCtx *ctx)
{
        const FsSetattr *set = &ctx->q->set;
        char path[FS_MAX_PATH];
        g_autofd int fd = -1;
        struct stat st;
        FsNode *node = NULL;
        int r;

        ctx->audit_op = "setattr";
        if (ctx->q->node == FS_ROOT_NODE)
                return REFUSE (ctx, FS_RULE_WORKSPACE, EROFS);
        node = share_node (ctx, ctx->q->node, &r);
        if (!node)
                return r;
        r = fs_node_open (node, path, sizeof path, O_PATH, &fd);
        if (r < 0)
                return r;
        ctx->path = g_strdup (path);
        if (fstat (fd, &st) < 0)
                return -errno;

        r = check_writable (ctx, node->share);
        if (r < 0)
                return r;
        if (set->valid & (FS_SET_UID | FS_SET_GID))
                return REFUSE (ctx, FS_RULE_OWNER, EPERM);
        r = check_content_change (ctx, node->share, path, &st);
        if (r == 0 && (set->valid & FS_SET_SIZE) && set->size != (uint64_t) st.st_size)
                r = keep_before_change (ctx, node->share, fd, &st,
                                        set->size < (uint64_t) st.st_size);
        if (r < 0)
                return r;
        if ((set->valid & FS_SET_SIZE) && S_ISDIR (st.st_mode))
                return -EISDIR;
        if (set->valid & FS_SET_SIZE)
                ctx->size = (int64_t) set->size;

        /* The journal has the mode and time as they were before they change (for undo). */
        if ((set->valid & FS_SET_MODE) && (st.st_mode & 07777) != clean_mode (set->mode))
                fs_keep_note (ctx->s, FS_JOURNAL_META, node->share, path, NULL, &st, NULL, false);
        if (S_ISREG (st.st_mode) &&
            ((set->valid & (FS_SET_MTIME | FS_SET_MTIME_NOW)) ||
             ((set->valid & FS_SET_SIZE) && set->size == (uint64_t) st.st_size)))
                fs_keep_note (ctx->s, FS_JOURNAL_TIMES, node->share, path, NULL, &st, NULL, false);
        if (S_ISREG (st.st_mode) && (set->valid & (FS_SET_SIZE | FS_SET_MTIME | FS_SET_MTIME_NOW)))
                fs_keep_note (ctx->s, FS_JOURNAL_WRITING, node->share, path, NULL, NULL, NULL,
                              false);
        r = setattr_apply (ctx, node, fd, &st);
        if (r < 0)
                return r;
        if (set->valid & (FS_SET_SIZE | FS_SET_MTIME | FS_SET_MTIME_NOW)) {
                struct stat after;
                if (fstat (fd, &after) == 0)
                        fs_keep_note_wrote (ctx->s, node->share, path, &after);
        }
        return reply_attr (ctx, fd);
}

/* Files --------------------------------------------------------------------------------------- */

static int
wire_to_open_flags (uint32_t flags)
{
        int f;

        switch (flags & FS_O_ACCMODE) {
        case FS_O_WRONLY:
                f = O_WRONLY;
                break;
        case FS_O_RDWR:
                f = O_RDWR;
                break;
        default:
                f = O_RDONLY;
        }
        if (flags & FS_O_TRUNC)
                f |= O_TRUNC;
        if (flags & FS_O_APPEND)
                f |= O_APPEND;
        return f;
}

static uint32_t
keep_cache_flags (FsNode *node, const struct stat *st)
{
        bool same = node->cached_mtime_s == st->st_mtim.tv_sec &&
                    node->cached_mtime_ns == (uint32_t) st->st_mtim.tv_nsec &&
                    node->cached_size == (uint64_t) st->st_size;

        node->cached_mtime_s = st->st_mtim.tv_sec;
        node->cached_mtime_ns = (uint32_t) st->st_mtim.tv_nsec;
        node->cached_size = (uint64_t) st->st_size;
        return same ? FS_OPEN_KEEP_CACHE : 0;
}

/* Opens an existing file of node for I/O after the rules allowed it. */
static int
open_existing (FsCtx *ctx, FsNode *node, uint32_t wire_flags, FsHandle **ret)
{
        bool writing = (wire_flags & FS_O_ACCMODE) != FS_O_RDONLY || (wire_flags & FS_O_TRUNC);
        char path[FS_MAX_PATH];
        g_autofd int pfd = -1, fd = -1;
        struct stat st;
        FsHandle *h;
        int r, err = 0;

        r = fs_node_open (node, path, sizeof path, O_PATH, &pfd);
        if (r < 0)
                return r;
        if (fstat (pfd, &st) < 0)
                return -errno;
        if (S_ISDIR (st.st_mode))
                return -EISDIR;
        if (S_ISLNK (st.st_mode))
                return -ELOOP;
        if (!S_ISREG (st.st_mode)) {
                g_free (ctx->path);
                ctx->path = g_strdup (path);
                ctx->audit_op = NULL;
                return REFUSE (ctx, FS_RULE_SPECIAL, EACCES);
        }
        if (writing) {
                g_free (ctx->path);
                ctx->path = g_strdup (path);
                r = check_content_change (ctx, node->share, path, &st);
                /* Appending loses nothing (nodelete allows it when nothing can be kept); a
                 * truncation through the handle is a setattr. */
                if (r == 0)
                        r = keep_before_change (ctx, node->share, pfd, &st,
                                                (wire_flags & FS_O_TRUNC) ||
                                                        !(wire_flags & FS_O_APPEND));
                if (r < 0) {
                        ctx->audit_op = "open";
                        return r;
                }
                if (wire_flags & FS_O_TRUNC)
                        fs_keep_note (ctx->s, FS_JOURNAL_WRITING, node->share, path, NULL, NULL,
                                      NULL, false);
        }
        r = fs_reopen (pfd, wire_to_open_flags (wire_flags), &fd);
        if (r < 0)
                return r;
        if (fstat (fd, &st) < 0)
                return -errno;
        h = fs_handle_new (ctx->s, node, fd, &err);
        if (!h)
                return REFUSE (ctx, FS_RULE_LIMIT, -err);
        fd = -1;
        h->can_read = (wire_flags & FS_O_ACCMODE) != FS_O_WRONLY;
        h->can_write = (wire_flags & FS_O_ACCMODE) != FS_O_RDONLY;
        if (wire_flags & FS_O_TRUNC) {
                ctx->audit_op = "truncate";
                ctx->size = 0;
                h->truncated = true;
        }
        fs_write_u64 (ctx->w, h->id);
        fs_write_u32 (ctx->w, keep_cache_flags (node, &st));
        *ret = h;
        return 0;
}

static int
op_open (FsCtx *ctx)
{
        FsHandle *h;
        FsNode *node = NULL;
        int r;

        if (ctx->q->node == FS_ROOT_NODE)
                return -EISDIR;
        node = share_node (ctx, ctx->q->node, &r);
        if (!node)
                return r;
        return open_existing (ctx, node, ctx->q->flags, &h);
}

static int
op_create (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;
        g_autofree char *name = name_dup (q->name);
        g_autofd int dirfd = -1, fd = -1;
        FsHandle *h;
        FsNode *parent = NULL, *node = NULL;
        struct stat st;
        int r, err = 0;

        r = begin_create (ctx, "create", S_IFREG, &parent, &dirfd);
        if (r < 0)
                return r;
        /* Before anything is made: a file created for a handle that cannot be given would be
         * left behind, and its node with it. */
        if (fs_server_handles_full (ctx->s))
                return REFUSE (ctx, FS_RULE_LIMIT, EMFILE);
        if (fs_server_nodes_full (ctx->s))
                return REFUSE (ctx, FS_RULE_LIMIT, ENFILE);
        /* Always exclusive on the host: an existing name goes through the checks of OPEN. */
        fd = openat (dirfd, name,
                     wire_to_open_flags (q->flags & (FS_O_ACCMODE | FS_O_APPEND)) | O_CREAT |
                             O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                     clean_mode (q->mode));
        if (fd < 0 && errno == EEXIST && !(q->flags & FS_O_EXCL)) {
                node = fs_node_child (ctx->s, parent, q->name.ptr, q->name.len, &err);
                if (!node)
                        return REFUSE (ctx, FS_RULE_LIMIT, -err);
                fs_node_ref_lookup (node); /* pin while opening */
                if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                } else {
                        FsEntry e = { .node = node->id };
                        fs_stat_to_attr (&st, &e.attr);
                        fs_write_entry (ctx->w, &e);
                        ctx->audit_op = NULL;
                        r = open_existing (ctx, node, q->flags, &h);
                }
                if (r < 0)
                        fs_node_forget (ctx->s, node, 1); /* drop the pin: no entry was given */
                return r;
        }
        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0)
                return -errno;
        /* Made in this task: nothing of the person's to keep before it changes. */
        fs_keep_note_made (ctx->s, &st);
        fs_keep_note (ctx->s, FS_JOURNAL_ADD, parent->share, ctx->path, NULL, &st, NULL, false);
        node = fs_node_child (ctx->s, parent, q->name.ptr, q->name.len, &err);
        if (!node)
                return REFUSE (ctx, FS_RULE_LIMIT, -err);
        h = fs_handle_new (ctx->s, node, fd, &err);
        if (!h) {
                fs_node_forget (ctx->s, node, 0); /* no entry was given: free it */
                return REFUSE (ctx, FS_RULE_LIMIT, -err);
        }
        fd = -1;
        h->can_read = (q->flags & FS_O_ACCMODE) != FS_O_WRONLY;
        h->can_write = (q->flags & FS_O_ACCMODE) != FS_O_RDONLY;
        reply_entry (ctx, node, &st);
        fs_write_u64 (ctx->w, h->id);
        fs_write_u32 (ctx->w, keep_cache_flags (node, &st));
        return 0;
}

/* Where the bytes of a READ_SHM / WRITE_SHM are: inside the shared region, past its header
 * (the decoder checked the header bound; the size of the mapping is checked here). */
static uint8_t *
shm_span (FsCtx *ctx)
{
        const FsRequest *q = ctx->q;

        if (!ctx->s->shm || (uint64_t) q->shm_offset + q->size > ctx->s->shm_size)
                return NULL;
        return ctx->s->shm + q->shm_offset;
}

static int
op_read (FsCtx *ctx)
{
        int err = 0;
        FsHandle *h = fs_handle_get (ctx->s, ctx->q->handle, &err);
        bool shm = ctx->q->op == FS_OP_READ_SHM;
        uint8_t *p;
        ssize_t n;

        if (!h)
                return err;
        if (h->is_dir || !h->can_read)
                return -EBADF;
        p = shm ? shm_span (ctx) : fs_write_reserve (ctx->w, ctx->q->size);
        if (!p)
                return shm ? -EINVAL : -EIO;
        do
                n = pread (h->fd, p, ctx->q->size, (off_t) ctx->q->offset);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (shm)
                fs_write_u32 (ctx->w, (uint32_t) n);
        else
                ctx->w->len -= ctx->q->size - (size_t) n;
        return 0;
}

static int
op_write (FsCtx *ctx)
{
        int err = 0;
        FsHandle *h = fs_handle_get (ctx->s, ctx->q->handle, &err);
        const uint8_t *data = ctx->q->data;
        size_t len = ctx->q->data_len, done = 0;

        if (!h)
                return err;
        if (h->is_dir || !h->can_write)
                return -EBADF;
        ctx->share = h->share;
        /* A mode change applies at once, also to files that are already open. */
        if (h->share->mode == FS_MODE_RO) {
                char path[FS_MAX_PATH];
                ctx->audit_op = "write";
                if (fs_node_path (h->node, path, sizeof path) == 0)
                        ctx->path = g_strdup (path);
                return REFUSE (ctx, FS_RULE_READ_ONLY, EROFS);
        }
        if (ctx->q->op == FS_OP_WRITE_SHM) {
                /* The guest may change these bytes while they are written: it only ever
                 * races itself. Nothing here depends on what the bytes say. */
                data = shm_span (ctx);
                len = ctx->q->size;
                if (!data)
                        return -EINVAL;
        }
        /* The journal: from now until the handle's release says how it was left, the file's
         * state is unknown (the server may be killed before then). */
        if (h->written == 0 && !h->truncated) {
                char path[FS_MAX_PATH];
                if (fs_node_path (h->node, path, sizeof path) == 0)
                        fs_keep_note (ctx->s, FS_JOURNAL_WRITING, h->share, path, NULL, NULL, NULL,
                                      false);
        }
        while (done < len) {
                ssize_t n =
                        pwrite (h->fd, data + done, len - done, (off_t) (ctx->q->offset + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        if (done > 0)
                                break;
                        return -errno;
                }
                done += (size_t) n;
        }
        h->written += done;
        fs_write_u32 (ctx->w, (uint32_t) done);
        return 0;
}

static int
op_release (FsCtx *ctx)
{
        FsHandle *h = g_hash_table_lookup (ctx->s->handles, &ctx->q->handle);

        if (!h)
                return -EBADF;
        if ((ctx->q->op == FS_OP_RELEASEDIR) != h->is_dir)
                return -EBADF;
        if (h->written > 0 || h->truncated) {
                char path[FS_MAX_PATH];
                struct stat st;
                bool have_path = h->node && fs_node_path (h->node, path, sizeof path) == 0;
                bool have_st = fstat (h->fd, &st) == 0;

                /* The journal: the file as the guest left it (undo notices a change since). */
                if (have_path && have_st && !h->share->removed)
                        fs_keep_note_wrote (ctx->s, h->share, path, &st);
                if (h->written > 0) {
                        /* Closing the handle may drop the share's last reference (it was
                         * removed): the audit line still names it. */
                        ctx->share = h->share;
                        ctx->share_hold = fs_share_ref (h->share);
                        ctx->audit_op = "write";
                        if (have_path)
                                ctx->path = g_strdup (path);
                        ctx->size = have_st ? st.st_size : (int64_t) h->written;
                }
        }
        fs_handle_close (ctx->s, h);
        return 0;
}

static int
op_fsync (FsCtx *ctx)
{
        int err = 0;
        FsHandle *h = fs_handle_get (ctx->s, ctx->q->handle, &err);

        if (!h)
                return err;
        if (h->fd < 0)
                return 0;
        if ((ctx->q->flags ? fdatasync (h->fd) : fsync (h->fd)) < 0)
                return -errno;
        return 0;
}

/* Dispatch ------------------------------------------------------------------------------------ */

int fs_ops_dir (FsCtx *ctx); /* fs-ops-dir.c */

int
fs_ops_dispatch (FsCtx *ctx)
{
        switch (ctx->q->op) {
        case FS_OP_LOOKUP:
                return op_lookup (ctx);
        case FS_OP_FORGET:
        case FS_OP_BATCH_FORGET:
                return op_forget (ctx);
        case FS_OP_GETATTR:
                return op_getattr (ctx);
        case FS_OP_SETATTR:
                return op_setattr (ctx);
        case FS_OP_READLINK:
                return op_readlink (ctx);
        case FS_OP_MKDIR:
                return op_mkdir (ctx);
        case FS_OP_MKNOD:
                return op_mknod (ctx);
        case FS_OP_UNLINK:
        case FS_OP_RMDIR:
                return op_remove (ctx);
        case FS_OP_SYMLINK:
                return op_symlink (ctx);
        case FS_OP_RENAME:
                return op_rename (ctx);
        case FS_OP_LINK:
                return op_link (ctx);
        case FS_OP_OPEN:
                return op_open (ctx);
        case FS_OP_CREATE:
                return op_create (ctx);
        case FS_OP_READ:
        case FS_OP_READ_SHM:
                return op_read (ctx);
        case FS_OP_WRITE:
        case FS_OP_WRITE_SHM:
                return op_write (ctx);
        case FS_OP_RELEASE:
        case FS_OP_RELEASEDIR:
                return op_release (ctx);
        case FS_OP_FSYNC:
                return op_fsync (ctx);
        case FS_OP_STATFS:
                return op_statfs (ctx);
        case FS_OP_SETXATTR:
        case FS_OP_REMOVEXATTR:
                return op_xattr (ctx);
        case FS_OP_OPENDIR:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
                return fs_ops_dir (ctx);
        default:
                return -ENOSYS;
        }
}
