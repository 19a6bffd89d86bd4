/* fs-journal.c — a task's change journal: writing, reading and folding it (fs-journal.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-journal.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-cjson.h"
#include "corral-glib-compat.h"

#define MAX_PATH 4096
#define MAX_SHARE 255
#define MAX_FILE ((goffset) 256 << 20)

static const char *const type_names[] = {
        [FS_JOURNAL_KEEP] = "keep",     [FS_JOURNAL_ADD] = "add",
        [FS_JOURNAL_DELETE] = "delete", [FS_JOURNAL_RENAME] = "rename",
        [FS_JOURNAL_META] = "meta",     [FS_JOURNAL_WROTE] = "wrote",
        [FS_JOURNAL_UNDONE] = "undone", [FS_JOURNAL_SHARE] = "share",
        [FS_JOURNAL_TIMES] = "times",   [FS_JOURNAL_WRITING] = "writing",
        [FS_JOURNAL_FULL] = "full",
};
G_STATIC_ASSERT (G_N_ELEMENTS (type_names) == FS_JOURNAL_FULL + 1);

void
fs_journal_record_free (FsJournalRecord *rec)
{
        if (!rec)
                return;
        g_free (rec->share);
        g_free (rec->path);
        g_free (rec->to);
        g_free (rec->copy);
        g_free (rec->lost);
        g_free (rec->folder);
        g_free (rec);
}

static const char *
kind_name (char kind)
{
        switch (kind) {
        case 'd':
                return "dir";
        case 'l':
                return "link";
        default:
                return "file";
        }
}

static char
kind_from_name (const char *name)
{
        if (g_str_equal (name, "file"))
                return 'f';
        if (g_str_equal (name, "dir"))
                return 'd';
        if (g_str_equal (name, "link"))
                return 'l';
        return 0;
}

/* Formatting ---------------------------------------------------------------------------------- */

/* A whole number written exactly (cJSON's own printing rounds past 2^52). */
static void
add_int (cJSON *o, const char *key, int64_t n)
{
        char text[24];

        g_snprintf (text, sizeof text, "%" G_GINT64_FORMAT, n);
        cJSON_AddRawToObject (o, key, text);
}

char *
fs_journal_format (const FsJournalRecord *rec)
{
        g_autoptr (cJSON) o = cJSON_CreateObject ();
        g_autofree char *text = NULL;

        cJSON_AddStringToObject (o, "t", type_names[rec->type]);
        if (rec->share)
                cJSON_AddStringToObject (o, "share", rec->share);
        if (rec->path)
                cJSON_AddStringToObject (o, "path", rec->path);
        if (rec->folder)
                cJSON_AddStringToObject (o, "folder", rec->folder);
        if (rec->to)
                cJSON_AddStringToObject (o, "to", rec->to);
        if (rec->exchange)
                cJSON_AddBoolToObject (o, "exchange", TRUE);
        if (rec->copy)
                cJSON_AddStringToObject (o, "copy", rec->copy);
        if (rec->lost)
                cJSON_AddStringToObject (o, "lost", rec->lost);
        if (rec->kind)
                cJSON_AddStringToObject (o, "kind", kind_name (rec->kind));
        if (rec->replaced)
                cJSON_AddStringToObject (o, "replaced", kind_name (rec->replaced));
        if (rec->has_mode)
                add_int (o, "mode", rec->mode);
        if (rec->has_mtime) {
                add_int (o, "mtime", rec->mtime);
                add_int (o, "mtime_ns", rec->mtime_ns);
        }
        if (rec->type == FS_JOURNAL_KEEP || rec->type == FS_JOURNAL_DELETE ||
            rec->type == FS_JOURNAL_WROTE)
                add_int (o, "size", (int64_t) rec->size);
        add_int (o, "time", rec->time);
        text = cJSON_PrintUnformatted (o);
        return g_strconcat (text, "\n", NULL);
}

/* Parsing ------------------------------------------------------------------------------------- */

/* A path relative to a share: non-empty components, none "." or "..", not too long. */
static bool
rel_path_valid (const char *p)
{
        size_t len = strlen (p);
        const char *c = p;

        if (len == 0 || len >= MAX_PATH || p[0] == '/')
                return false;
        while (*c) {
                const char *end = strchr (c, '/');
                size_t n = end ? (size_t) (end - c) : strlen (c);

                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!end)
                        break;
                c = end + 1;
                if (!*c)
                        return false; /* a trailing slash */
        }
        return true;
}

