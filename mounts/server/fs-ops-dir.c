/* fs-ops-dir.c — OPENDIR, READDIR, READDIRPLUS.
 *
 * The reply never holds more than the client asked for, counted the way the FUSE kernel
 * counts its buffer (fuse_dirent / fuse_direntplus sizes), so a client can always pass every
 * entry on: a READDIRPLUS entry is a lookup the kernel must learn about, never one dropped.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-resolve.h"

#define DIRENT_COST(namelen) (((size_t) 24 + (namelen) + 7) & ~(size_t) 7)
#define DIRENTPLUS_COST(namelen) (((size_t) 152 + (namelen) + 7) & ~(size_t) 7)

struct linux_dirent64 {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

static int
op_opendir (FsCtx *ctx)
{
        g_autofd int pfd = -1, fd = -1;
        FsHandle *h;
        FsNode *node = NULL;
        struct stat st;
        int r, err = 0;

        if (ctx->q->node == FS_ROOT_NODE) {
                h = fs_handle_new (ctx->s, NULL, -1, &err);
                if (!h)
                        return err;
                h->is_dir = true;
                fs_write_u64 (ctx->w, h->id);
                return 0;
        }
        node = fs_node_get (ctx->s, ctx->q->node, &err);
        if (!node)
                return err;
        ctx->share = node->share;
        {
                char path[FS_MAX_PATH];
                r = fs_node_open (node, path, sizeof path, O_PATH, &pfd);
                if (r < 0)
                        return r;
        }
        if (fstat (pfd, &st) < 0)
                return -errno;
        if (!S_ISDIR (st.st_mode))
                return -ENOTDIR;
        r = fs_reopen (pfd, O_RDONLY | O_DIRECTORY, &fd);
        if (r < 0)
                return r;
        h = fs_handle_new (ctx->s, node, fd, &err);
        if (!h)
                return err;
        fd = -1;
        h->is_dir = true;
        h->can_read = true;
        fs_write_u64 (ctx->w, h->id);
        return 0;
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
        return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* The workspace root: one entry per share, offset = index + 1. */
static int
readdir_root (FsCtx *ctx, bool plus)
{
        g_autofree const char **names = NULL;
        guint n = 0, count = 0;
        size_t used = 0;
        uint8_t *count_at = fs_write_reserve (ctx->w, 4);

        names = (const char **) g_hash_table_get_keys_as_array (ctx->s->shares, &n);
        qsort (names, n, sizeof *names, compare_names);
        for (uint64_t i = ctx->q->offset; i < n; i++) {
                FsShare *share = g_hash_table_lookup (ctx->s->shares, names[i]);
                size_t len = strlen (names[i]);
                size_t cost = plus ? DIRENTPLUS_COST (len) : DIRENT_COST (len);
                struct stat st;

                if (used + cost > ctx->q->size)
                        break;
                if (fstat (share->root_fd, &st) < 0)
                        continue;
                fs_write_u64 (ctx->w, i + 1);
                fs_write_u32 (ctx->w, S_IFDIR);
                fs_write_str (ctx->w, names[i], len);
                if (plus) {
                        int err = 0;
                        FsNode *node = fs_share_root_node (ctx->s, share, &err);
                        FsEntry e = { 0 };

                        if (!node)
                                break;
                        e.node = node->id;
                        fs_stat_to_attr (&st, &e.attr);
                        fs_write_entry (ctx->w, &e);
                        fs_node_ref_lookup (node);
                }
                used += cost;
                count++;
        }
        if (count_at)
                memcpy (count_at, (uint8_t[4]){ count >> 24, count >> 16, count >> 8, count }, 4);
        return 0;
}

/* Whether the entry name of the folder at dir_path is hidden from the guest (fs-paths.h). */
static bool
entry_hidden (
        FsCtx *ctx, FsHandle *h, const char *dir_path, const char *name, const struct stat *st)
{
        char path[FS_MAX_PATH];

        if (snprintf (path, sizeof path, "%s%s%s", dir_path, dir_path[0] ? "/" : "", name) >=
            (int) sizeof path)
                return true;
        return fs_check_hidden (ctx->s, h->share, path, st);
}

