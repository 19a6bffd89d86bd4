/* fs-undo.c — the person undoes, or keeps, what the guest changed in the shares (fs-server.h),
 * from the change journal (fs-journal.h) and the originals kept beside it.
 *
 * Undo acts for the person: the share's mode does not limit it, but every path is still
 * resolved beneath the share's root without following a link (the guest may have left links
 * and renamed folders about), nothing is written through a link, and content is restored by
 * writing a new file next to the old one and renaming it into place, so that a crash leaves
 * either. It runs inside corral-fsd when the VM's server runs (between two guest requests: the
 * guest cannot interleave) or on a server made for it when none runs.
 *
 * Every chosen change is checked first, and left as it is with the reason when it cannot be
 * undone whole: its original was not kept, the file changed on this computer after the guest
 * last wrote it (unless forced), its kept copy is missing. The rest is undone in an order that
 * lets dependent changes follow each other: what the guest made goes, moved things are set
 * aside and put back where they were (deepest first, then shallowest first), removed folders
 * come back before what goes in them, then contents and modes. Each change undone gets an
 * "undone" line; when nothing is left to undo the journal is emptied and the originals it
 * named are removed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-resolve.h"

#define PARK_PREFIX ".corral-undo-"

void
fs_undo_outcome_free (FsUndoOutcome *o)
{
        if (!o)
                return;
        g_free (o->share);
        g_free (o->path);
        g_free (o->problem);
        g_free (o);
}

typedef struct {
        const FsJournalChange *c;
        FsUndoOutcome *out;
        FsShare *share;
        char *parked; /* renamed: its name in the share root while set aside */
        bool failed;
} Item;

typedef struct {
        FsServer *s;
        GPtrArray *items; /* Item, owned */
        int keep_fd; /* the keep folder (O_PATH) */
} Undo;

static void
item_free (Item *it)
{
        g_free (it->parked);
        g_free (it);
}

static int
depth (const char *path)
{
        int n = 0;

        for (const char *p = path; *p; p++)
                n += *p == '/';
        return n;
}

