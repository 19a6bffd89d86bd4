/* corral-audit-log.c — see corral-audit-log.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-audit-log.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Repeats of one record that are waiting to be written as a count. */
typedef struct {
        cJSON *last; /* the latest repeat (owned); NULL when none waits */
        guint64 pending;
        gint64 last_seen; /* monotonic µs of the latest occurrence, written or not */
        gint64 first_pending;
} Fold;

struct _CorralAuditLog {
        int dirfd; /* the log's folder: rotation renames within it */
        char *name;
        int fd;
        guint64 size;
        guint64 max_bytes;
        guint generations;
        GHashTable *folds; /* key -> Fold (owned) */
        gint64 next_due; /* G_MAXINT64: nothing pending */
        gboolean failing; /* the last write failed: warned once until one succeeds */
        int journal_fd; /* -1, or a datagram socket to the system journal (a copy of each line) */
        char *journal_path;
        char *path; /* as opened, for the journal's CORRAL_AUDIT_LOG field */
};

static void
fold_free (Fold *f)
{
        cJSON_Delete (f->last);
        g_free (f);
}

static int
open_log (int dirfd, const char *name, guint64 *ret_size)
{
        struct stat st;
        int fd = openat (dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
                close (fd);
                return -EINVAL;
        }
        *ret_size = (guint64) st.st_size;
        return fd;
}

CorralAuditLog *
corral_audit_log_open (const char *path, GError **error)
{
        g_autofree char *dir = NULL;
        CorralAuditLog *log;
        int r;

        g_return_val_if_fail (path != NULL, NULL);

        log = g_new0 (CorralAuditLog, 1);
        dir = g_path_get_dirname (path);
        log->name = g_path_get_basename (path);
        log->max_bytes = CORRAL_AUDIT_LOG_MAX_BYTES;
        log->generations = CORRAL_AUDIT_LOG_GENERATIONS;
        log->next_due = G_MAXINT64;
        log->folds =
                g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) fold_free);
        log->fd = -1;
        log->journal_fd = -1;
        log->path = g_strdup (path);
        log->dirfd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = log->dirfd < 0 ? -errno : open_log (log->dirfd, log->name, &log->size);
        if (r < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (-r),
                             "Cannot open the audit log %s: %s", path, g_strerror (-r));
                corral_audit_log_close (log);
                return NULL;
        }
        log->fd = r;
        return log;
}

void
corral_audit_log_set_limits (CorralAuditLog *log, guint64 max_bytes, guint generations)
{
        g_return_if_fail (log != NULL && max_bytes > 0 && generations >= 1);
        log->max_bytes = max_bytes;
        log->generations = generations;
}

/* FILE.(n-1) -> FILE.n ... FILE -> FILE.1, then a new FILE; 0 or -errno (the old file stays
 * open for nothing: the caller drops the line instead of growing past the bound). */
static int
rotate (CorralAuditLog *log)
{
        guint64 size = 0;
        int fd;

        for (guint k = log->generations; k >= 2; k--) {
                g_autofree char *from = g_strdup_printf ("%s.%u", log->name, k - 1);
                g_autofree char *to = g_strdup_printf ("%s.%u", log->name, k);

                if (renameat (log->dirfd, from, log->dirfd, to) < 0 && errno != ENOENT)
                        return -errno;
        }
        {
                g_autofree char *to = g_strdup_printf ("%s.1", log->name);

                if (renameat (log->dirfd, log->name, log->dirfd, to) < 0 && errno != ENOENT)
                        return -errno;
        }
        fd = open_log (log->dirfd, log->name, &size);
        if (fd < 0)
                return fd;
        close (log->fd);
        log->fd = fd;
        log->size = size;
        return 0;
}

static void
warn_once (CorralAuditLog *log, int err)
{
        if (!log->failing)
                g_warning ("Cannot write the audit log %s: %s", log->name, g_strerror (err));
        log->failing = TRUE;
}

/* The journal's native protocol (systemd.journal-fields(7), "Native Protocol"): one datagram
 * of FIELD=value lines. The line is one JSON object without a newline, so it needs none of the
 * protocol's binary form; a line too large for one datagram is not copied (the file has it). */
static void
copy_to_journal (CorralAuditLog *log, const char *line, size_t len)
{
        g_autoptr (GString) msg = g_string_new ("PRIORITY=6\nSYSLOG_IDENTIFIER=corral-audit\n");
        struct sockaddr_un addr = { .sun_family = AF_UNIX };

        g_string_append_printf (msg, "CORRAL_AUDIT_LOG=%s\nMESSAGE=", log->path);
        g_string_append_len (msg, line, (gssize) len);
        g_string_append_c (msg, '\n');
        g_strlcpy (addr.sun_path, log->journal_path, sizeof addr.sun_path);
        (void) sendto (log->journal_fd, msg->str, msg->len, MSG_DONTWAIT | MSG_NOSIGNAL,
                       (struct sockaddr *) &addr, sizeof addr);
}

