/* test-mount-journal.c — the change journal corral-fsd keeps (fs-journal.h), through a real FUSE
 * mount: what programs do to a share (write in place, save like an editor, rename across
 * folders, make and remove, chmod) reads back as the changes a person reviews, each original
 * kept whole; refused attempts and files made and removed again are no change.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-shares.h"
#include "fs-journal.h"

typedef struct {
        char *host;
        MountHarness *h;
        char *share;
        char *state; /* STATE: vms/work is the "VM folder", kept/work the keep folder */
        char *vm_dir;
        char *keep_dir;
} Fixture;

static void
put (const char *path, const char *contents, int mode)
{
        g_autoptr (GError) error = NULL;

        /* CONSISTENT: a new file renamed over the old one, as GLib programs save. */
        g_file_set_contents_full (path, contents, -1, G_FILE_SET_CONTENTS_CONSISTENT, mode, &error);
        g_assert_no_error (error);
}

static char *
host_path (Fixture *f, const char *rel)
{
        return g_build_filename (f->host, rel, NULL);
}

static char *
mnt_path (Fixture *f, const char *rel)
{
        return g_build_filename (f->share, rel, NULL);
}

/* The folder as the person had it before the task. */
static void
fixture_setup (Fixture *f, gconstpointer data)
{
        const char *mode = data;
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL, *dir = NULL;
        static const char *const files[][2] = {
                { "a.txt", "first line\n" }, { "b.txt", "bee\n" },        { "dir/c.txt", "sea\n" },
                { "old.txt", "old\n" },      { "run.sh", "#!/bin/sh\n" }, { "empty", "" },
        };

        f->host = g_dir_make_tmp ("corral-share-journal-XXXXXX", &error);
        g_assert_no_error (error);
        dir = host_path (f, "dir");
        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
                g_autofree char *p = host_path (f, files[i][0]);
                put (p, files[i][1], g_str_equal (files[i][0], "run.sh") ? 0755 : 0644);
        }
        spec = g_strdup_printf ("docs:%s:%s", mode, f->host);
        f->state = g_dir_make_tmp ("corral-state-journal-XXXXXX", &error);
        g_assert_no_error (error);
        f->vm_dir = g_build_filename (f->state, "vms", "work", NULL);
        f->keep_dir = g_build_filename (f->state, "kept", "work", NULL);
        g_assert_cmpint (g_mkdir_with_parents (f->vm_dir, 0700), ==, 0);
        {
                g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
                const char *fsd_args[] = { "--keep-dir", f->keep_dir, "--control", control, NULL };

                f->h = mount_harness_new_full ((const char *const[]){ spec, NULL }, fsd_args, NULL,
                                               &error);
        }
        if (mount_harness_skip_or_fail (error))
                return;
        f->share = mount_harness_path (f->h, "docs", NULL);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        const char *rm[] = { "rm", "-rf", f->host, f->state, NULL };

        mount_harness_free (f->h);
        mount_harness_run (NULL, rm, NULL, NULL);
        g_free (f->host);
        g_free (f->share);
        g_free (f->state);
        g_free (f->vm_dir);
        g_free (f->keep_dir);
}

static void
write_at (const char *path, int flags, const char *text)
{
        int fd = open (path, O_WRONLY | O_CLOEXEC | flags, 0644);

        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (write (fd, text, strlen (text)), ==, (ssize_t) strlen (text));
        g_assert_cmpint (close (fd), ==, 0);
}

/* The guest's kernel hears of an undo by a notification the file server sends and does not
 * wait on: what the guest sees follows shortly after undo returns, not at once. Waits for it
 * (at most 10 s; the notification never arriving fails). */
static gboolean
guest_sees (const char *path, const char *contents)
{
        for (guint i = 0; i < 1000; i++) {
                g_autofree char *data = NULL;
                gboolean exists = g_file_test (path, G_FILE_TEST_EXISTS);

                if (!contents && !exists)
                        return TRUE;
                if (contents && g_file_get_contents (path, &data, NULL, NULL) &&
                    g_str_equal (data, contents))
                        return TRUE;
                g_usleep (10 * 1000);
        }
        return FALSE;
}

