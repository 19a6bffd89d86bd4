/* corral-task-changes.c — a task's changes for review and undo (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-changes.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n-lib.h>
#include <gio/gunixinputstream.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-shares.h"
#include "fs-journal.h"
#include "fs-resolve.h"
#include "fs-server.h"

/* The list ------------------------------------------------------------------------------------ */

void
corral_task_change_free (CorralTaskChange *c)
{
        if (!c)
                return;
        g_free (c->share);
        g_free (c->path);
        g_free (c->origin);
        g_free (c->key);
        g_free (c->folder);
        g_free (c->host_path);
        g_free (c->kept_path);
        g_free (c->lost);
        g_free (c);
}

void
corral_task_changes_free (CorralTaskChanges *changes)
{
        if (!changes)
                return;
        g_ptr_array_unref (changes->changes);
        g_free (changes);
}

static const char *
lost_reason (const char *lost)
{
        if (g_str_equal (lost, "budget"))
                return _ ("Its original was not kept: the task’s space for originals was full.");
        if (g_str_equal (lost, "too-large"))
                return _ ("Its original was not kept: it is larger than the task’s space for "
                          "originals.");
        return _ ("Its original was not kept: it could not be read.");
}

/* Opens SHARE's folder/path for reading without following a link anywhere on the way: a
 * folder the guest replaced with a link does not lead elsewhere on this computer. -errno. */
static int
open_beneath (const char *folder, const char *path, int *ret_fd)
{
        int root = open (folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        int r;

        if (root < 0)
                return -errno;
        if (fstat (root, &st) < 0) {
                r = -errno;
                close (root);
                return r;
        }
        r = fs_resolve_open (root, st.st_dev, path, O_RDONLY | O_NONBLOCK, 0, ret_fd);
        close (root);
        return r;
}

gint64
corral_task_changes_size_beneath (const char *folder, const char *path)
{
        int fd = -1;
        struct stat st;
        gint64 size = -1;

        if (open_beneath (folder, path, &fd) < 0)
                return -1;
        if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode))
                size = st.st_size;
        close (fd);
        return size;
}

static CorralTaskChange *
change_new (const FsJournalChange *jc, GHashTable *folders, const char *kept)
{
        CorralTaskChange *c = g_new0 (CorralTaskChange, 1);
        const char *folder = g_hash_table_lookup (folders, jc->share);

        c->kind = (CorralTaskChangeKind) jc->kind;
        c->share = g_strdup (jc->share);
        c->path = g_strdup (jc->path);
        c->origin = g_strdup (jc->origin);
        c->key = g_strconcat (jc->share, "/", jc->path, NULL);
        c->type = jc->type ? jc->type : 'f';
        c->folder = g_strdup (folder);
        c->host_path = folder ? g_build_filename (folder, jc->path, NULL) : NULL;
        c->kept_path = jc->copy ? g_build_filename (kept, jc->copy, NULL) : NULL;
        c->lost = jc->lost ? g_strdup (lost_reason (jc->lost)) : NULL;
        c->content_changed = jc->content_changed;
        c->mode_changed = jc->mode_changed;
        c->size_before = jc->copy || jc->kind == FS_JOURNAL_DELETED ? (gint64) jc->size : -1;
        c->size_now = folder && jc->kind != FS_JOURNAL_DELETED && c->type == 'f'
                              ? corral_task_changes_size_beneath (folder, jc->path)
                              : -1;
        return c;
}

CorralTaskChanges *
corral_task_changes_load (const char *vm_dir, GError **error)
{
        g_autoptr (GHashTable) folders = NULL;
        g_autofree char *kept = corral_shares_kept_dir (vm_dir);
        gboolean complete = TRUE;
        g_autoptr (GPtrArray) journal = corral_shares_changes (vm_dir, &folders, &complete, error);
        CorralTaskChanges *changes;

        if (!journal)
                return NULL;
        changes = g_new0 (CorralTaskChanges, 1);
        changes->complete = complete;
        changes->changes =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_task_change_free);
        for (guint i = 0; i < journal->len; i++)
                g_ptr_array_add (changes->changes, change_new (journal->pdata[i], folders, kept));
        return changes;
}