static void fail (Item *it, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
fail (Item *it, const char *format, ...)
{
        va_list ap;

        if (it->out->problem)
                return;
        va_start (ap, format);
        it->out->problem = g_strdup_vprintf (format, ap);
        va_end (ap);
        it->failed = true;
}

static void
fail_errno (Item *it, const char *what, int err)
{
        fail (it, _ ("%s: %s"), what, g_strerror (err));
}

/* The folder holding path (beneath the share root, no link followed) and path's last name. */
static int
open_parent (FsShare *share, const char *path, int *ret_dirfd, const char **ret_name)
{
        g_autofree char *parent = g_path_get_dirname (path);
        const char *slash = strrchr (path, '/');

        *ret_name = slash ? slash + 1 : path;
        return fs_resolve_open (share->root_fd, share->dev, g_str_equal (parent, ".") ? "" : parent,
                                O_PATH | O_DIRECTORY, 0, ret_dirfd);
}

static bool
same_time (const struct stat *st, int64_t sec, uint32_t nsec)
{
        return st->st_mtim.tv_sec == sec && (uint32_t) st->st_mtim.tv_nsec == nsec;
}

/* The guest's view: an entry undo changed is dropped from its kernel's cache (it looks it up
 * again), and the server's node for what moved or went away is detached (ESTALE). */
static void
invalidate (FsServer *s, FsShare *share, const char *path, bool detach)
{
        g_auto (GStrv) parts = g_strsplit (path, "/", -1);
        FsNode *parent = share->root_node, *node = NULL;
        guint n = g_strv_length (parts);

        for (guint i = 0; parent && i + 1 < n; i++)
                parent = fs_node_find_child (parent, parts[i], strlen (parts[i]));
        if (!parent || n == 0)
                return;
        node = fs_node_find_child (parent, parts[n - 1], strlen (parts[n - 1]));
        if (node && detach)
                fs_node_detach (s, node);
        fs_server_notify_entry (s, parent->id, parts[n - 1]);
}

/* Copying a kept original back ------------------------------------------------------------- */

/* The kept copy of c, open for reading; -errno. */
static int
open_copy (Undo *u, const FsJournalChange *c, int *ret_fd)
{
        int fd = openat (u->keep_fd, c->copy, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
                close (fd);
                return -EINVAL;
        }
        *ret_fd = fd;
        return 0;
}

/* Writes the original of c (its kept copy, or nothing for a file that was empty) as name in
 * dirfd, with its mode and time: a new file beside it, renamed into place (over what is there
 * when replace, else only where nothing is). */
static int
write_original (Undo *u, const FsJournalChange *c, int dirfd, const char *name, bool replace)
{
        g_autofree char *tmp = NULL;
        g_autofd int in = -1, out = -1;
        struct timespec times[2] = { { .tv_nsec = UTIME_OMIT } };
        int r = 0;

        if (c->copy && (r = open_copy (u, c, &in)) < 0)
                return r;
        tmp = g_strdup_printf (PARK_PREFIX "%08x", g_random_int ());
        out = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        if (in >= 0)
                r = fs_keep_copy_data (in, out);
        if (r == 0 && c->has_mode && fchmod (out, c->mode & 0777) < 0)
                r = -errno;
        if (r == 0 && c->has_mtime) {
                times[1].tv_sec = c->mtime;
                times[1].tv_nsec = c->mtime_ns;
                if (futimens (out, times) < 0)
                        r = -errno;
        }
        if (r == 0 && fsync (out) < 0)
                r = -errno;
        if (r == 0 && renameat2 (dirfd, tmp, dirfd, name, replace ? 0 : RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0)
                unlinkat (dirfd, tmp, 0);
        return r;
}

/* Checks before anything is done --------------------------------------------------------------- */

/* Whether the file the guest last wrote at c->path was changed since on this computer. */
static bool
changed_since (FsShare *share, const FsJournalChange *c)
{
        g_autofd int dirfd = -1;
        const char *name;
        struct stat st;

        if (!c->has_after || open_parent (share, c->path, &dirfd, &name) < 0)
                return false;
        if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return true; /* gone */
        return !S_ISREG (st.st_mode) || (uint64_t) st.st_size != c->after_size ||
               !same_time (&st, c->after_mtime, c->after_mtime_ns);
}

static void
check (Undo *u, Item *it, gboolean force)
{
        const FsJournalChange *c = it->c;
        bool needs_content =
                c->type == 'f' && (c->kind == FS_JOURNAL_DELETED || c->content_changed);

        if (!it->share) {
                fail (it, _ ("Its folder is no longer shared with this task"));
                return;
        }
        if (c->lost) {
                fail (it, _ ("Its original was not kept (%s), so it cannot be undone"),
                      g_str_equal (c->lost, "budget")      ? _ ("the space for originals was full")
                      : g_str_equal (c->lost, "too-large") ? _ ("it was too large")
                                                           : _ ("it could not be read"));
                return;
        }
        if (c->kind == FS_JOURNAL_DELETED && c->type == 'l') {
                fail (it, _ ("Corral does not keep deleted links, so it cannot be restored"));
                return;
        }
        if (needs_content && c->copy) {
                g_autofd int fd = -1;
                int r = open_copy (u, c, &fd);
                if (r < 0) {
                        fail (it, _ ("Its kept original %s cannot be read: %s"), c->copy,
                              g_strerror (-r));
                        return;
                }
        } else if (needs_content && c->size != 0) {
                fail (it, _ ("Its original was not kept, so it cannot be undone"));
                return;
        }
        if (!force && c->kind != FS_JOURNAL_DELETED && changed_since (it->share, c)) {
                it->out->changed_since = TRUE;
                fail (it, _ ("It changed on this computer after the assistant changed it"));
        }
}

/* The phases -------------------------------------------------------------------------------- */

static int
by_depth_desc (gconstpointer a, gconstpointer b)
{
        const Item *x = *(Item *const *) a, *y = *(Item *const *) b;
        return depth (y->c->path) - depth (x->c->path);
}

static int
by_origin_depth (gconstpointer a, gconstpointer b)
{
        const Item *x = *(Item *const *) a, *y = *(Item *const *) b;
        const char *ox = x->c->origin ? x->c->origin : x->c->path;
        const char *oy = y->c->origin ? y->c->origin : y->c->path;
        return depth (ox) - depth (oy);
}

/* Items still to do with kind, in order. */
static GPtrArray *
select_items (Undo *u, FsJournalChangeKind kind, int type, GCompareFunc order)
{
        GPtrArray *out = g_ptr_array_new ();

        for (guint i = 0; i < u->items->len; i++) {
                Item *it = u->items->pdata[i];
                if (!it->failed && it->c->kind == kind &&
                    (type == 0 || (type == 'd') == (it->c->type == 'd')))
                        g_ptr_array_add (out, it);
        }
        if (order)
                g_ptr_array_sort (out, order);
        return out;
}

/* What the guest made goes. */
static void
remove_added (Item *it)
{
        g_autofd int dirfd = -1;
        const char *name;
        int r = open_parent (it->share, it->c->path, &dirfd, &name);

        if (r == 0 && unlinkat (dirfd, name, it->c->type == 'd' ? AT_REMOVEDIR : 0) < 0)
                r = -errno;
        if (r == -ENOTEMPTY || r == -EEXIST)
                fail (it, _ ("The folder holds files the assistant did not make; it stays"));
        else if (r < 0)
                fail_errno (it, it->c->path, -r);
}

/* A moved thing is set aside in the share root, until everything is back in place. */
static void
park (Item *it)
{
        g_autofd int dirfd = -1;
        g_autofree char *name_park = g_strdup_printf (PARK_PREFIX "%08x", g_random_int ());
        const char *name;
        int r = open_parent (it->share, it->c->path, &dirfd, &name);

        if (r == 0 && renameat2 (dirfd, name, it->share->root_fd, name_park, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0)
                fail_errno (it, it->c->path, -r);
        else
                it->parked = g_steal_pointer (&name_park);
}

/* What the guest made goes and what it moved is set aside, deepest first: a folder is reached
 * only once everything in it that was made is gone and everything moved into it is aside,
 * and nothing is looked for beneath a folder already set aside. */
static void
clear_away (Undo *u)
{
        g_autoptr (GPtrArray) items = g_ptr_array_new ();

        for (guint i = 0; i < u->items->len; i++) {
                Item *it = u->items->pdata[i];
                if (!it->failed &&
                    (it->c->kind == FS_JOURNAL_ADDED || it->c->kind == FS_JOURNAL_RENAMED))
                        g_ptr_array_add (items, it);
        }
        g_ptr_array_sort (items, by_depth_desc);
        for (guint i = 0; i < items->len; i++) {
                Item *it = items->pdata[i];
                if (it->c->kind == FS_JOURNAL_ADDED)
                        remove_added (it);
                else
                        park (it);
        }
}

/* A moved thing goes back where it was; one that cannot goes back where the guest put it. */
static void
unpark (Item *it)
{
        g_autofd int dirfd = -1;
        const char *name;
        int r = open_parent (it->share, it->c->origin, &dirfd, &name);

        if (r == 0 && renameat2 (it->share->root_fd, it->parked, dirfd, name, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0) {
                g_autofd int back = -1;
                const char *bname;

                if (r == -EEXIST)
                        fail (it, _ ("Something else is at %s now"), it->c->origin);
                else if (r == -ENOENT)
                        fail (it, _ ("The folder it was in is not there; undo that folder’s "
                                     "change first"));
                else
                        fail_errno (it, it->c->origin, -r);
                if (open_parent (it->share, it->c->path, &back, &bname) < 0 ||
                    renameat2 (it->share->root_fd, it->parked, back, bname, RENAME_NOREPLACE) < 0)
                        g_warning ("undo: %s stays as %s in %s", it->c->path, it->parked,
                                   it->share->host_path);
        }
        g_clear_pointer (&it->parked, g_free);
}

/* A removed folder comes back, empty. */
static void
remake_folder (Item *it)
{
        g_autofd int dirfd = -1;
        const char *name;
        int r = open_parent (it->share, it->c->path, &dirfd, &name);

        if (r == 0 && mkdirat (dirfd, name, it->c->has_mode ? it->c->mode & 0777 : 0755) < 0)
                r = -errno;
        if (r == -EEXIST)
                fail (it, _ ("Something else is at %s now"), it->c->path);
        else if (r < 0)
                fail_errno (it, it->c->path, -r);
}

/* Moved things and removed folders go back where they were, shallowest first, so that each
 * finds the folder it goes into. */
static void
put_back (Undo *u)
{
        g_autoptr (GPtrArray) items = g_ptr_array_new ();

        for (guint i = 0; i < u->items->len; i++) {
                Item *it = u->items->pdata[i];
                if (it->parked ||
                    (!it->failed && it->c->kind == FS_JOURNAL_DELETED && it->c->type == 'd'))
                        g_ptr_array_add (items, it);
        }
        g_ptr_array_sort (items, by_origin_depth);
        for (guint i = 0; i < items->len; i++) {
                Item *it = items->pdata[i];
                if (it->parked)
                        unpark (it);
                else
                        remake_folder (it);
        }
}

static void
restore_deleted_files (Undo *u)
{
        g_autoptr (GPtrArray) items = select_items (u, FS_JOURNAL_DELETED, 'f', NULL);

        for (guint i = 0; i < items->len; i++) {
                Item *it = items->pdata[i];
                g_autofd int dirfd = -1;
                const char *name;
                int r = open_parent (it->share, it->c->path, &dirfd, &name);

                if (r == 0)
                        r = write_original (u, it->c, dirfd, name, false);
                if (r == -EEXIST)
                        fail (it, _ ("Something else is at %s now"), it->c->path);
                else if (r < 0)
                        fail_errno (it, it->c->path, -r);
        }
}

/* Contents and modes, where they are now (renamed things are back where they were). */
static void
restore_contents (Undo *u)
{
        for (guint i = 0; i < u->items->len; i++) {
                Item *it = u->items->pdata[i];
                const FsJournalChange *c = it->c;
                const char *path = c->origin ? c->origin : c->path;
                g_autofd int dirfd = -1;
                const char *name;
                int r;

                if (it->failed || (c->kind != FS_JOURNAL_MODIFIED && c->kind != FS_JOURNAL_RENAMED))
                        continue;
                if (!c->content_changed && !c->mode_changed && !c->time_changed)
                        continue;
                r = open_parent (it->share, path, &dirfd, &name);
                if (r == 0 && c->content_changed && c->type == 'f') {
                        r = write_original (u, c, dirfd, name, true);
                } else if (r == 0 && c->type != 'l') {
                        struct timespec times[2] = { { .tv_nsec = UTIME_OMIT },
                                                     { .tv_sec = c->mtime,
                                                       .tv_nsec = c->mtime_ns } };
                        struct stat st;

                        /* chmod follows links: never through one (nothing can run in between:
                         * the guest waits, or there is no guest). */
                        if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                r = -errno;
                        else if (S_ISLNK (st.st_mode))
                                r = -ELOOP;
                        else if (c->mode_changed && c->has_mode &&
                                 fchmodat (dirfd, name, c->mode & 0777, 0) < 0)
                                r = -errno;
                        if (r == 0 && c->time_changed && c->has_mtime &&
                            utimensat (dirfd, name, times, AT_SYMLINK_NOFOLLOW) < 0)
                                r = -errno;
                }
                if (r < 0)
                        fail_errno (it, path, -r);
        }
}

/* Keeping ----------------------------------------------------------------------------------- */

/* Empties the journal, then removes the originals it named (a crash in between leaves copies
 * no journal names, never a journal naming copies that are gone). undone: the "undone" lines
 * stay (the assistant is told what the person undid, assistant-prompt.c). */
static gboolean
forget_all (FsServer *s, GPtrArray *records, bool undone, GError **error)
{
        g_autoptr (GHashTable) copies = g_hash_table_new (g_str_hash, g_str_equal);
        g_autofd int keep_fd = -1;
        GHashTableIter iter;
        gpointer copy;
        int r = fs_journal_empty (s->journal);

        if (r < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (-r),
                             _ ("Cannot empty the change journal in %s: %s"), s->keep_dir,
                             g_strerror (-r));
                return FALSE;
        }
        for (guint i = 0; undone && i < records->len; i++) {
                FsJournalRecord *rec = records->pdata[i];
                if (rec->type == FS_JOURNAL_UNDONE &&
                    (r = fs_journal_append (s->journal, rec, false)) < 0)
                        g_warning ("cannot write the change journal: %s", g_strerror (-r));
        }
        keep_fd = open (s->keep_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (guint i = 0; i < records->len; i++) {
                const FsJournalRecord *rec = records->pdata[i];
                if (rec->type == FS_JOURNAL_KEEP && rec->copy)
                        g_hash_table_add (copies, rec->copy);
        }
        g_hash_table_iter_init (&iter, copies);
        while (keep_fd >= 0 && g_hash_table_iter_next (&iter, &copy, NULL))
                if (unlinkat (keep_fd, copy, 0) < 0 && errno != ENOENT)
                        g_warning ("cannot remove %s/%s: %s", s->keep_dir, (char *) copy,
                                   g_strerror (errno));
        /* What this server remembers about kept and made files belonged to the journal. */
        fs_keep_clear (s);
        s->keep_counted = false;
        return TRUE;
}

static GPtrArray *
read_journal (FsServer *s, GError **error)
{
        if (!s->keep_dir || !s->journal) {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                     _ ("This file server keeps no change journal"));
                return NULL;
        }
        return fs_journal_read (s->keep_dir, error);
}

gboolean
fs_server_keep_all (FsServer *s, GError **error)
{
        g_autoptr (GPtrArray) records = read_journal (s, error);

        return records && forget_all (s, records, false, error);
}

/* Undoing ----------------------------------------------------------------------------------- */

static bool
chosen (const FsJournalChange *c, const char *const *which)
{
        g_autofree char *key = NULL;

        if (!which)
                return true;
        key = g_strconcat (c->share, "/", c->path, NULL);
        return g_strv_contains (which, key);
}

/* The undone changes, children before their folders (a folder's line moves what the journal
 * still lists beneath it). */
static void
journal_undone (Undo *u)
{
        g_autoptr (GPtrArray) done = g_ptr_array_new ();

        for (guint i = 0; i < u->items->len; i++) {
                Item *it = u->items->pdata[i];
                if (!it->failed)
                        g_ptr_array_add (done, it);
        }
        g_ptr_array_sort (done, by_depth_desc);
        for (guint i = 0; i < done->len; i++) {
                Item *it = done->pdata[i];

                invalidate (u->s, it->share, it->c->path, it->c->kind != FS_JOURNAL_DELETED);
                if (it->c->origin)
                        invalidate (u->s, it->share, it->c->origin, false);
        }
        for (guint i = 0; i < done->len; i++) {
                Item *it = done->pdata[i];
                FsJournalRecord rec = { .type = FS_JOURNAL_UNDONE,
                                        .share = it->c->share,
                                        .path = it->c->path };
                int r = fs_journal_append (u->s->journal, &rec, i + 1 == done->len);
                if (r < 0)
                        g_warning ("cannot write the change journal: %s", g_strerror (-r));
        }
}

GPtrArray *
fs_server_undo (FsServer *s, const char *const *which, gboolean force, GError **error)
{
        g_autoptr (GPtrArray) records = read_journal (s, error);
        g_autoptr (GPtrArray) changes = NULL, left = NULL, again = NULL;
        g_autoptr (GPtrArray) outcomes = NULL;
        Undo u = { .s = s, .keep_fd = -1 };

        if (!records)
                return NULL;
        changes = fs_journal_changes (records);
        outcomes = g_ptr_array_new_with_free_func ((GDestroyNotify) fs_undo_outcome_free);
        u.items = g_ptr_array_new_with_free_func ((GDestroyNotify) item_free);
        u.keep_fd = open (s->keep_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (guint i = 0; i < changes->len; i++) {
                const FsJournalChange *c = changes->pdata[i];
                Item *it;

                if (!chosen (c, which))
                        continue;
                it = g_new0 (Item, 1);
                it->c = c;
                it->out = g_new0 (FsUndoOutcome, 1);
                it->out->share = g_strdup (c->share);
                it->out->path = g_strdup (c->path);
                it->share = fs_server_find_share (s, c->share, strlen (c->share));
                if (it->share && it->share->removed)
                        it->share = NULL;
                g_ptr_array_add (outcomes, it->out);
                g_ptr_array_add (u.items, it);
                check (&u, it, force);
        }
        for (guint i = 0; which && which[i]; i++) {
                bool found = false;
                for (guint k = 0; k < outcomes->len && !found; k++) {
                        const FsUndoOutcome *o = outcomes->pdata[k];
                        g_autofree char *key = g_strconcat (o->share, "/", o->path, NULL);
                        found = g_str_equal (key, which[i]);
                }
                if (!found) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                     _ ("“%s” is not among the changes (see “corralctl "
                                        "changes”)"),
                                     which[i]);
                        g_ptr_array_unref (u.items);
                        if (u.keep_fd >= 0)
                                close (u.keep_fd);
                        return NULL;
                }
        }

        clear_away (&u);
        put_back (&u);
        restore_deleted_files (&u);
        restore_contents (&u);
        journal_undone (&u);
        g_ptr_array_unref (u.items);
        if (u.keep_fd >= 0)
                close (u.keep_fd);

        /* Nothing left to undo: the originals are no longer needed. */
        again = read_journal (s, NULL);
        left = again ? fs_journal_changes (again) : NULL;
        if (left && left->len == 0 && !forget_all (s, again, true, error))
                return NULL;
        return g_steal_pointer (&outcomes);
}