/* The changes as one line: "kind path[<-origin][ =original content][ mode]"; checks that each
 * kept copy is whole and private. */
static char *
changes_of (Fixture *f)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) records = fs_journal_read (f->keep_dir, &error);
        g_autoptr (GPtrArray) changes = NULL;
        GString *s = g_string_new (NULL);

        g_assert_no_error (error);
        changes = fs_journal_changes (records);
        for (guint i = 0; i < changes->len; i++) {
                const FsJournalChange *c = changes->pdata[i];

                g_assert_cmpstr (c->share, ==, "docs");
                g_assert_null (c->lost);
                g_string_append_printf (s, "%s%s %s", i ? "; " : "",
                                        fs_journal_change_kind_name (c->kind), c->path);
                if (c->origin)
                        g_string_append_printf (s, "<-%s", c->origin);
                if (c->copy) {
                        g_autofree char *kept = g_build_filename (f->keep_dir, c->copy, NULL);
                        g_autofree char *data = NULL;
                        struct stat st;

                        g_assert_true (g_file_get_contents (kept, &data, NULL, NULL));
                        g_assert_cmpint (stat (kept, &st), ==, 0);
                        g_assert_cmpuint (st.st_mode & 0077, ==, 0);
                        g_assert_cmpuint ((guint64) st.st_size, ==, c->size);
                        g_strchomp (data);
                        g_string_append_printf (s, " =%s", data);
                }
                if (c->mode_changed)
                        g_string_append_printf (s, " mode %o", c->mode);
        }
        return g_string_free (s, FALSE);
}

