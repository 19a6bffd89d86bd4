/* fs-keep.c — kept copies: the old content of a file that rw-nodelete lets a write, a
 * truncation or a rename change or replace (once per file per server, before the first
 * change), or that the person approved deleting, copied outside the share before it goes.
 *
 * The guest decides how often that happens, so the copies are bounded: a quota per VM (its
 * keep folder, counted from the disk, so copies from earlier sessions count too) and a floor
 * of free space on the keep folder's disk. Beyond either, fs_keep_copy fails and the replace
 * or deletion is refused: the old content is never dropped silently. A file whose content is
 * the same as its latest kept copy is not copied again (an unchanged file re-saved, `sed -i`
 * that changed nothing); the log names the copy that already holds it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-resolve.h"

#define KEEP_BLOCK 4096u
#define KEEP_RECOUNT_US (10 * G_USEC_PER_SEC)
#define KEEP_LAST_MAX 4096u /* files whose latest kept copy is remembered */
#define CMP_CHUNK (64u * 1024u)

void
fs_keep_set_limits (FsServer *s, uint64_t quota, uint64_t min_free)
{
        s->keep_quota = quota;
        s->keep_min_free = min_free;
}

void
fs_keep_clear (FsServer *s)
{
        g_clear_pointer (&s->keep_last, g_hash_table_unref);
        g_clear_pointer (&s->keep_made, g_hash_table_unref);
        g_clear_pointer (&s->keep_changed, g_hash_table_unref);
}

/* What one copy costs the quota: its blocks, and one more for the inode and name, so that
 * empty files count too. */
static uint64_t
charge (uint64_t size)
{
        return (size + KEEP_BLOCK - 1) / KEEP_BLOCK * KEEP_BLOCK + KEEP_BLOCK;
}