gboolean
corral_audit_log_set_journal (CorralAuditLog *log, gboolean copy, GError **error)
{
        const char *path = g_getenv ("CORRAL_JOURNAL_SOCKET");
        int fd;

        if (log->journal_fd >= 0)
                close (log->journal_fd);
        log->journal_fd = -1;
        g_clear_pointer (&log->journal_path, g_free);
        if (!copy)
                return TRUE;
        if (!path || !*path)
                path = "/run/systemd/journal/socket";
        if (strlen (path) >= sizeof ((struct sockaddr_un *) NULL)->sun_path ||
            (fd = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                             "Cannot reach the system journal at %s", path);
                return FALSE;
        }
        log->journal_fd = fd;
        log->journal_path = g_strdup (path);
        return TRUE;
}

static void
write_record (CorralAuditLog *log, const cJSON *record)
{
        char *text = cJSON_PrintUnformatted (record);
        size_t len;
        ssize_t n;
        int r;

        if (!text)
                return;
        len = strlen (text);
        text[len] = '\n'; /* replaces the terminator: one write, one line */
        if (log->size > 0 && log->size + len + 1 > log->max_bytes && (r = rotate (log)) < 0) {
                warn_once (log, -r);
                cJSON_free (text);
                return;
        }
        n = write (log->fd, text, len + 1);
        if (log->journal_fd >= 0)
                copy_to_journal (log, text, len);
        cJSON_free (text);
        if (n < 0) {
                warn_once (log, errno);
                return;
        }
        log->size += (guint64) n;
        log->failing = FALSE;
}

static gint64
fold_due (const Fold *f)
{
        return MIN (f->last_seen + CORRAL_AUDIT_LOG_FOLD_GAP_US,
                    f->first_pending + CORRAL_AUDIT_LOG_FOLD_HOLD_US);
}

static void
write_fold (CorralAuditLog *log, Fold *f)
{
        cJSON_DeleteItemFromObjectCaseSensitive (f->last, "count");
        cJSON_AddNumberToObject (f->last, "count", (double) f->pending);
        write_record (log, f->last);
        g_clear_pointer (&f->last, cJSON_Delete);
        f->pending = 0;
}

/* Writes the counts due at now (all with now = G_MAXINT64); with sweep, also forgets keys
 * that have been quiet for longer than the gap. Returns the next due time or G_MAXINT64. */
static gint64
flush_at (CorralAuditLog *log, gint64 now, gboolean sweep)
{
        GHashTableIter iter;
        Fold *f;
        gint64 next = G_MAXINT64;

        if (now < log->next_due && !sweep)
                return log->next_due;
        g_hash_table_iter_init (&iter, log->folds);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &f)) {
                if (f->pending && now >= fold_due (f))
                        write_fold (log, f);
                if (f->pending)
                        next = MIN (next, fold_due (f));
                else if (now == G_MAXINT64 || now - f->last_seen >= CORRAL_AUDIT_LOG_FOLD_GAP_US)
                        g_hash_table_iter_remove (&iter);
        }
        log->next_due = next;
        return next;
}

void
corral_audit_log_append (CorralAuditLog *log, cJSON *record, const char *fold_key)
{
        gint64 now = g_get_monotonic_time ();
        Fold *f = NULL;

        g_return_if_fail (log != NULL && record != NULL);

        flush_at (log, now, FALSE);
        if (fold_key) {
                f = g_hash_table_lookup (log->folds, fold_key);
                if (f && now - f->last_seen < CORRAL_AUDIT_LOG_FOLD_GAP_US) {
                        if (!f->pending)
                                f->first_pending = now;
                        f->pending++;
                        cJSON_Delete (f->last);
                        f->last = record;
                        f->last_seen = now;
                        log->next_due = MIN (log->next_due, fold_due (f));
                        return;
                }
                if (!f && g_hash_table_size (log->folds) >= CORRAL_AUDIT_LOG_FOLD_KEYS)
                        flush_at (log, now, TRUE);
                /* Still full after forgetting the quiet keys: a guest cycling through more
                 * distinct refusals than we remember. Write what waits and start over. */
                if (!f && g_hash_table_size (log->folds) >= CORRAL_AUDIT_LOG_FOLD_KEYS)
                        flush_at (log, G_MAXINT64, TRUE);
                if (!f) {
                        f = g_new0 (Fold, 1);
                        g_hash_table_insert (log->folds, g_strdup (fold_key), f);
                }
                f->last_seen = now;
        }
        write_record (log, record);
        cJSON_Delete (record);
}

gint64
corral_audit_log_flush_due (CorralAuditLog *log)
{
        gint64 next;

        g_return_val_if_fail (log != NULL, -1);
        next = flush_at (log, g_get_monotonic_time (), TRUE);
        return next == G_MAXINT64 ? -1 : next;
}

gint64
corral_audit_log_next_due (CorralAuditLog *log)
{
        g_return_val_if_fail (log != NULL, -1);
        return log->next_due == G_MAXINT64 ? -1 : log->next_due;
}

void
corral_audit_log_flush (CorralAuditLog *log)
{
        g_return_if_fail (log != NULL);
        flush_at (log, G_MAXINT64, TRUE);
}

void
corral_audit_log_close (CorralAuditLog *log)
{
        if (!log)
                return;
        if (log->fd >= 0)
                flush_at (log, G_MAXINT64, TRUE);
        g_hash_table_unref (log->folds);
        if (log->fd >= 0)
                close (log->fd);
        if (log->dirfd >= 0)
                close (log->dirfd);
        if (log->journal_fd >= 0)
                close (log->journal_fd);
        g_free (log->journal_path);
        g_free (log->path);
        g_free (log->name);
        g_free (log);
}