static void
test_changes (Fixture *f, gconstpointer data)
{
        const char *mode = data;
        g_autofree char *a = NULL, *b = NULL, *b2 = NULL, *c = NULL, *newdir = NULL, *n = NULL;
        g_autofree char *old = NULL, *run = NULL, *tmp = NULL, *empty = NULL, *got = NULL;

        if (!f->h)
                return; /* skipped in setup */
        a = mnt_path (f, "a.txt");
        b = mnt_path (f, "b.txt");
        b2 = mnt_path (f, "dir/b2.txt");
        c = mnt_path (f, "dir/c.txt");
        newdir = mnt_path (f, "new");
        n = mnt_path (f, "new/n.txt");
        old = mnt_path (f, "old.txt");
        run = mnt_path (f, "run.sh");
        tmp = mnt_path (f, "tmp.txt");
        empty = mnt_path (f, "empty");

        /* Written in place, twice: the first original is the one kept. */
        write_at (a, O_TRUNC, "second version\n");
        write_at (a, O_APPEND, "more\n");
        /* Moved to another folder. */
        g_assert_cmpint (g_rename (b, b2), ==, 0);
        /* Saved the way GLib, gedit and most editors save: a new file renamed over. */
        put (c, "new sea\n", 0644);
        /* Made. */
        g_assert_cmpint (g_mkdir (newdir, 0755), ==, 0);
        put (n, "n\n", 0644);
        /* Made and removed again: nothing (rw-nodelete removes nothing, even what was made). */
        if (g_str_equal (mode, "rw")) {
                put (tmp, "scratch\n", 0644);
                g_assert_cmpint (g_unlink (tmp), ==, 0);
        }
        /* Mode. */
        g_assert_cmpint (g_chmod (run, 0644), ==, 0);
        /* An empty file written. */
        write_at (empty, 0, "filled\n");
        /* Removed where the mode allows it; refused (and no change) where it does not. */
        if (g_str_equal (mode, "rw")) {
                g_assert_cmpint (g_unlink (old), ==, 0);
        } else {
                g_assert_cmpint (g_unlink (old), ==, -1);
                g_assert_cmpint (errno, ==, EPERM);
        }
        /* Refused: a write above the share. */
        {
                g_autofree char *up = mnt_path (f, "../escape.txt");
                int fd = open (up, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                g_assert_cmpint (fd, ==, -1);
        }

        got = changes_of (f);
        if (g_str_equal (mode, "rw"))
                g_assert_cmpstr (got, ==,
                                 "modified a.txt =first line; renamed dir/b2.txt<-b.txt; "
                                 "modified dir/c.txt =sea; modified empty; added new; "
                                 "added new/n.txt; deleted old.txt =old; modified run.sh mode 755");
        else
                g_assert_cmpstr (got, ==,
                                 "modified a.txt =first line; renamed dir/b2.txt<-b.txt; "
                                 "modified dir/c.txt =sea; modified empty; added new; "
                                 "added new/n.txt; modified run.sh mode 755");
}

/* A folder renamed with a changed file inside, then the folder moved back: the file is one
 * modification, at its own name. */
static void
test_folder_moves (Fixture *f, gconstpointer data)
{
        g_autofree char *dir = NULL, *moved = NULL, *inside = NULL, *got = NULL;

        if (!f->h)
                return; /* skipped in setup */
        dir = mnt_path (f, "dir");
        moved = mnt_path (f, "moved");
        inside = mnt_path (f, "moved/c.txt");
        g_assert_cmpint (g_rename (dir, moved), ==, 0);
        write_at (inside, O_TRUNC, "changed\n");
        got = changes_of (f);
        g_assert_cmpstr (got, ==, "renamed moved<-dir; renamed moved/c.txt<-dir/c.txt =sea");
        g_assert_cmpint (g_rename (moved, dir), ==, 0);
        g_free (got);
        got = changes_of (f);
        g_assert_cmpstr (got, ==, "modified dir/c.txt =sea");
}

/* The journal and the kept copies are the server's, never the guest's: nothing of it shows in
 * the share, and it is private to the person. */
static void
test_private (Fixture *f, gconstpointer data)
{
        g_autofree char *a = NULL, *journal = NULL;
        struct stat st;

        if (!f->h)
                return; /* skipped in setup */
        a = mnt_path (f, "a.txt");
        write_at (a, O_TRUNC, "x\n");
        journal = g_build_filename (f->keep_dir, FS_JOURNAL_FILE, NULL);
        g_assert_cmpint (stat (journal, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 07777, ==, 0600);
        g_assert_cmpint (stat (f->keep_dir, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 0077, ==, 0);
        {
                g_autoptr (GDir) d = g_dir_open (f->share, 0, NULL);
                const char *name;

                while ((name = g_dir_read_name (d)))
                        g_assert_false (g_str_has_prefix (name, ".corral"));
        }
}

/* Undo ------------------------------------------------------------------------------------ */

/* Every entry beneath dir, one line each, sorted: files with mode, size, time and SHA-256,
 * folders with mode, links with target. */
static void
snapshot_walk (const char *root, const char *rel, GPtrArray *lines)
{
        g_autofree char *dir = rel[0] ? g_build_filename (root, rel, NULL) : g_strdup (root);
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *name;

        g_assert_nonnull (d);
        while ((name = g_dir_read_name (d))) {
                g_autofree char *sub =
                        rel[0] ? g_build_filename (rel, name, NULL) : g_strdup (name);
                g_autofree char *path = g_build_filename (root, sub, NULL);
                struct stat st;

                g_assert_cmpint (lstat (path, &st), ==, 0);
                if (S_ISDIR (st.st_mode)) {
                        g_ptr_array_add (lines,
                                         g_strdup_printf ("%s dir %o", sub, st.st_mode & 07777));
                        snapshot_walk (root, sub, lines);
                } else if (S_ISLNK (st.st_mode)) {
                        g_autofree char *target = g_file_read_link (path, NULL);
                        g_ptr_array_add (lines, g_strdup_printf ("%s link %s", sub, target));
                } else {
                        g_autofree char *data = NULL;
                        g_autofree char *sum = NULL;
                        gsize len = 0;

                        g_assert_true (g_file_get_contents (path, &data, &len, NULL));
                        sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) data,
                                                           len);
                        g_ptr_array_add (lines, g_strdup_printf ("%s file %o %" G_GSIZE_FORMAT
                                                                 " %" G_GINT64_FORMAT ".%09ld %s",
                                                                 sub, st.st_mode & 07777, len,
                                                                 (gint64) st.st_mtim.tv_sec,
                                                                 st.st_mtim.tv_nsec, sum));
                }
        }
}

static int
cmp_str (gconstpointer a, gconstpointer b)
{
        return strcmp (*(char *const *) a, *(char *const *) b);
}

static char *
snapshot (const char *root)
{
        g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);

        snapshot_walk (root, "", lines);
        g_ptr_array_sort (lines, cmp_str);
        g_ptr_array_add (lines, NULL);
        return g_strjoinv ("\n", (char **) lines->pdata);
}

