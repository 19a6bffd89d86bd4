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
#include <linux/fs.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-journal.h"
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

gboolean
fs_server_set_kept_space (FsServer *s, guint mib, GError **error)
{
        if (mib != 0 && (mib < FS_KEPT_SPACE_MIN_MIB || mib > FS_KEPT_SPACE_MAX_MIB)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("The space for originals must be between %u and %u MiB"),
                             FS_KEPT_SPACE_MIN_MIB, FS_KEPT_SPACE_MAX_MIB);
                return FALSE;
        }
        s->keep_quota = (uint64_t) mib << 20;
        return TRUE;
}

gboolean
fs_server_set_kept_space_json (FsServer *s, const cJSON *item, GError **error)
{
        /* Range checked before the cast, which is undefined outside it; G_MAXUINT is refused. */
        guint mib = cJSON_IsNumber (item) && item->valuedouble >= 0 &&
                                    item->valuedouble <= FS_KEPT_SPACE_MAX_MIB &&
                                    item->valuedouble == (double) (guint) item->valuedouble
                            ? (guint) item->valuedouble
                            : G_MAXUINT;

        return fs_server_set_kept_space (s, mib, error);
}

guint
fs_server_get_kept_space (FsServer *s)
{
        return (guint) (s->keep_quota >> 20);
}