/* Adds one host entry: 1 added, 0 skipped (gone meanwhile, or hidden), -1 when the client's
 * buffer is full (or the node table). */
static int
add_entry (FsCtx *ctx,
           FsHandle *h,
           const char *dir_path,
           const struct linux_dirent64 *d,
           bool plus,
           size_t *used)
{
        size_t len = strlen (d->d_name);
        size_t cost = plus ? DIRENTPLUS_COST (len) : DIRENT_COST (len);
        struct stat st;

        if (*used + cost > ctx->q->size)
                return -1;
        if (fstatat (h->fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0; /* gone meanwhile */
        if (entry_hidden (ctx, h, dir_path, d->d_name, &st))
                return 0; /* not listed */

        if (plus) {
                int err = 0;
                FsNode *node = fs_node_child (ctx->s, h->node, d->d_name, len, &err);
                FsEntry e = { 0 };

                if (!node)
                        return -1;
                fs_write_u64 (ctx->w, (uint64_t) d->d_off);
                fs_write_u32 (ctx->w, st.st_mode & S_IFMT);
                fs_write_str (ctx->w, d->d_name, len);
                e.node = node->id;
                fs_stat_to_attr (&st, &e.attr);
                fs_write_entry (ctx->w, &e);
                fs_node_ref_lookup (node);
        } else {
                fs_write_u64 (ctx->w, (uint64_t) d->d_off);
                fs_write_u32 (ctx->w, st.st_mode & S_IFMT);
                fs_write_str (ctx->w, d->d_name, len);
        }
        *used += cost;
        return 1;
}

static int
op_readdir (FsCtx *ctx, bool plus)
{
        int err = 0;
        FsHandle *h = fs_handle_get (ctx->s, ctx->q->handle, &err);
        char buf[32768] __attribute__ ((aligned (8)));
        char dir_path[FS_MAX_PATH];
        uint8_t *count_at;
        uint32_t count = 0;
        size_t used = 0;
        bool full = false;

        if (!h)
                return err;
        if (!h->is_dir)
                return -EBADF;
        if (h->fd < 0)
                return readdir_root (ctx, plus);
        if (plus && (h->node->detached || h->node->share->removed))
                return -ESTALE;

        if (fs_node_path (h->node, dir_path, sizeof dir_path) < 0)
                return -ESTALE;
        if ((int64_t) ctx->q->offset != h->dir_pos) {
                if (lseek (h->fd, (off_t) ctx->q->offset, SEEK_SET) < 0)
                        return -errno;
                h->dir_pos = (int64_t) ctx->q->offset;
        }
        count_at = fs_write_reserve (ctx->w, 4);
        while (!full) {
                long n = syscall (SYS_getdents64, h->fd, buf, sizeof buf);

                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                for (long off = 0; off < n;) {
                        const struct linux_dirent64 *d = (const void *) (buf + off);

                        off += d->d_reclen;
                        if (strcmp (d->d_name, ".") == 0 || strcmp (d->d_name, "..") == 0) {
                                h->dir_pos = d->d_off;
                                continue;
                        }
                        int added = add_entry (ctx, h, dir_path, d, plus, &used);

                        if (added < 0) {
                                full = true;
                                break;
                        }
                        count += (uint32_t) added;
                        h->dir_pos = d->d_off;
                }
        }
        /* getdents read past what fitted: go back to the last entry returned. */
        if (full && lseek (h->fd, (off_t) h->dir_pos, SEEK_SET) < 0)
                return -errno;
        if (full && count == 0)
                return used == 0 && ctx->q->size >= DIRENTPLUS_COST (FS_MAX_NAME) ? -ENFILE
                                                                                  : -EINVAL;
        if (count_at)
                memcpy (count_at, (uint8_t[4]){ count >> 24, count >> 16, count >> 8, count }, 4);
        return 0;
}

int fs_ops_dir (FsCtx *ctx);

int
fs_ops_dir (FsCtx *ctx)
{
        switch (ctx->q->op) {
        case FS_OP_OPENDIR:
                return op_opendir (ctx);
        case FS_OP_READDIR:
                return op_readdir (ctx, false);
        default:
                return op_readdir (ctx, true);
        }
}