static bool
share_valid (const char *s)
{
        size_t len = strlen (s);

        return len > 0 && len <= MAX_SHARE && !strchr (s, '/') && s[0] != '.';
}

/* SHARE/NAME in the keep folder: two components, the name not hidden. */
static bool
copy_valid (const char *c)
{
        const char *slash = strchr (c, '/');

        if (!slash || strchr (slash + 1, '/') || !slash[1] || slash[1] == '.' ||
            strlen (c) >= MAX_PATH)
                return false;
        {
                g_autofree char *share = g_strndup (c, (gsize) (slash - c));
                return share_valid (share);
        }
}

static gboolean
bad (GError **error, const char *what)
{
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s", what);
        return FALSE;
}

static gboolean
get_string (cJSON *o, const char *key, bool required, char **ret, GError **error)
{
        cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);

        if (!v)
                return required ? (g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                                "no \"%s\"", key),
                                   FALSE)
                                : TRUE;
        if (!cJSON_IsString (v) || !v->valuestring) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "\"%s\" is not a string",
                             key);
                return FALSE;
        }
        *ret = g_strdup (v->valuestring);
        return TRUE;
}

/* An integer in [min, max]; absent: *present stays false. */
static gboolean
get_int (cJSON *o,
         const char *key,
         double min,
         double max,
         bool *present,
         int64_t *ret,
         GError **error)
{
        cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);

        if (!v)
                return TRUE;
        if (!cJSON_IsNumber (v) || !isfinite (v->valuedouble) || v->valuedouble < min ||
            v->valuedouble > max || v->valuedouble != floor (v->valuedouble)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                             "\"%s\" is not a whole number in range", key);
                return FALSE;
        }
        *ret = (int64_t) v->valuedouble;
        if (present)
                *present = true;
        return TRUE;
}

static gboolean
get_kind (cJSON *o, const char *key, char *ret, GError **error)
{
        g_autofree char *name = NULL;

        if (!get_string (o, key, false, &name, error))
                return FALSE;
        if (name && !(*ret = kind_from_name (name))) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                             "\"%s\" is not file, dir or link", key);
                return FALSE;
        }
        return TRUE;
}

#define MAX_EXACT 9007199254740991.0 /* 2^53 - 1: every integer a double holds exactly */