void
fs_keep_clear (FsServer *s)
{
        g_clear_pointer (&s->keep_last, g_hash_table_unref);
        g_clear_pointer (&s->keep_made, g_hash_table_unref);
        g_clear_pointer (&s->keep_changed, g_hash_table_unref);
        g_clear_pointer (&s->journal_shares, g_hash_table_unref);
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
uint64_t
fs_keep_dir_usage (const char *keep_dir)
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
                s->keep_used = fs_keep_dir_usage (s->keep_dir);
                s->keep_counted = true;
        }
        if (s->keep_used + charge (size) > quota) {
                /* The person may have cleared kept copies since we counted; look again, but
                 * not on every refused save. */
                gint64 now = g_get_monotonic_time ();

                if (s->keep_recounted == 0 || now - s->keep_recounted >= KEEP_RECOUNT_US) {
                        s->keep_used = fs_keep_dir_usage (s->keep_dir);
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

int
fs_keep_copy_data (int in, int out)
{
        /* A reflink where the file system has them: no data is copied. */
        if (ioctl (out, FICLONE, in) == 0)
                return 0;
        for (;;) {
                ssize_t n = copy_file_range (in, NULL, out, NULL, 1 << 20, 0);
                if (n == 0)
                        return 0;
                if (n < 0) {
                        char buf[65536];
                        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL)
                                return -errno;
                        n = read (in, buf, sizeof buf);
                        if (n == 0)
                                return 0;
                        if (n < 0 || write (out, buf, (size_t) n) != n)
                                return errno ? -errno : -EIO;
                }
        }
}

/* Copies in to a new file dest; 0 or -errno (no partial copy is left). */
static int
copy_to (int in, const char *dest)
{
        g_autofd int out = open (dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r;

        if (out < 0)
                return -errno;
        r = fs_keep_copy_data (in, out);
        if (r == 0 && fsync (out) < 0)
                r = -errno;
        if (r < 0)
                unlink (dest);
        return r;
}

/* A journal that is full says so once (fs-journal.h), not at every change. */
static void
journal_warn (int r)
{
        if (r == -EFBIG)
                g_debug ("the change journal is full");
        else
                g_warning ("cannot write the change journal: %s", g_strerror (-r));
}

/* Appends rec about share, after a line naming the share's folder if this server has not
 * written one yet (the journal then says where to undo, even once the VM is gone). */
static int
journal_write (FsServer *s, FsShare *share, FsJournalRecord *rec, bool sync)
{
        if (!s->journal_shares)
                s->journal_shares = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        if (!g_hash_table_contains (s->journal_shares, share->name) ||
            !g_str_equal (g_hash_table_lookup (s->journal_shares, share->name), share->host_path)) {
                FsJournalRecord line = { .type = FS_JOURNAL_SHARE,
                                         .share = share->name,
                                         .folder = share->host_path };
                int r = fs_journal_append (s->journal, &line, false);
                if (r < 0)
                        return r;
                g_hash_table_replace (s->journal_shares, g_strdup (share->name),
                                      g_strdup (share->host_path));
        }
        return fs_journal_append (s->journal, rec, sync);
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

/* The journal's "keep" line for the file in st (copy: the absolute path of its copy, or NULL
 * with lost saying why), synced: it is on disk before the change it precedes is made. */
static void
journal_keep (FsServer *s,
              FsShare *share,
              const char *audit_path,
              const struct stat *st,
              const char *copy,
              const char *lost)
{
        size_t dlen = s->keep_dir ? strlen (s->keep_dir) : 0;
        FsJournalRecord rec = {
                .type = FS_JOURNAL_KEEP,
                .share = share->name,
                .path = (char *) audit_path,
                .lost = (char *) lost,
                .has_mode = true,
                .mode = st->st_mode & 07777,
                .has_mtime = true,
                .mtime = st->st_mtim.tv_sec,
                .mtime_ns = (uint32_t) st->st_mtim.tv_nsec,
                .size = (uint64_t) st->st_size,
        };
        int r;

        if (!s->journal)
                return;
        if (copy && dlen && strncmp (copy, s->keep_dir, dlen) == 0 && copy[dlen] == '/')
                rec.copy = (char *) copy + dlen + 1;
        r = journal_write (s, share, &rec, true);
        if (r < 0)
                journal_warn (r);
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
        /* No line could say where the copy went: the same as no room for it. */
        if (s->journal && fs_journal_is_full (s->journal))
                return -EDQUOT;
        if (fstat (in, &st) < 0)
                return -errno;
        if (!S_ISREG (st.st_mode))
                return -EPERM;

        key = g_strconcat (share->name, "/", audit_path, NULL);
        last = s->keep_last ? g_hash_table_lookup (s->keep_last, key) : NULL;
        if (last && same_content (in, &st, last)) {
                audit_keep (s, share, audit_path, last, st.st_size);
                journal_keep (s, share, audit_path, &st, last, NULL);
                return 0;
        }

        dir = g_build_filename (s->keep_dir, share->name, NULL);
        if (g_mkdir_with_parents (dir, 0700) < 0)
                return -errno;
        r = check_room (s, dir, (uint64_t) st.st_size);
        if (r < 0)
                return r;
        stamp = g_date_time_format (now, "%Y%m%dT%H%M%S");
        /* The file's own name, cut so that the copy's name stays a name (and valid UTF-8 for
         * the journal); a name taken already (a server started again within the same
         * second) gets the next number. */
        {
                g_autofree char *valid = g_utf8_make_valid (name, -1);
                g_autofree char *shortened =
                        g_utf8_substring (valid, 0, MIN (g_utf8_strlen (valid, -1), 64));
                guint tries = 0;

                do {
                        g_free (dest);
                        dest = g_strdup_printf ("%s/%s-%u-%s", dir, stamp, ++s->keep_serial,
                                                shortened);
                        r = copy_to (in, dest);
                } while (r == -EEXIST && ++tries < 1000);
        }
        /* The disk filled up during the copy: the same as no room to begin with. */
        if (r == -ENOSPC)
                r = -EDQUOT;
        if (r < 0)
                return r;
        s->keep_used += charge ((uint64_t) st.st_size);
        remember (s, key, dest);
        audit_keep (s, share, audit_path, dest, st.st_size);
        journal_keep (s, share, audit_path, &st, dest, NULL);
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

/* Why a file's original could not be kept: the audit log says so, and the journal records
 * the change as one that cannot be undone. */
static const char *
lost_reason (int r)
{
        return r == -EDQUOT ? "budget" : r == -EFBIG ? "too-large" : "unreadable";
}

static void
audit_not_kept (FsServer *s, FsShare *share, const char *audit_path, int r, off_t size)
{
        FsAuditRecord rec = { .share = share->name,
                              .op = "keep",
                              .path = audit_path,
                              .result = "error",
                              .errnum = -r,
                              .message = r == -EDQUOT ? "Not kept: the kept copies' space is full; "
                                                        "this change cannot be undone"
                                                      : "Not kept: this change cannot be undone",
                              .size = size };

        fs_audit_write (s->audit, &rec);
}

int
fs_keep_before_change (FsServer *s,
                       FsShare *share,
                       int pathfd,
                       const struct stat *st,
                       const char *audit_path,
                       bool lossy)
{
        g_autofd int in = -1;
        g_autofree char *name = NULL;
        int r;

        if (share->mode == FS_MODE_RO || !S_ISREG (st->st_mode) || seen (s->keep_made, st) ||
            seen (s->keep_changed, st))
                return 0;
        if (st->st_size == 0) {
                journal_keep (s, share, audit_path, st, NULL, NULL);
                seen_add (&s->keep_changed, st);
                return 0;
        }
        if ((uint64_t) st->st_size > FS_KEEP_MAX)
                r = -EFBIG;
        else if ((r = fs_reopen (pathfd, O_RDONLY | O_NONBLOCK, &in)) == 0) {
                name = g_path_get_basename (audit_path);
                r = keep_fd (s, share, in, name, audit_path);
        }
        if (r < 0) {
                /* rw-nodelete never loses content: a change that would, and cannot be undone,
                 * is refused. Elsewhere the change goes ahead, recorded as not undoable. */
                if (share->mode == FS_MODE_RW_NODELETE && lossy)
                        return r;
                audit_not_kept (s, share, audit_path, r, st->st_size);
                journal_keep (s, share, audit_path, st, NULL, lost_reason (r));
        }
        seen_add (&s->keep_changed, st);
        return 0;
}

int
fs_keep_before_drop (
        FsServer *s, FsShare *share, int dirfd, const char *name, const char *audit_path)
{
        g_autofd int fd = openat (dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;

        if (fd < 0 || fstat (fd, &st) < 0)
                return 0;
        return fs_keep_before_change (s, share, fd, &st, audit_path, true);
}

/* The journal: what changed besides content ------------------------------------------------- */

static char
kind_of (mode_t mode)
{
        return S_ISDIR (mode) ? 'd' : S_ISLNK (mode) ? 'l' : 'f';
}

void
fs_keep_note (FsServer *s,
              FsJournalType type,
              FsShare *share,
              const char *path,
              const char *to,
              const struct stat *st,
              const struct stat *replaced,
              bool exchange)
{
        FsJournalRecord rec = {
                .type = type,
                .share = share->name,
                .path = (char *) path,
                .to = (char *) to,
                .kind = st ? kind_of (st->st_mode) : 0,
                .replaced = replaced ? kind_of (replaced->st_mode) : 0,
                .exchange = exchange,
        };
        int r;

        if (!s->journal)
                return;
        if (st && (type == FS_JOURNAL_DELETE || type == FS_JOURNAL_META) &&
            !S_ISLNK (st->st_mode)) {
                rec.has_mode = true;
                rec.mode = st->st_mode & 07777;
                rec.has_mtime = type == FS_JOURNAL_DELETE;
                rec.mtime = st->st_mtim.tv_sec;
                rec.mtime_ns = (uint32_t) st->st_mtim.tv_nsec;
                rec.size = (uint64_t) st->st_size;
        }
        if (st && type == FS_JOURNAL_TIMES) {
                rec.kind = 0;
                rec.has_mtime = true;
                rec.mtime = st->st_mtim.tv_sec;
                rec.mtime_ns = (uint32_t) st->st_mtim.tv_nsec;
                rec.size = (uint64_t) st->st_size;
        }
        if ((type == FS_JOURNAL_META || type == FS_JOURNAL_TIMES) && st && seen (s->keep_made, st))
                return; /* made in this task: its first mode and time are no one's */
        r = journal_write (s, share, &rec, false);
        if (r < 0)
                journal_warn (r);
}

void
fs_keep_note_wrote (FsServer *s, FsShare *share, const char *path, const struct stat *st)
{
        FsJournalRecord rec = {
                .type = FS_JOURNAL_WROTE,
                .share = share->name,
                .path = (char *) path,
                .size = (uint64_t) st->st_size,
                .has_mtime = true,
                .mtime = st->st_mtim.tv_sec,
                .mtime_ns = (uint32_t) st->st_mtim.tv_nsec,
        };
        int r;

        if (!s->journal || !S_ISREG (st->st_mode))
                return;
        r = journal_write (s, share, &rec, false);
        if (r < 0)
                journal_warn (r);
}