char *
corral_task_changes_stamp (const char *vm_dir)
{
        g_autofree char *kept = corral_shares_kept_dir (vm_dir);
        g_autofree char *path = g_build_filename (kept, FS_JOURNAL_FILE, NULL);
        struct stat st;

        if (stat (path, &st) < 0)
                return g_strdup ("");
        return g_strdup_printf ("%lld:%lld.%09ld", (long long) st.st_size,
                                (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* Undo and keep ------------------------------------------------------------------------------- */

void
corral_task_undo_outcome_free (CorralTaskUndoOutcome *o)
{
        if (!o)
                return;
        g_free (o->key);
        g_free (o->problem);
        g_free (o);
}

GPtrArray *
corral_task_changes_undo (const char *vm_dir,
                          const char *const *keys,
                          gboolean force,
                          GError **error)
{
        g_autoptr (GPtrArray) outcomes = corral_shares_undo (vm_dir, keys, force, error);
        GPtrArray *ret;

        if (!outcomes)
                return NULL;
        ret = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_task_undo_outcome_free);
        for (guint i = 0; i < outcomes->len; i++) {
                const FsUndoOutcome *o = outcomes->pdata[i];
                CorralTaskUndoOutcome *out = g_new0 (CorralTaskUndoOutcome, 1);

                out->key = g_strconcat (o->share, "/", o->path, NULL);
                out->problem = g_strdup (o->problem);
                out->changed_since = o->changed_since;
                g_ptr_array_add (ret, out);
        }
        return ret;
}

gboolean
corral_task_changes_keep_all (const char *vm_dir, GError **error)
{
        return corral_shares_keep_all (vm_dir, error);
}

/* Comparing ----------------------------------------------------------------------------------- */

void
corral_task_diff_free (CorralTaskDiff *d)
{
        if (!d)
                return;
        g_free (d->reason);
        g_free (d->unified);
        if (d->before)
                g_string_free (d->before, TRUE);
        if (d->after)
                g_string_free (d->after, TRUE);
        g_clear_pointer (&d->before_lines, g_byte_array_unref);
        g_clear_pointer (&d->after_lines, g_byte_array_unref);
        g_clear_pointer (&d->before_image, g_bytes_unref);
        g_clear_pointer (&d->after_image, g_bytes_unref);
        g_free (d);
}

static guint32
be32 (const guint8 *p)
{
        return (guint32) p[0] << 24 | (guint32) p[1] << 16 | (guint32) p[2] << 8 | p[3];
}

gboolean
corral_task_image_size (const guint8 *data, gsize len, guint *width, guint *height)
{
        static const guint8 png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

        /* PNG: the signature, then IHDR (length 13) first. */
        if (len >= 24 && memcmp (data, png, sizeof png) == 0) {
                if (be32 (data + 8) != 13 || memcmp (data + 12, "IHDR", 4) != 0)
                        return FALSE;
                *width = be32 (data + 16);
                *height = be32 (data + 20);
                return *width > 0 && *height > 0 && *width <= G_MAXINT32 && *height <= G_MAXINT32;
        }
        /* JPEG: SOI, then segments up to a start of frame (SOF0-15 but DHT, JPG, DAC). */
        if (len >= 4 && data[0] == 0xff && data[1] == 0xd8) {
                gsize i = 2;

                while (i + 4 <= len) {
                        guint8 marker;
                        gsize seg;

                        if (data[i] != 0xff)
                                return FALSE;
                        marker = data[i + 1];
                        if (marker == 0xff) { /* fill byte */
                                i++;
                                continue;
                        }
                        if (marker == 0xd8 || marker == 0x01 ||
                            (marker >= 0xd0 && marker <= 0xd7)) {
                                i += 2;
                                continue;
                        }
                        if (marker == 0xd9 || marker == 0xda) /* end, or scan before a frame */
                                return FALSE;
                        seg = (gsize) data[i + 2] << 8 | data[i + 3];
                        if (seg < 2)
                                return FALSE;
                        if (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
                            marker != 0xcc) {
                                if (seg < 7 || i + 2 + 7 > len)
                                        return FALSE;
                                *height = (guint) data[i + 5] << 8 | data[i + 6];
                                *width = (guint) data[i + 7] << 8 | data[i + 8];
                                return *width > 0 && *height > 0;
                        }
                        i += 2 + seg;
                }
        }
        return FALSE;
}

/* One side: the file read whole up to limit + 1 bytes (to tell "larger"), or no file. */
typedef struct {
        gboolean present;
        int fd; /* -1 once closed */
        gint64 size;
        GByteArray *data;
} Side;

static void
side_clear (Side *s)
{
        if (s->fd >= 0)
                close (s->fd);
        s->fd = -1;
        g_clear_pointer (&s->data, g_byte_array_unref);
}

/* Opens and reads a side. path: the kept copy (Corral's own folder; no link followed at its
 * end) or, with folder, a path beneath the share's folder. FALSE with error set. */
static gboolean
side_open (Side *s, const char *folder, const char *path, GError **error)
{
        struct stat st;
        int r;
        gsize want;

        s->fd = -1;
        s->present = TRUE;
        if (folder)
                r = open_beneath (folder, path, &s->fd);
        else
                r = (s->fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0
                            ? -errno
                            : 0;
        if (r < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (-r),
                             r == -ENOENT ? _ ("It is not there any more.")
                             : r == -ELOOP || r == -EXDEV
                                     ? _ ("It is reached through a link now, which is not "
                                          "followed.")
                                     : _ ("It cannot be read: %s."),
                             g_strerror (-r));
                return FALSE;
        }
        if (fstat (s->fd, &st) < 0 || !S_ISREG (st.st_mode)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE,
                             _ ("It is not a file now."));
                return FALSE;
        }
        s->size = st.st_size;
        want = MIN ((guint64) st.st_size,
                    MAX (CORRAL_TASK_DIFF_MAX_TEXT, CORRAL_TASK_DIFF_MAX_IMAGE) + 1);
        s->data = g_byte_array_sized_new (want);
        while (s->data->len < want) {
                guint8 buf[65536];
                ssize_t n = read (s->fd, buf, MIN (sizeof buf, want - s->data->len));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                                     _ ("It cannot be read: %s."), g_strerror (errno));
                        return FALSE;
                }
                if (n == 0)
                        break;
                g_byte_array_append (s->data, buf, n);
        }
        return TRUE;
}