static guint
n_changes (Fixture *f)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) changes = corral_shares_changes (f->vm_dir, NULL, NULL, &error);

        g_assert_no_error (error);
        return changes->len;
}

/* Undoes (which: NULL for all) and checks that every change asked for was undone. */
static void
undo_ok (Fixture *f, const char *const *which)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) out = corral_shares_undo (f->vm_dir, which, FALSE, &error);

        GString *problems = g_string_new (NULL);

        g_assert_no_error (error);
        for (guint i = 0; i < out->len; i++) {
                const FsUndoOutcome *o = out->pdata[i];
                if (o->problem)
                        g_string_append_printf (problems, "\n%s/%s: %s", o->share, o->path,
                                                o->problem);
        }
        if (problems->len)
                g_error ("not undone:%s", problems->str);
        g_string_free (problems, TRUE);
}

/* What remains of the originals in the keep folder. */
static guint
n_kept (Fixture *f)
{
        g_autofree char *dir = g_build_filename (f->keep_dir, "docs", NULL);
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        guint n = 0;

        while (d && g_dir_read_name (d))
                n++;
        return n;
}

/* The changes of test_changes(), then "undo all": the folder is as it was, byte for byte, with
 * its modes and times; the journal and the originals are gone. */
static void
test_undo_all (Fixture *f, gconstpointer data)
{
        g_autofree char *before = NULL, *after = NULL;

        if (!f->h)
                return; /* skipped in setup */
        before = snapshot (f->host);
        test_changes (f, data);
        g_assert_cmpuint (n_changes (f), >, 0);
        g_assert_cmpuint (n_kept (f), >, 0);
        undo_ok (f, NULL);
        after = snapshot (f->host);
        g_assert_cmpstr (after, ==, before);
        g_assert_cmpuint (n_changes (f), ==, 0);
        g_assert_cmpuint (n_kept (f), ==, 0);
        /* The guest sees it too (its caches were told). */
        {
                g_autofree char *a = mnt_path (f, "a.txt");
                g_assert_true (guest_sees (a, "first line\n"));
        }
}

/* One change at a time; a file the person changed on this computer since is left unless they
 * insist; the rest stays listed. */
