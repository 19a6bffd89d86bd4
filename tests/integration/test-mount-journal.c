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

#include "fs-journal.h"

typedef struct {
        char *host;
        MountHarness *h;
        char *share;
} Fixture;

static void
put (const char *path, const char *contents, int mode)
{
        g_autoptr (GError) error = NULL;

        g_file_set_contents_full (path, contents, -1, G_FILE_SET_CONTENTS_NONE, mode, &error);
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
        f->h = mount_harness_new ((const char *const[]){ spec, NULL }, &error);
        if (mount_harness_skip_or_fail (error))
                return;
        f->share = mount_harness_path (f->h, "docs", NULL);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        const char *rm[] = { "rm", "-rf", f->host, NULL };

        mount_harness_free (f->h);
        mount_harness_run (NULL, rm, NULL, NULL);
        g_free (f->host);
        g_free (f->share);
}

static void
write_at (const char *path, int flags, const char *text)
{
        int fd = open (path, O_WRONLY | O_CLOEXEC | flags, 0644);

        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (write (fd, text, strlen (text)), ==, (ssize_t) strlen (text));
        g_assert_cmpint (close (fd), ==, 0);
}

/* The changes as one line: "kind path[<-origin][ =original content][ mode]"; checks that each
 * kept copy is whole and private. */
static char *
changes_of (Fixture *f)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) records = fs_journal_read (f->h->kept_dir, &error);
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
                        g_autofree char *kept = g_build_filename (f->h->kept_dir, c->copy, NULL);
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
        journal = g_build_filename (f->h->kept_dir, FS_JOURNAL_FILE, NULL);
        g_assert_cmpint (stat (journal, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 07777, ==, 0600);
        g_assert_cmpint (stat (f->h->kept_dir, &st), ==, 0);
        g_assert_cmpuint (st.st_mode & 0077, ==, 0);
        {
                g_autoptr (GDir) d = g_dir_open (f->share, 0, NULL);
                const char *name;

                while ((name = g_dir_read_name (d)))
                        g_assert_false (g_str_has_prefix (name, ".corral"));
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
        return g_test_run ();
}