static gboolean
parse_fields (cJSON *o, FsJournalRecord *rec, GError **error)
{
        g_autofree char *t = NULL;
        int64_t n = 0;
        bool present = false;
        cJSON *ex;
        guint i;

        if (!get_string (o, "t", true, &t, error))
                return FALSE;
        for (i = 0; i < G_N_ELEMENTS (type_names); i++)
                if (g_str_equal (t, type_names[i]))
                        break;
        if (i == G_N_ELEMENTS (type_names))
                return bad (error, "unknown record type");
        rec->type = (FsJournalType) i;
        /* A share line names a folder; every other line one path in one share. */
        if (!get_string (o, "share", rec->type != FS_JOURNAL_FULL, &rec->share, error) ||
            !get_string (o, "path", rec->type != FS_JOURNAL_SHARE && rec->type != FS_JOURNAL_FULL,
                         &rec->path, error) ||
            !get_string (o, "folder", rec->type == FS_JOURNAL_SHARE, &rec->folder, error) ||
            !get_string (o, "to", rec->type == FS_JOURNAL_RENAME, &rec->to, error) ||
            !get_string (o, "copy", false, &rec->copy, error) ||
            !get_string (o, "lost", false, &rec->lost, error) ||
            !get_kind (o, "kind", &rec->kind, error) ||
            !get_kind (o, "replaced", &rec->replaced, error))
                return FALSE;
        if (rec->type == FS_JOURNAL_SHARE &&
            (rec->path || rec->folder[0] != '/' || strlen (rec->folder) >= MAX_PATH))
                return bad (error, "a share line without one absolute folder");
        if (rec->type != FS_JOURNAL_SHARE && rec->folder)
                return bad (error, "a folder on a line that is not a share's");
        if (rec->type == FS_JOURNAL_FULL && (rec->share || rec->path))
                return bad (error, "a full line that names a path");
        if (rec->share && !share_valid (rec->share))
                return bad (error, "not a share name");
        if ((rec->path && !rel_path_valid (rec->path)) || (rec->to && !rel_path_valid (rec->to)))
                return bad (error, "not a path in a share");
        if (rec->copy && (!copy_valid (rec->copy) || rec->type != FS_JOURNAL_KEEP))
                return bad (error, "not a kept copy's name");
        if (rec->lost && (rec->copy || rec->type != FS_JOURNAL_KEEP || strlen (rec->lost) > 64))
                return bad (error, "a reason without a missing copy");

        if (rec->to && rec->type != FS_JOURNAL_RENAME)
                return bad (error, "a destination for something other than a rename");
        ex = cJSON_GetObjectItemCaseSensitive (o, "exchange");
        if (ex && (!cJSON_IsBool (ex) || rec->type != FS_JOURNAL_RENAME))
                return bad (error, "\"exchange\" is not a rename's flag");
        rec->exchange = ex && cJSON_IsTrue (ex);
        if (!get_int (o, "mode", 0, 07777, &rec->has_mode, &n, error))
                return FALSE;
        rec->mode = (uint32_t) n;
        if (rec->type == FS_JOURNAL_META && !rec->has_mode)
                return bad (error, "a mode change without the mode");
        n = 0;
        if (!get_int (o, "mtime", -MAX_EXACT, MAX_EXACT, &rec->has_mtime, &rec->mtime, error) ||
            !get_int (o, "mtime_ns", 0, 999999999, &present, &n, error))
                return FALSE;
        rec->mtime_ns = (uint32_t) n;
        if ((rec->type == FS_JOURNAL_WROTE || rec->type == FS_JOURNAL_TIMES) && !rec->has_mtime)
                return bad (error, "a time change without the time");
        n = 0;
        if (!get_int (o, "size", 0, MAX_EXACT, NULL, &n, error))
                return FALSE;
        rec->size = (uint64_t) n;
        /* An empty file needs no copy to be made empty again. */
        if (rec->type == FS_JOURNAL_KEEP && !rec->copy && !rec->lost && rec->size != 0)
                return bad (error, "a kept file with neither a copy nor a reason");
        return get_int (o, "time", 0, MAX_EXACT, NULL, &rec->time, error);
}

FsJournalRecord *
fs_journal_parse_line (const char *line, size_t len, GError **error)
{
        g_autoptr (FsJournalRecord) rec = g_new0 (FsJournalRecord, 1);
        g_autoptr (cJSON) o = NULL;

        if (len > FS_JOURNAL_MAX_LINE)
                return bad (error, "a line too long"), NULL;
        if (memchr (line, '\0', len))
                return bad (error, "a NUL byte"), NULL;
        o = cJSON_ParseWithLength (line, len);
        if (!cJSON_IsObject (o))
                return bad (error, "not a JSON object"), NULL;
        if (!parse_fields (o, rec, error))
                return NULL;
        return g_steal_pointer (&rec);
}

GPtrArray *
fs_journal_parse (const char *data, size_t len, GError **error)
{
        g_autoptr (GPtrArray) records =
                g_ptr_array_new_with_free_func ((GDestroyNotify) fs_journal_record_free);
        size_t pos = 0;
        guint line_no = 0;

        while (pos < len) {
                const char *nl = memchr (data + pos, '\n', len - pos);
                g_autoptr (GError) local = NULL;
                FsJournalRecord *rec;

                if (!nl)
                        break; /* cut short by a crash: never completed, never acted on */
                line_no++;
                if (records->len >= FS_JOURNAL_MAX_RECORDS) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     "The change journal has more than %u records",
                                     FS_JOURNAL_MAX_RECORDS);
                        return NULL;
                }
                rec = fs_journal_parse_line (data + pos, (size_t) (nl - (data + pos)), &local);
                if (!rec) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     "The change journal is damaged at line %u: %s", line_no,
                                     local->message);
                        return NULL;
                }
                g_ptr_array_add (records, rec);
                pos = (size_t) (nl - data) + 1;
        }
        return g_steal_pointer (&records);
}