static void
test_undo_one (Fixture *f, gconstpointer data)
{
        g_autofree char *a = NULL, *b = NULL, *b2 = NULL, *c = NULL, *host_c = NULL;
        g_autofree char *text = NULL;
        g_autoptr (GError) error = NULL;

        if (!f->h)
                return; /* skipped in setup */
        a = mnt_path (f, "a.txt");
        b = mnt_path (f, "b.txt");
        b2 = mnt_path (f, "dir/b2.txt");
        c = mnt_path (f, "dir/c.txt");
        host_c = host_path (f, "dir/c.txt");
        write_at (a, O_TRUNC, "changed\n");
        g_assert_cmpint (g_rename (b, b2), ==, 0);
        write_at (c, O_TRUNC, "assistant\n");
        g_assert_cmpuint (n_changes (f), ==, 3);

        undo_ok (f, (const char *const[]){ "docs/a.txt", NULL });
        g_assert_true (guest_sees (a, "first line\n"));
        g_assert_cmpuint (n_changes (f), ==, 2);

        undo_ok (f, (const char *const[]){ "docs/dir/b2.txt", NULL });
        g_assert_true (guest_sees (b, "bee\n"));
        g_assert_true (guest_sees (b2, NULL));
        g_assert_cmpuint (n_changes (f), ==, 1);

        /* The person edits the assistant's version on this computer: undo asks first. */
        write_at (host_c, O_TRUNC, "person\n");
        {
                g_autoptr (GPtrArray) out = corral_shares_undo (
                        f->vm_dir, (const char *const[]){ "docs/dir/c.txt", NULL }, FALSE, &error);
                const FsUndoOutcome *o;

                g_assert_no_error (error);
                g_assert_cmpuint (out->len, ==, 1);
                o = out->pdata[0];
                g_assert_nonnull (o->problem);
                g_assert_true (o->changed_since);
        }
        g_clear_pointer (&text, g_free);
        g_assert_true (g_file_get_contents (host_c, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "person\n");
        {
                g_autoptr (GPtrArray) out = corral_shares_undo (
                        f->vm_dir, (const char *const[]){ "docs/dir/c.txt", NULL }, TRUE, &error);
                g_assert_no_error (error);
                g_assert_null (((FsUndoOutcome *) out->pdata[0])->problem);
        }
        g_clear_pointer (&text, g_free);
        g_assert_true (g_file_get_contents (host_c, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "sea\n");
        g_assert_cmpuint (n_changes (f), ==, 0);

        /* A change that is not listed is an error, not a silent nothing. */
        g_assert_null (corral_shares_undo (f->vm_dir, (const char *const[]){ "docs/zz", NULL },
                                           FALSE, &error));
        g_assert_nonnull (error);
        g_assert_nonnull (strstr (error->message, "docs/zz"));
}

/* With the file server stopped, and then with the VM's folder gone: the journal still says
 * where each share was. */
static void
test_undo_offline (Fixture *f, gconstpointer data)
{
        g_autofree char *before = NULL, *after = NULL;
        const char *rm[] = { "rm", "-rf", f->vm_dir, NULL };

        if (!f->h)
                return; /* skipped in setup */
        before = snapshot (f->host);
        test_changes (f, data);
        g_clear_pointer (&f->h, mount_harness_free);
        g_assert_true (mount_harness_run (NULL, rm, NULL, NULL));
        g_assert_cmpuint (n_changes (f), ==, 8);
        undo_ok (f, NULL);
        after = snapshot (f->host);
        g_assert_cmpstr (after, ==, before);
        g_assert_cmpuint (n_changes (f), ==, 0);
}

/* Keep all: the changes stay, the list and the originals go. */
static void
test_keep_all (Fixture *f, gconstpointer data)
{
        g_autofree char *a = NULL, *text = NULL;
        g_autoptr (GError) error = NULL;

        if (!f->h)
                return; /* skipped in setup */
        a = mnt_path (f, "a.txt");
        write_at (a, O_TRUNC, "mine now\n");
        g_assert_cmpuint (n_kept (f), ==, 1);
        g_assert_true (corral_shares_keep_all (f->vm_dir, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (n_changes (f), ==, 0);
        g_assert_cmpuint (n_kept (f), ==, 0);
        g_assert_true (g_file_get_contents (a, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "mine now\n");
        /* The next change is kept again (the server forgot what it had kept). */
        write_at (a, O_TRUNC, "again\n");
        g_assert_cmpuint (n_changes (f), ==, 1);
        undo_ok (f, NULL);
        g_assert_true (guest_sees (a, "mine now\n"));
}

/* Random programs --------------------------------------------------------------------------- */

static void
list_walk (const char *root, const char *rel, GPtrArray *files, GPtrArray *dirs)
{
        g_autofree char *dir = rel[0] ? g_build_filename (root, rel, NULL) : g_strdup (root);
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name (d))) {
                g_autofree char *sub =
                        rel[0] ? g_build_filename (rel, name, NULL) : g_strdup (name);
                g_autofree char *path = g_build_filename (root, sub, NULL);
                struct stat st;

                if (lstat (path, &st) < 0)
                        continue;
                if (S_ISDIR (st.st_mode)) {
                        g_ptr_array_add (dirs, g_strdup (sub));
                        list_walk (root, sub, files, dirs);
                } else if (S_ISREG (st.st_mode)) {
                        g_ptr_array_add (files, g_strdup (sub));
                }
        }
}

static const char *
pick (GRand *rand, GPtrArray *a)
{
        return a->len ? a->pdata[g_rand_int_range (rand, 0, (gint32) a->len)] : NULL;
}

static char *
random_bytes (GRand *rand, gsize *ret_len)
{
        gsize len = (gsize) g_rand_int_range (rand, 0, 3000);
        char *data = g_malloc (len + 1);

        for (gsize i = 0; i < len; i++)
                data[i] = (char) g_rand_int_range (rand, 0, 256);
        *ret_len = len;
        return data;
}

static void
write_bytes (const char *path, int flags, const char *data, gsize len, off_t at)
{
        int fd = open (path, O_WRONLY | O_CLOEXEC | flags, 0644);

        if (fd < 0)
                return;
        if (at > 0)
                g_assert_cmpint (pwrite (fd, data, len, at), ==, (ssize_t) len);
        else
                g_assert_cmpint (write (fd, data, len), ==, (ssize_t) len);
        g_assert_cmpint (close (fd), ==, 0);
}

/* One random thing a program might do to the share, through the mount. */
static void
random_step (Fixture *f, GRand *rand, guint serial)
{
        g_autoptr (GPtrArray) files = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GPtrArray) dirs = g_ptr_array_new_with_free_func (g_free);
        g_autofree char *bytes = NULL;
        const char *file, *dir;
        gsize len = 0;

        list_walk (f->host, "", files, dirs);
        g_ptr_array_add (dirs, g_strdup (""));
        file = pick (rand, files);
        dir = pick (rand, dirs);
        bytes = random_bytes (rand, &len);
        switch (g_rand_int_range (rand, 0, 11)) {
        case 0: /* overwrite */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        write_bytes (p, O_TRUNC, bytes, len, 0);
                }
                break;
        case 1: /* append, or write in the middle */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        if (g_rand_boolean (rand))
                                write_bytes (p, O_APPEND, bytes, len, 0);
                        else
                                write_bytes (p, 0, bytes, len, g_rand_int_range (rand, 1, 100));
                }
                break;
        case 2: /* shrink */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        g_assert_cmpint (truncate (p, g_rand_int_range (rand, 0, 10)), ==, 0);
                }
                break;
        case 3: /* an editor's save */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        g_autofree char *tmp = g_strdup_printf ("%s.tmp%u", p, serial);
                        write_bytes (tmp, O_CREAT | O_EXCL, bytes, len, 0);
                        g_assert_cmpint (g_rename (tmp, p), ==, 0);
                }
                break;
        case 4: /* moved to a folder, maybe over another file */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        g_autofree char *name = g_rand_boolean (rand) && files->len > 1
                                                        ? g_path_get_basename (pick (rand, files))
                                                        : g_strdup_printf ("moved%u", serial);
                        g_autofree char *to_rel = g_build_filename (dir, name, NULL);
                        g_autofree char *to = mnt_path (f, to_rel);
                        struct stat st;
                        if (lstat (to, &st) < 0 || S_ISREG (st.st_mode))
                                g_rename (p, to);
                }
                break;
        case 5: /* removed */
                if (file) {
                        g_autofree char *p = mnt_path (f, file);
                        g_assert_cmpint (g_unlink (p), ==, 0);
                }
                break;
        case 6: /* a new file */
        {
                g_autofree char *rel =
                        g_strdup_printf ("%s%snew%u", dir, dir[0] ? "/" : "", serial);
                g_autofree char *p = mnt_path (f, rel);
                write_bytes (p, O_CREAT | O_EXCL, bytes, len, 0);
                break;
        }
        case 7: /* a new folder */
        {
                g_autofree char *rel =
                        g_strdup_printf ("%s%sfolder%u", dir, dir[0] ? "/" : "", serial);
                g_autofree char *p = mnt_path (f, rel);
                g_assert_cmpint (g_mkdir (p, 0755), ==, 0);
                break;
        }
        case 8: /* a folder removed, when empty */
                if (dir[0]) {
                        g_autofree char *p = mnt_path (f, dir);
                        g_rmdir (p);
                }
                break;
        case 9: /* a folder moved into another (never into itself) */
                if (dir[0]) {
                        const char *into = pick (rand, dirs);
                        g_autofree char *name = g_strdup_printf ("moved%u", serial);
                        g_autofree char *to_rel = g_build_filename (into, name, NULL);
                        g_autofree char *p = mnt_path (f, dir), *to = mnt_path (f, to_rel);
                        g_autofree char *prefix = g_strconcat (dir, "/", NULL);
                        if (!g_str_equal (into, dir) && !g_str_has_prefix (into, prefix))
                                g_assert_cmpint (g_rename (p, to), ==, 0);
                }
                break;
        default: /* permissions */
                if (file) {
                        static const mode_t modes[] = { 0600, 0644, 0755, 0640 };
                        g_autofree char *p = mnt_path (f, file);
                        g_assert_cmpint (g_chmod (p, modes[g_rand_int_range (rand, 0, 4)]), ==, 0);
                }
        }
}