/* Takes fd. */
static uint64_t
count_dir (int fd)
{
        DIR *d = fdopendir (fd);
        struct dirent *e;
        uint64_t used = 0;

        if (!d) {
                close (fd);
                return 0;
        }
        while ((e = readdir (d))) {
                struct stat st;

                if (e->d_name[0] == '.' || fstatat (fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISREG (st.st_mode))
                        used += charge ((uint64_t) st.st_size);
        }
        closedir (d);
        return used;
}

/* The keep folder holds one folder per share, each holding the copies. */
static uint64_t
count_used (const char *keep_dir)
{
        DIR *d = opendir (keep_dir);
        struct dirent *e;
        uint64_t used = 0;

        if (!d)
                return 0;
        while ((e = readdir (d))) {
                int fd;

                if (e->d_name[0] == '.')
                        continue;
                fd = openat (dirfd (d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        used += count_dir (fd);
        }
        closedir (d);
        return used;
}

static int
check_room (FsServer *s, const char *dir, uint64_t size)
{
        uint64_t quota = s->keep_quota ? s->keep_quota : FS_KEEP_QUOTA;
        uint64_t min_free = s->keep_min_free ? s->keep_min_free : FS_KEEP_MIN_FREE;
        struct statvfs vfs;

        if (!s->keep_counted) {
                s->keep_used = count_used (s->keep_dir);
                s->keep_counted = true;
        }
        if (s->keep_used + charge (size) > quota) {
                /* The person may have cleared kept copies since we counted; look again, but
                 * not on every refused save. */
                gint64 now = g_get_monotonic_time ();

                if (s->keep_recounted == 0 || now - s->keep_recounted >= KEEP_RECOUNT_US) {
                        s->keep_used = count_used (s->keep_dir);
                        s->keep_recounted = now;
                }
                if (s->keep_used + charge (size) > quota)
                        return -EDQUOT;
        }
        if (statvfs (dir, &vfs) < 0)
                return -errno;
        if ((uint64_t) vfs.f_bavail * vfs.f_frsize < size + min_free)
                return -EDQUOT;
        return 0;
}

/* Whether the file open as in (st) has the same bytes as kept. */
static bool
same_content (int in, const struct stat *st, const char *kept)
{
        g_autofd int fd = open (kept, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        g_autofree char *a = NULL, *b = NULL;
        struct stat kst;

        if (fd < 0 || fstat (fd, &kst) < 0 || !S_ISREG (kst.st_mode) || kst.st_size != st->st_size)
                return false;
        a = g_malloc (CMP_CHUNK);
        b = g_malloc (CMP_CHUNK);
        for (off_t off = 0; off < st->st_size;) {
                ssize_t n = pread (in, a, CMP_CHUNK, off);

                if (n <= 0 || pread (fd, b, (size_t) n, off) != n || memcmp (a, b, (size_t) n))
                        return false;
                off += n;
        }
        return true;
}

static void
remember (FsServer *s, const char *key, const char *dest)
{
        if (!s->keep_last || g_hash_table_size (s->keep_last) >= KEEP_LAST_MAX) {
                g_clear_pointer (&s->keep_last, g_hash_table_unref);
                s->keep_last = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        }
        g_hash_table_replace (s->keep_last, g_strdup (key), g_strdup (dest));
}

/* Copies in to a new file dest; 0 or -errno (no partial copy is left). */
static int
copy_to (int in, const char *dest)
{
        g_autofd int out = open (dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r = 0;

        if (out < 0)
                return -errno;
        for (;;) {
                ssize_t n = copy_file_range (in, NULL, out, NULL, 1 << 20, 0);
                if (n == 0)
                        break;
                if (n < 0) {
                        char buf[65536];
                        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL) {
                                r = -errno;
                                break;
                        }
                        n = read (in, buf, sizeof buf);
                        if (n <= 0) {
                                r = n < 0 ? -errno : 0;
                                break;
                        }
                        if (write (out, buf, (size_t) n) != n) {
                                r = errno ? -errno : -EIO;
                                break;
                        }
                }
        }
        if (r == 0 && fsync (out) < 0)
                r = -errno;
        if (r < 0)
                unlink (dest);
        return r;
}

static void
audit_keep (FsServer *s, FsShare *share, const char *audit_path, const char *dest, off_t size)
{
        FsAuditRecord rec = { .share = share->name,
                              .op = "keep",
                              .path = audit_path,
                              .path2 = dest,
                              .result = "ok",
                              .size = size };

        fs_audit_write (s->audit, &rec);
}

/* Copies a regular file's content to the keep folder (rw-nodelete replacements, approved
 * deletions) and records where it went; audit_path names it in the share. */
/* fs_keep_copy of the file open as in (for reading); name: its own name, for the copy's. */
static int
keep_fd (FsServer *s, FsShare *share, int in, const char *name, const char *audit_path)
{
        g_autofree char *dir = NULL, *dest = NULL, *stamp = NULL, *key = NULL;
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        const char *last;
        struct stat st;
        int r;

        if (!s->keep_dir)
                return -EPERM;
        if (fstat (in, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode))
                return -EPERM;

        key = g_strconcat (share->name, "/", audit_path, NULL);
        last = s->keep_last ? g_hash_table_lookup (s->keep_last, key) : NULL;
        if (last && same_content (in, &st, last)) {
                audit_keep (s, share, audit_path, last, st.st_size);
                return 0;
        }

        dir = g_build_filename (s->keep_dir, share->name, NULL);
        if (g_mkdir_with_parents (dir, 0700) < 0)
                return -errno;
        r = check_room (s, dir, (uint64_t) st.st_size);
        if (r < 0)
                return r;
        stamp = g_date_time_format (now, "%Y%m%dT%H%M%S");
        dest = g_strdup_printf ("%s/%s-%u-%s", dir, stamp, ++s->keep_serial, name);
        r = copy_to (in, dest);
        /* The disk filled up during the copy: the same as no room to begin with. */
        if (r == -ENOSPC)
                r = -EDQUOT;
        if (r < 0)
                return r;
        s->keep_used += charge ((uint64_t) st.st_size);
        remember (s, key, dest);
        audit_keep (s, share, audit_path, dest, st.st_size);
        return 0;
}

int
fs_keep_copy (FsServer *s, FsShare *share, int dirfd, const char *name, const char *audit_path)
{
        g_autofd int in =
                openat (dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

        if (in < 0)
                return -errno;
        return keep_fd (s, share, in, name, audit_path);
}

/* Before a change --------------------------------------------------------------------------- */

/* Files this server kept before changing, and files it made: each at most this many, then
 * forgotten (a forgotten file is kept again at its next change, unless unchanged since). */
#define KEEP_SEEN_MAX 65536u

static char *
file_key (const struct stat *st)
{
        return g_strdup_printf ("%ju:%ju", (uintmax_t) st->st_dev, (uintmax_t) st->st_ino);
}

static void
seen_add (GHashTable **set, const struct stat *st)
{
        if (!*set || g_hash_table_size (*set) >= KEEP_SEEN_MAX) {
                g_clear_pointer (set, g_hash_table_unref);
                *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        }
        g_hash_table_add (*set, file_key (st));
}

static bool
seen (GHashTable *set, const struct stat *st)
{
        g_autofree char *key = NULL;

        if (!set)
                return false;
        key = file_key (st);
        return g_hash_table_contains (set, key);
}

void
fs_keep_note_made (FsServer *s, const struct stat *st)
{
        seen_add (&s->keep_made, st);
}

int
fs_keep_before_change (
        FsServer *s, FsShare *share, int pathfd, const struct stat *st, const char *audit_path)
{
        g_autofd int in = -1;
        g_autofree char *name = NULL;
        int r;

        if (share->mode != FS_MODE_RW_NODELETE || !S_ISREG (st->st_mode) || st->st_size == 0 ||
            seen (s->keep_made, st) || seen (s->keep_changed, st))
                return 0;
        if ((uint64_t) st->st_size > FS_KEEP_MAX)
                return -EFBIG;
        r = fs_reopen (pathfd, O_RDONLY | O_NONBLOCK, &in);
        if (r < 0)
                return r;
        name = g_path_get_basename (audit_path);
        r = keep_fd (s, share, in, name, audit_path);
        if (r < 0)
                return r;
        seen_add (&s->keep_changed, st);
        return 0;
}