static gboolean
is_text (const Side *s)
{
        return !s->present || (memchr (s->data->data, 0, s->data->len) == NULL &&
                               g_utf8_validate ((const char *) s->data->data, s->data->len, NULL));
}

static gboolean
image_ok (const Side *s)
{
        guint w = 0, h = 0;

        return s->present && s->data->len == (guint64) s->size &&
               s->data->len <= CORRAL_TASK_DIFF_MAX_IMAGE &&
               corral_task_image_size (s->data->data, s->data->len, &w, &h) &&
               w <= CORRAL_TASK_DIFF_MAX_SIDE && h <= CORRAL_TASK_DIFF_MAX_SIDE &&
               (guint64) w * h <= CORRAL_TASK_DIFF_MAX_PIXELS;
}

/* diff(1) between the two sides, passed as descriptors (no path is looked up again);
 * context: lines of context. An absent side is /dev/null. */
static char *
run_diff (Side *a, Side *b, const char *label_a, const char *label_b, guint context, GError **error)
{
        g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
                G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_autoptr (GSubprocess) proc = NULL;
        g_autofree char *ctx = g_strdup_printf ("--unified=%u", context);
        g_autoptr (GBytes) out = NULL;
        const char *file_a = "/dev/null", *file_b = "/dev/null";

        g_subprocess_launcher_setenv (launcher, "LC_ALL", "C.UTF-8", TRUE);
        if (a->present) {
                g_subprocess_launcher_take_fd (launcher, dup (a->fd), 3);
                file_a = "/dev/fd/3";
        }
        if (b->present) {
                g_subprocess_launcher_take_fd (launcher, dup (b->fd), 4);
                file_b = "/dev/fd/4";
        }
        proc = g_subprocess_launcher_spawn (launcher, error, "diff", ctx, "--label", label_a,
                                            "--label", label_b, "--", file_a, file_b, NULL);
        if (!proc || !g_subprocess_communicate (proc, NULL, NULL, &out, NULL, error))
                return NULL;
        /* 0: the same, 1: different; 2: trouble. */
        if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) > 1) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                             _ ("The two versions could not be compared."));
                return NULL;
        }
        /* Empty (the same bytes): no data pointer, an empty string all the same. */
        if (g_bytes_get_size (out) == 0)
                return g_strdup ("");
        return g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
}