/* Random sequences of what programs do, then "undo all": the tree is byte for byte, mode for
 * mode, name for name as it was. */
static void
test_undo_random (Fixture *f, gconstpointer data)
{
        guint rounds = g_getenv ("CORRAL_VALGRIND") ? 40 : 150;
        /* More for a long local run: CORRAL_TEST_SEEDS=200, or one: CORRAL_TEST_SEEDS=57:57. */
        const char *seeds_env = g_getenv ("CORRAL_TEST_SEEDS");
        const char *colon = seeds_env ? strchr (seeds_env, ':') : NULL;
        guint32 first = colon ? (guint32) g_ascii_strtoull (seeds_env, NULL, 10) : 1;
        guint32 last =
                seeds_env ? (guint32) g_ascii_strtoull (colon ? colon + 1 : seeds_env, NULL, 10)
                          : 3;

        if (!f->h)
                return; /* skipped in setup */
        for (guint32 seed = first; seed <= last; seed++) {
                g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
                g_autofree char *before = snapshot (f->host), *after = NULL;

                g_test_message ("seed %u", seed);
                for (guint i = 0; i < rounds; i++)
                        random_step (f, rand, seed * 1000 + i);
                /* To look into a failing seed: its journal and tree before the undo, kept in
                 * TMPDIR/corral-undo-SEED/. */
                if (g_getenv ("CORRAL_TEST_KEEP_JOURNAL")) {
                        g_autofree char *keep =
                                g_strdup_printf ("%s/corral-undo-%u", g_get_tmp_dir (), seed);
                        const char *cp[] = { "cp", "-a", f->keep_dir, f->host, keep, NULL };
                        g_assert_cmpint (g_mkdir_with_parents (keep, 0700), ==, 0);
                        g_assert_true (mount_harness_run (NULL, cp, NULL, NULL));
                }
                undo_ok (f, NULL);
                after = snapshot (f->host);
                if (!g_str_equal (before, after))
                        g_error ("seed %u: not as it was:\n--- before\n%s\n--- after\n%s", seed,
                                 before, after);
                g_assert_cmpuint (n_changes (f), ==, 0);
        }
}