GPtrArray *
fs_journal_read (const char *keep_dir, GError **error)
{
        g_autofree char *path = g_build_filename (keep_dir, FS_JOURNAL_FILE, NULL);
        g_autofd int fd = open (path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        g_autofree char *data = NULL;
        struct stat st;
        size_t len = 0;

        if (fd < 0 && errno == ENOENT)
                return g_ptr_array_new_with_free_func ((GDestroyNotify) fs_journal_record_free);
        if (fd < 0 || fstat (fd, &st) < 0) {
                int e = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                             "Cannot read the change journal %s: %s", path, g_strerror (e));
                return NULL;
        }
        if (!S_ISREG (st.st_mode) || st.st_size > MAX_FILE) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                             "The change journal %s is not a file of at most 256 MiB", path);
                return NULL;
        }
        data = g_malloc ((gsize) st.st_size + 1);
        while (len < (size_t) st.st_size) {
                ssize_t n = read (fd, data + len, (size_t) st.st_size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                                     "Cannot read the change journal %s: %s", path, g_strerror (e));
                        return NULL;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        {
                GPtrArray *records = fs_journal_parse (data, len, error);
                if (!records)
                        g_prefix_error (error, "%s: ", path);
                return records;
        }
}

/* Writing ------------------------------------------------------------------------------------- */

/* Room left for the "full" line. */
#define FULL_RESERVE 256

struct _FsJournal {
        char *dir;
        int fd; /* -1 until the first record */
        gint64 max_size;
        bool full;
};

FsJournal *
fs_journal_open (const char *keep_dir)
{
        FsJournal *j = g_new0 (FsJournal, 1);

        j->dir = g_strdup (keep_dir);
        j->fd = -1;
        j->max_size = FS_JOURNAL_MAX_SIZE;
        return j;
}

void
fs_journal_close (FsJournal *j)
{
        if (!j)
                return;
        if (j->fd >= 0)
                close (j->fd);
        g_free (j->dir);
        g_free (j);
}

/* A last line without its newline was cut short: cut it off, so the next one starts clean. */
static int
repair_tail (int fd)
{
        struct stat st;
        char buf[4096];
        off_t end;

        if (fstat (fd, &st) < 0)
                return -errno;
        end = st.st_size;
        while (end > 0) {
                size_t n = (size_t) MIN ((off_t) sizeof buf, end);
                ssize_t got = pread (fd, buf, n, end - (off_t) n);

                if (got != (ssize_t) n)
                        return got < 0 ? -errno : -EIO;
                for (size_t i = n; i > 0; i--) {
                        if (buf[i - 1] == '\n') {
                                off_t keep = end - (off_t) n + (off_t) i;
                                if (keep != st.st_size && ftruncate (fd, keep) < 0)
                                        return -errno;
                                return 0;
                        }
                }
                end -= (off_t) n;
        }
        return st.st_size > 0 && ftruncate (fd, 0) < 0 ? -errno : 0;
}