static void
add_line (GString *text, GByteArray *marks, const char *line, gsize len, CorralTaskLine mark)
{
        guint8 m = mark;

        g_string_append_len (text, line, len);
        g_string_append_c (text, '\n');
        g_byte_array_append (marks, &m, 1);
}

/* Lays out a whole-file unified diff side by side: unchanged lines on both sides, a run of
 * removed lines next to the added lines that replace it, the shorter side padded. */
static void
side_by_side (CorralTaskDiff *d, const char *full)
{
        g_auto (GStrv) lines = g_strsplit (full, "\n", -1);
        g_autoptr (GPtrArray) removed = g_ptr_array_new ();
        g_autoptr (GPtrArray) added = g_ptr_array_new ();

        d->before = g_string_new (NULL);
        d->after = g_string_new (NULL);
        d->before_lines = g_byte_array_new ();
        d->after_lines = g_byte_array_new ();
        for (guint i = 0;; i++) {
                const char *l = lines[i];
                gboolean flush = !l || (l[0] != '-' && l[0] != '+' && l[0] != '\\');

                if (flush) {
                        guint n = MAX (removed->len, added->len);

                        for (guint k = 0; k < n; k++) {
                                const char *r = k < removed->len ? removed->pdata[k] : NULL;
                                const char *a = k < added->len ? added->pdata[k] : NULL;

                                add_line (d->before, d->before_lines, r ? r + 1 : "",
                                          r ? strlen (r + 1) : 0,
                                          r ? CORRAL_TASK_LINE_REMOVED : CORRAL_TASK_LINE_FILLER);
                                add_line (d->after, d->after_lines, a ? a + 1 : "",
                                          a ? strlen (a + 1) : 0,
                                          a ? CORRAL_TASK_LINE_ADDED : CORRAL_TASK_LINE_FILLER);
                        }
                        g_ptr_array_set_size (removed, 0);
                        g_ptr_array_set_size (added, 0);
                }
                if (!l)
                        break;
                /* The two labels and the hunk headers are not lines of the file. */
                if (i < 2 && (g_str_has_prefix (l, "--- ") || g_str_has_prefix (l, "+++ ")))
                        continue;
                if (l[0] == '-')
                        g_ptr_array_add (removed, (gpointer) l);
                else if (l[0] == '+')
                        g_ptr_array_add (added, (gpointer) l);
                else if (l[0] == ' ') {
                        add_line (d->before, d->before_lines, l + 1, strlen (l + 1),
                                  CORRAL_TASK_LINE_SAME);
                        add_line (d->after, d->after_lines, l + 1, strlen (l + 1),
                                  CORRAL_TASK_LINE_SAME);
                }
                /* "@@" and "\ No newline at end of file": nothing to show. */
        }
}

/* Both sides whole, for an unchanged file (only renamed or its mode). */
static void
same_both_sides (CorralTaskDiff *d, const Side *s)
{
        g_autofree char *text = g_strndup ((const char *) s->data->data, s->data->len);
        g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
        guint n = g_strv_length (lines);

        d->before = g_string_new (NULL);
        d->after = g_string_new (NULL);
        d->before_lines = g_byte_array_new ();
        d->after_lines = g_byte_array_new ();
        /* A last newline ends the last line; it does not start another. */
        if (n > 0 && lines[n - 1][0] == '\0')
                n--;
        for (guint i = 0; i < n; i++) {
                add_line (d->before, d->before_lines, lines[i], strlen (lines[i]),
                          CORRAL_TASK_LINE_SAME);
                add_line (d->after, d->after_lines, lines[i], strlen (lines[i]),
                          CORRAL_TASK_LINE_SAME);
        }
}