/* Crashes ------------------------------------------------------------------------------------ */

#define BIG_SIZE (8u << 20)

static char *
big_original (void)
{
        char *data = g_malloc (BIG_SIZE);

        for (guint i = 0; i < BIG_SIZE; i++)
                data[i] = (char) ('a' + i % 23);
        return data;
}

/* corral-fsd killed (SIGKILL) at a random moment while a program overwrites a file it must keep
 * first, 20 times, a new server each time on the same journal (as when the VM's server is
 * started again): every time the journal reads, and the file is whole either where it was or
 * in the kept copy the journal names; in the end undo brings it back byte for byte. */
static void
test_kill_server (Fixture *f, gconstpointer data)
{
        const char *mode = data;
        g_autofree char *original = big_original ();
        g_autofree char *host = host_path (f, "big.bin");
        g_autofree char *spec = g_strdup_printf ("docs:%s:%s", mode, f->host);
        g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
        const char *fsd_args[] = { "--keep-dir", f->keep_dir, "--control", control, NULL };
        guint killed_before_change = 0;

        if (!f->h)
                return; /* skipped in setup */
        g_assert_true (g_file_set_contents (host, original, BIG_SIZE, NULL));
        for (guint round = 0; round < 20; round++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (GPtrArray) records = NULL, changes = NULL;
                g_autofree char *target = NULL, *of = NULL, *now = NULL;
                const char *dd[] = { "dd",      "if=/dev/zero", NULL,          "bs=1M",
                                     "count=8", "conv=fsync",   "status=none", NULL };
                GPid writer;
                gsize len = 0;

                if (!f->h) {
                        f->h = mount_harness_new_full ((const char *const[]){ spec, NULL },
                                                       fsd_args, NULL, &error);
                        g_assert_no_error (error);
                        g_free (f->share);
                        f->share = mount_harness_path (f->h, "docs", NULL);
                }
                target = mnt_path (f, "big.bin");
                of = g_strconcat ("of=", target, NULL);
                dd[2] = of;
                g_assert_true (g_spawn_async (NULL, (char **) dd, NULL,
                                              G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                                      G_SPAWN_STDERR_TO_DEV_NULL,
                                              NULL, NULL, &writer, &error));
                g_usleep ((gulong) g_random_int_range (0, 60) * 1000);
                kill (f->h->fsd_pid, SIGKILL);
                g_assert_true (mount_harness_wait_pid (&f->h->fsd_pid, 5000, NULL));
                kill (writer, SIGKILL);
                g_assert_true (mount_harness_wait_pid (&writer, 5000, NULL));
                g_clear_pointer (&f->h, mount_harness_free);

                /* The journal reads; the original is whole in the share or in its copy. */
                records = fs_journal_read (f->keep_dir, &error);
                g_assert_no_error (error);
                changes = fs_journal_changes (records);
                g_assert_true (g_file_get_contents (host, &now, &len, NULL));
                if (len == BIG_SIZE && memcmp (now, original, BIG_SIZE) == 0)
                        killed_before_change++;
                else
                        g_assert_cmpuint (changes->len, ==, 1);
                /* Killed after its copy was recorded and before the file changed, the change
                 * is listed too: its copy is the original all the same. */
                g_assert_cmpuint (changes->len, <=, 1);
                if (changes->len == 1) {
                        const FsJournalChange *c = changes->pdata[0];
                        g_autofree char *copy = g_build_filename (f->keep_dir, c->copy, NULL);
                        g_autofree char *kept = NULL;
                        gsize kept_len = 0;

                        g_assert_cmpstr (c->path, ==, "big.bin");
                        g_assert_nonnull (c->copy);
                        g_assert_true (g_file_get_contents (copy, &kept, &kept_len, NULL));
                        g_assert_cmpuint (kept_len, ==, BIG_SIZE);
                        g_assert_true (memcmp (kept, original, BIG_SIZE) == 0);
                }
        }
        g_test_message ("%u of 20 kills came before the file changed", killed_before_change);
        undo_ok (f, NULL);
        {
                g_autofree char *now = NULL;
                gsize len = 0;
                g_assert_true (g_file_get_contents (host, &now, &len, NULL));
                g_assert_cmpuint (len, ==, BIG_SIZE);
                g_assert_true (memcmp (now, original, BIG_SIZE) == 0);
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add ("/mount/journal/rw/changes", Fixture, "rw", fixture_setup, test_changes,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw-nodelete/changes", Fixture, "rw-nodelete", fixture_setup,
                    test_changes, fixture_teardown);
        g_test_add ("/mount/journal/rw/folder-moves", Fixture, "rw", fixture_setup,
                    test_folder_moves, fixture_teardown);
        g_test_add ("/mount/journal/rw/private", Fixture, "rw", fixture_setup, test_private,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw/undo-all", Fixture, "rw", fixture_setup, test_undo_all,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw-nodelete/undo-all", Fixture, "rw-nodelete", fixture_setup,
                    test_undo_all, fixture_teardown);
        g_test_add ("/mount/journal/rw/undo-one", Fixture, "rw", fixture_setup, test_undo_one,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw/undo-offline", Fixture, "rw", fixture_setup,
                    test_undo_offline, fixture_teardown);
        g_test_add ("/mount/journal/rw/keep-all", Fixture, "rw", fixture_setup, test_keep_all,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw/undo-random", Fixture, "rw", fixture_setup, test_undo_random,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw/kill-server", Fixture, "rw", fixture_setup, test_kill_server,
                    fixture_teardown);
        g_test_add ("/mount/journal/rw-nodelete/kill-server", Fixture, "rw-nodelete", fixture_setup,
                    test_kill_server, fixture_teardown);
        return g_test_run ();
}