static int
ensure_open (FsJournal *j)
{
        g_autofree char *path = NULL;
        int fd, r;

        if (j->fd >= 0)
                return 0;
        if (g_mkdir_with_parents (j->dir, 0700) < 0)
                return -errno;
        path = g_build_filename (j->dir, FS_JOURNAL_FILE, NULL);
        fd = open (path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        r = repair_tail (fd);
        if (r < 0) {
                close (fd);
                return r;
        }
        j->fd = fd;
        {
                struct stat st;
                /* Full from an earlier server: it stays full until kept or undone. */
                if (fstat (fd, &st) == 0 && st.st_size + FULL_RESERVE >= j->max_size)
                        j->full = true;
        }
        return 0;
}

int
fs_journal_empty (FsJournal *j)
{
        int r = ensure_open (j);

        if (r < 0)
                return r;
        if (ftruncate (j->fd, 0) < 0 || fdatasync (j->fd) < 0)
                return -errno;
        j->full = false;
        return 0;
}

bool
fs_journal_is_full (FsJournal *j)
{
        return j->full || (ensure_open (j) == 0 && j->full);
}

void
fs_journal_set_max_size (FsJournal *j, gint64 max)
{
        j->max_size = max;
}

bool
fs_journal_complete (GPtrArray *records)
{
        for (guint i = 0; i < records->len; i++)
                if (((FsJournalRecord *) records->pdata[i])->type == FS_JOURNAL_FULL)
                        return false;
        return true;
}

int
fs_journal_append (FsJournal *j, FsJournalRecord *rec, bool sync)
{
        g_autofree char *line = NULL;
        size_t len, done = 0;
        struct stat st;
        int r;

        rec->time = g_get_real_time ();
        line = fs_journal_format (rec);
        len = strlen (line);
        if (len > FS_JOURNAL_MAX_LINE)
                return -ENAMETOOLONG;
        r = ensure_open (j);
        if (r < 0)
                return r;
        if (j->full)
                return -EFBIG;
        if (fstat (j->fd, &st) < 0)
                return -errno;
        if (st.st_size + (off_t) len + FULL_RESERVE > j->max_size) {
                /* The last line: what follows is not recorded. */
                g_autofree char *full = NULL;
                FsJournalRecord end = { .type = FS_JOURNAL_FULL, .time = g_get_real_time () };

                j->full = true;
                full = fs_journal_format (&end);
                if (write (j->fd, full, strlen (full)) != (ssize_t) strlen (full) &&
                    ftruncate (j->fd, st.st_size) < 0)
                        g_debug ("cannot cut the journal back: %s", g_strerror (errno));
                fdatasync (j->fd);
                return -EFBIG;
        }
        while (done < len) {
                ssize_t n = write (j->fd, line + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -EIO;
                        /* No half line stays for the next record to run into. */
                        if (ftruncate (j->fd, st.st_size) < 0)
                                g_debug ("cannot cut the journal back: %s", g_strerror (errno));
                        return r;
                }
                done += (size_t) n;
        }
        if (sync && fdatasync (j->fd) < 0)
                return -errno;
        return 0;
}

/* Folding ------------------------------------------------------------------------------------- */

typedef struct {
        char *origin; /* the path it had when the task began; NULL: made in this task */
        char type;
        char *copy, *lost;
        bool content, mode_changed, time_changed;
        bool has_mode, has_mtime;
        uint32_t mode;
        int64_t mtime;
        uint32_t mtime_ns;
        uint64_t size;
        bool has_after;
        uint64_t after_size;
        int64_t after_mtime;
        uint32_t after_mtime_ns;
} Entry;

static void
entry_free (Entry *e)
{
        g_free (e->origin);
        g_free (e->copy);
        g_free (e->lost);
        g_free (e);
}

typedef struct {
        GHashTable *now; /* "share/path" -> Entry */
        GPtrArray *deleted; /* FsJournalChange */
} Fold;

static char *
key_of (const char *share, const char *path)
{
        return g_strconcat (share, "/", path, NULL);
}

static Entry *
take (Fold *f, const char *key)
{
        gpointer k = NULL, v = NULL;

        if (!g_hash_table_steal_extended (f->now, key, &k, &v))
                return NULL;
        g_free (k);
        return v;
}

/* Where a path not seen yet was when the task began: beneath the nearest folder the journal
 * knows, where that folder was (a renamed folder carries what it holds); NULL beneath a
 * folder made in this task. */
static char *
origin_of (Fold *f, const char *share, const char *path)
{
        g_autofree char *dir = g_strdup (path);
        char *slash;

        while ((slash = strrchr (dir, '/'))) {
                g_autofree char *key = NULL;
                Entry *d;

                *slash = '\0';
                key = key_of (share, dir);
                d = g_hash_table_lookup (f->now, key);
                if (d && d->type == 'd')
                        return d->origin
                                       ? g_strconcat (d->origin, "/", path + strlen (dir) + 1, NULL)
                                       : NULL;
        }
        return g_strdup (path);
}

/* The entry for a path, made for a file that was there when the task began if there is none. */
static Entry *
get_or_original (Fold *f, const char *share, const char *path, char type)
{
        g_autofree char *key = key_of (share, path);
        Entry *e = g_hash_table_lookup (f->now, key);

        if (!e) {
                e = g_new0 (Entry, 1);
                e->origin = origin_of (f, share, path);
                e->type = type ? type : 'f';
                g_hash_table_insert (f->now, g_steal_pointer (&key), e);
        }
        return e;
}

static void
add_deleted (Fold *f, const char *share, Entry *e)
{
        FsJournalChange *c;

        if (!e->origin) {
                entry_free (e); /* made and removed again: no change */
                return;
        }
        c = g_new0 (FsJournalChange, 1);
        c->kind = FS_JOURNAL_DELETED;
        c->share = g_strdup (share);
        c->path = g_steal_pointer (&e->origin);
        c->copy = g_steal_pointer (&e->copy);
        c->lost = g_steal_pointer (&e->lost);
        c->type = e->type;
        c->has_mode = e->has_mode;
        c->mode = e->mode;
        c->has_mtime = e->has_mtime;
        c->mtime = e->mtime;
        c->mtime_ns = e->mtime_ns;
        c->size = e->size;
        g_ptr_array_add (f->deleted, c);
        entry_free (e);
}

/* Moves every entry beneath share/from/ to share/to/ (a folder renamed). */
static void
move_beneath (Fold *f, const char *share, const char *from, const char *to)
{
        g_autofree char *prefix = g_strconcat (share, "/", from, "/", NULL);
        g_autoptr (GPtrArray) keys = g_ptr_array_new ();
        size_t plen = strlen (prefix);
        GHashTableIter iter;
        gpointer k;

        g_hash_table_iter_init (&iter, f->now);
        while (g_hash_table_iter_next (&iter, &k, NULL))
                if (g_str_has_prefix (k, prefix))
                        g_ptr_array_add (keys, g_strdup (k));
        for (guint i = 0; i < keys->len; i++) {
                g_autofree char *old = keys->pdata[i];
                Entry *e = take (f, old);
                char *nkey = g_strconcat (share, "/", to, "/", old + plen, NULL);
                Entry *there = take (f, nkey);

                if (there)
                        add_deleted (f, share, there);
                g_hash_table_insert (f->now, nkey, e);
        }
}

static void
fold_keep (Fold *f, const FsJournalRecord *r)
{
        Entry *e = get_or_original (f, r->share, r->path, 'f');

        if (!e->origin)
                return; /* made in this task */
        if (!e->copy && !e->lost) {
                e->copy = g_strdup (r->copy);
                e->lost = g_strdup (r->lost);
                e->size = r->size;
                if (!e->has_mode && r->has_mode) {
                        e->has_mode = true;
                        e->mode = r->mode;
                }
                if (!e->has_mtime && r->has_mtime) {
                        e->has_mtime = true;
                        e->mtime = r->mtime;
                        e->mtime_ns = r->mtime_ns;
                }
        }
        e->content = true;
}

static void
fold_add (Fold *f, const FsJournalRecord *r)
{
        g_autofree char *key = key_of (r->share, r->path);
        Entry *e = take (f, key), *n = g_new0 (Entry, 1);

        if (e)
                add_deleted (f, r->share, e);
        n->type = r->kind ? r->kind : 'f';
        g_hash_table_insert (f->now, g_steal_pointer (&key), n);
}

static void
fold_delete (Fold *f, const FsJournalRecord *r)
{
        g_autofree char *key = key_of (r->share, r->path);
        Entry *e = take (f, key);

        if (!e) {
                e = g_new0 (Entry, 1);
                e->origin = origin_of (f, r->share, r->path);
                e->type = r->kind ? r->kind : 'f';
        }
        if (e->origin && !e->has_mode && r->has_mode) {
                e->has_mode = true;
                e->mode = r->mode;
        }
        if (e->origin && !e->has_mtime && r->has_mtime) {
                e->has_mtime = true;
                e->mtime = r->mtime;
                e->mtime_ns = r->mtime_ns;
        }
        add_deleted (f, r->share, e);
}

static Entry *
take_or_original (Fold *f, const char *share, const char *path, char type)
{
        g_autofree char *key = key_of (share, path);
        Entry *e = take (f, key);

        if (!e) {
                e = g_new0 (Entry, 1);
                e->origin = origin_of (f, share, path);
                e->type = type ? type : 'f';
        }
        return e;
}

static void
fold_rename (Fold *f, const FsJournalRecord *r)
{
        Entry *src = take_or_original (f, r->share, r->path, r->kind);

        if (g_str_equal (r->path, r->to)) {
                g_hash_table_insert (f->now, key_of (r->share, r->path), src);
                return;
        }
        if (r->exchange) {
                Entry *dst = take_or_original (f, r->share, r->to, r->replaced);
                g_autofree char *park = g_strconcat (r->to, "/\x01", NULL);

                move_beneath (f, r->share, r->to, park);
                move_beneath (f, r->share, r->path, r->to);
                move_beneath (f, r->share, park, r->path);
                g_hash_table_insert (f->now, key_of (r->share, r->to), src);
                g_hash_table_insert (f->now, key_of (r->share, r->path), dst);
                return;
        }
        {
                g_autofree char *key = key_of (r->share, r->to);
                Entry *dst = take (f, key);

                if (!dst && r->replaced) {
                        dst = g_new0 (Entry, 1);
                        dst->origin = origin_of (f, r->share, r->to);
                        dst->type = r->replaced;
                }
                if (dst)
                        add_deleted (f, r->share, dst);
                g_hash_table_insert (f->now, g_steal_pointer (&key), src);
                if (src->type == 'd')
                        move_beneath (f, r->share, r->path, r->to);
        }
}

static void
fold_meta (Fold *f, const FsJournalRecord *r)
{
        Entry *e = get_or_original (f, r->share, r->path, r->kind);

        if (!e->origin)
                return;
        if (!e->has_mode) {
                e->has_mode = true;
                e->mode = r->mode;
        }
        e->mode_changed = true;
}

static void
fold_times (Fold *f, const FsJournalRecord *r)
{
        Entry *e = get_or_original (f, r->share, r->path, 'f');

        if (!e->origin)
                return;
        if (!e->has_mtime) {
                e->has_mtime = true;
                e->mtime = r->mtime;
                e->mtime_ns = r->mtime_ns;
        }
        e->time_changed = true;
}

static void
fold_wrote (Fold *f, const FsJournalRecord *r)
{
        Entry *e = get_or_original (f, r->share, r->path, 'f');

        e->has_after = true;
        e->after_size = r->size;
        e->after_mtime = r->mtime;
        e->after_mtime_ns = r->mtime_ns;
}

static void
fold_writing (Fold *f, const FsJournalRecord *r)
{
        get_or_original (f, r->share, r->path, 'f')->has_after = false;
}

/* The person undid the change listed at this path: it is as it was (for a rename, back where
 * it was; for a delete, there again). */
static void
fold_undone (Fold *f, const FsJournalRecord *r)
{
        g_autofree char *key = key_of (r->share, r->path);
        Entry *e = take (f, key);

        if (e && e->type == 'd' && e->origin && !g_str_equal (e->origin, r->path))
                move_beneath (f, r->share, r->path, e->origin);
        if (e)
                entry_free (e);
        for (guint i = f->deleted->len; i > 0; i--) {
                const FsJournalChange *c = f->deleted->pdata[i - 1];
                if (g_str_equal (c->share, r->share) && g_str_equal (c->path, r->path))
                        g_ptr_array_remove_index (f->deleted, i - 1);
        }
}

static FsJournalChange *
change_from_entry (const char *key, Entry *e)
{
        const char *slash = strchr (key, '/');
        g_autofree char *share = g_strndup (key, (gsize) (slash - key));
        const char *path = slash + 1;
        FsJournalChange *c;

        if (e->origin && g_str_equal (e->origin, path) && !e->content && !e->mode_changed &&
            !e->time_changed)
                return NULL;
        c = g_new0 (FsJournalChange, 1);
        c->share = g_steal_pointer (&share);
        c->path = g_strdup (path);
        c->type = e->type;
        if (!e->origin)
                c->kind = FS_JOURNAL_ADDED;
        else if (g_str_equal (e->origin, path))
                c->kind = FS_JOURNAL_MODIFIED;
        else
                c->kind = FS_JOURNAL_RENAMED;
        if (e->origin && !g_str_equal (e->origin, path))
                c->origin = g_strdup (e->origin);
        c->copy = g_strdup (e->copy);
        c->lost = g_strdup (e->lost);
        c->content_changed = e->content;
        c->mode_changed = e->mode_changed;
        c->time_changed = e->time_changed && !e->content;
        c->has_mode = e->has_mode;
        c->mode = e->mode;
        c->has_mtime = e->has_mtime;
        c->mtime = e->mtime;
        c->mtime_ns = e->mtime_ns;
        c->size = e->size;
        c->has_after = e->has_after;
        c->after_size = e->after_size;
        c->after_mtime = e->after_mtime;
        c->after_mtime_ns = e->after_mtime_ns;
        return c;
}

void
fs_journal_change_free (FsJournalChange *c)
{
        if (!c)
                return;
        g_free (c->share);
        g_free (c->path);
        g_free (c->origin);
        g_free (c->copy);
        g_free (c->lost);
        g_free (c);
}

static int
change_cmp (gconstpointer a, gconstpointer b)
{
        const FsJournalChange *x = *(FsJournalChange *const *) a,
                              *y = *(FsJournalChange *const *) b;
        int c = strcmp (x->share, y->share);

        if (c == 0)
                c = strcmp (x->path, y->path);
        return c != 0 ? c : (int) x->kind - (int) y->kind;
}

/* A file made where one that was there was removed (an editor's save): one modified file. */
static void
merge_replaced (GPtrArray *changes)
{
        for (guint i = 0; i + 1 < changes->len; i++) {
                FsJournalChange *a = changes->pdata[i], *d = changes->pdata[i + 1];

                if (a->kind != FS_JOURNAL_ADDED || d->kind != FS_JOURNAL_DELETED ||
                    a->type != d->type || a->type == 'd' || !g_str_equal (a->share, d->share) ||
                    !g_str_equal (a->path, d->path))
                        continue;
                d->kind = FS_JOURNAL_MODIFIED;
                d->content_changed = true;
                g_ptr_array_remove_index (changes, i);
        }
}

GPtrArray *
fs_journal_changes (GPtrArray *records)
{
        Fold f = {
                .now = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify) entry_free),
                .deleted = g_ptr_array_new_with_free_func ((GDestroyNotify) fs_journal_change_free),
        };
        GPtrArray *changes = f.deleted;
        GHashTableIter iter;
        gpointer k, v;

        for (guint i = 0; i < records->len; i++) {
                const FsJournalRecord *r = records->pdata[i];

                switch (r->type) {
                case FS_JOURNAL_KEEP:
                        fold_keep (&f, r);
                        break;
                case FS_JOURNAL_ADD:
                        fold_add (&f, r);
                        break;
                case FS_JOURNAL_DELETE:
                        fold_delete (&f, r);
                        break;
                case FS_JOURNAL_RENAME:
                        fold_rename (&f, r);
                        break;
                case FS_JOURNAL_META:
                        fold_meta (&f, r);
                        break;
                case FS_JOURNAL_WROTE:
                        fold_wrote (&f, r);
                        break;
                case FS_JOURNAL_UNDONE:
                        fold_undone (&f, r);
                        break;
                case FS_JOURNAL_TIMES:
                        fold_times (&f, r);
                        break;
                case FS_JOURNAL_WRITING:
                        fold_writing (&f, r);
                        break;
                case FS_JOURNAL_SHARE:
                case FS_JOURNAL_FULL:
                        break;
                }
        }
        g_hash_table_iter_init (&iter, f.now);
        while (g_hash_table_iter_next (&iter, &k, &v)) {
                FsJournalChange *c = change_from_entry (k, v);
                if (c)
                        g_ptr_array_add (changes, c);
        }
        g_hash_table_unref (f.now);
        g_ptr_array_sort (changes, change_cmp);
        merge_replaced (changes);
        return changes;
}

const char *
fs_journal_change_kind_name (FsJournalChangeKind kind)
{
        switch (kind) {
        case FS_JOURNAL_ADDED:
                return "added";
        case FS_JOURNAL_MODIFIED:
                return "modified";
        case FS_JOURNAL_RENAMED:
                return "renamed";
        case FS_JOURNAL_DELETED:
                return "deleted";
        }
        return "changed";
}

GHashTable *
fs_journal_share_folders (GPtrArray *records)
{
        GHashTable *folders = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

        for (guint i = 0; i < records->len; i++) {
                const FsJournalRecord *r = records->pdata[i];
                if (r->type == FS_JOURNAL_SHARE)
                        g_hash_table_replace (folders, g_strdup (r->share), g_strdup (r->folder));
        }
        return folders;
}