CorralTaskDiff *
corral_task_change_diff (const CorralTaskChange *c, GError **error)
{
        g_autoptr (CorralTaskDiff) d = g_new0 (CorralTaskDiff, 1);
        Side a = { .fd = -1 }, b = { .fd = -1 };
        g_autoptr (GError) local = NULL;
        g_autofree char *label_a = NULL, *label_b = NULL, *full = NULL;

        d->size_before = c->size_before;
        d->size_after = -1;
        if (c->type != 'f' ||
            (!c->content_changed && c->kind == CORRAL_TASK_CHANGE_MODIFIED && !c->mode_changed)) {
                d->kind = CORRAL_TASK_DIFF_NONE;
                return g_steal_pointer (&d);
        }
        if (c->lost) {
                d->kind = CORRAL_TASK_DIFF_UNAVAILABLE;
                d->reason = g_strdup (c->lost);
                return g_steal_pointer (&d);
        }
        if (!c->folder) {
                d->kind = CORRAL_TASK_DIFF_UNAVAILABLE;
                d->reason = g_strdup (_ ("Where its shared folder is on this computer is not "
                                         "known any more."));
                return g_steal_pointer (&d);
        }
        /* The original: the kept copy; an unchanged renamed file is its own original. */
        if (c->kept_path && !side_open (&a, NULL, c->kept_path, &local))
                goto unavailable;
        if (c->kind != CORRAL_TASK_CHANGE_DELETED) {
                if (!side_open (&b, c->folder, c->path, &local))
                        goto unavailable;
                d->size_after = b.size;
        }
        if (!c->kept_path && c->kind != CORRAL_TASK_CHANGE_ADDED && !c->content_changed) {
                /* Renamed or its mode changed only: the same content on both sides. */
                if (b.size > (gint64) CORRAL_TASK_DIFF_MAX_TEXT)
                        d->kind = CORRAL_TASK_DIFF_TOO_LARGE;
                else if (image_ok (&b))
                        d->kind = CORRAL_TASK_DIFF_IMAGE;
                else if (!is_text (&b))
                        d->kind = CORRAL_TASK_DIFF_BINARY;
                else {
                        d->kind = CORRAL_TASK_DIFF_TEXT;
                        d->unified = g_strdup ("");
                        same_both_sides (d, &b);
                }
                if (d->kind == CORRAL_TASK_DIFF_IMAGE) {
                        d->before_image = g_byte_array_free_to_bytes (g_byte_array_ref (b.data));
                        d->after_image = g_bytes_ref (d->before_image);
                }
                d->size_before = b.size;
                side_clear (&b);
                return g_steal_pointer (&d);
        }
        if ((!a.present || image_ok (&a)) && (!b.present || image_ok (&b)) &&
            (a.present || b.present)) {
                d->kind = CORRAL_TASK_DIFF_IMAGE;
                if (a.present)
                        d->before_image = g_byte_array_free_to_bytes (g_byte_array_ref (a.data));
                if (b.present)
                        d->after_image = g_byte_array_free_to_bytes (g_byte_array_ref (b.data));
        } else if ((a.present && a.size > (gint64) CORRAL_TASK_DIFF_MAX_TEXT) ||
                   (b.present && b.size > (gint64) CORRAL_TASK_DIFF_MAX_TEXT)) {
                d->kind = CORRAL_TASK_DIFF_TOO_LARGE;
        } else if (!is_text (&a) || !is_text (&b)) {
                d->kind = CORRAL_TASK_DIFF_BINARY;
        } else {
                d->kind = CORRAL_TASK_DIFF_TEXT;
                label_a = g_strconcat ("a/", c->share, "/", c->origin ? c->origin : c->path, NULL);
                label_b = g_strconcat ("b/", c->share, "/", c->path, NULL);
                if (!(d->unified = run_diff (&a, &b, label_a, label_b, 3, error)) ||
                    !(full = run_diff (&a, &b, label_a, label_b, G_MAXINT32, error))) {
                        side_clear (&a);
                        side_clear (&b);
                        return NULL;
                }
                /* diff(1) copies the files' bytes; they were valid UTF-8, its output too, but a
                 * label is the guest's: keep the whole text valid for the presenter. */
                if (!g_utf8_validate (d->unified, -1, NULL)) {
                        char *valid = g_utf8_make_valid (d->unified, -1);
                        g_free (d->unified);
                        d->unified = valid;
                }
                if (*full)
                        side_by_side (d, full);
                else /* written again with the same bytes */
                        same_both_sides (d, b.present ? &b : &a);
        }
        side_clear (&a);
        side_clear (&b);
        return g_steal_pointer (&d);

unavailable:
        side_clear (&a);
        side_clear (&b);
        d->kind = CORRAL_TASK_DIFF_UNAVAILABLE;
        d->reason = g_strdup (local->message);
        return g_steal_pointer (&d);
}
