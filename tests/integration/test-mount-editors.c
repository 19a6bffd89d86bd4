/* test-mount-editors.c — how editors and tools save files, in rw and in rw-nodelete shares.
 *
 * Most programs save by writing a temporary file next to the original and renaming it over
 * (atomic replace). rw-nodelete must allow that — the server keeps the old version — while
 * still refusing plain deletes.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <unistd.h>

typedef struct {
        char *host;
        MountHarness *h;
        char *share;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        const char *mode = data;
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;

        f->host = g_dir_make_tmp ("corral-share-ed-XXXXXX", &error);
        g_assert_no_error (error);
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

static char *
path_in (Fixture *f, const char *rel)
{
        return g_build_filename (f->share, rel, NULL);
}

static void
put (const char *path, const char *contents)
{
        g_autoptr (GError) error = NULL;

        g_file_set_contents_full (path, contents, -1, G_FILE_SET_CONTENTS_NONE, 0644, &error);
        g_assert_no_error (error);
}

static void
assert_contents (const char *path, const char *expected)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *data = NULL;

        g_file_get_contents (path, &data, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (data, ==, expected);
}

/* true when a file below dir (two levels at most) has exactly these contents. */
static gboolean
kept_has (const char *dir, const char *contents, guint depth)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (dir, name, NULL);
                g_autofree char *data = NULL;

                if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
                        if (depth > 0 && kept_has (path, contents, depth - 1))
                                return TRUE;
                } else if (g_file_get_contents (path, &data, NULL, NULL) &&
                           strcmp (data, contents) == 0) {
                        return TRUE;
                }
        }
        return FALSE;
}

/* The original, created by a plain create + write (allowed in every writable mode). */
static char *
make_original (Fixture *f, const char *name)
{
        char *path = path_in (f, name);

        put (path, "old line\nsecond line\n");
        return path;
}

static void
test_tmp_rename (Fixture *f, gconstpointer data)
{
        g_autofree char *path = NULL, *tmp = NULL;
        int fd;

        if (!f->h)
                return; /* skipped in setup */
        path = make_original (f, "notes.txt");
        tmp = path_in (f, ".notes.txt.swp");
        fd = open (tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (write (fd, "new text\n", 9), ==, 9);
        g_assert_cmpint (fsync (fd), ==, 0);
        g_assert_cmpint (close (fd), ==, 0);
        g_assert_cmpint (g_rename (tmp, path), ==, 0);
        assert_contents (path, "new text\n");
        g_assert_false (g_file_test (tmp, G_FILE_TEST_EXISTS));
        {
                g_autofree char *host = g_build_filename (f->host, "notes.txt", NULL);

                assert_contents (host, "new text\n");
        }
        /* rw-nodelete replaced nothing for good: the old version is kept on the host. */
        if (strcmp (data, "rw-nodelete") == 0)
                g_assert_true (kept_has (f->h->kept_dir, "old line\nsecond line\n", 2));
        /* Again over the new version (a second save). */
        put (tmp, "newer\n");
        g_assert_cmpint (g_rename (tmp, path), ==, 0);
        assert_contents (path, "newer\n");
}

static void
test_glib_set_contents (Fixture *f, gconstpointer data)
{
        g_autofree char *path = NULL;
        g_autoptr (GError) error = NULL;

        if (!f->h)
                return; /* skipped in setup */
        path = make_original (f, "glib.txt");
        /* GLib (gedit, GNOME Text Editor): temp file, fsync, rename over. */
        g_file_set_contents_full (path, "saved by glib\n", -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                  &error);
        g_assert_no_error (error);
        assert_contents (path, "saved by glib\n");
}

static void
test_sed_in_place (Fixture *f, gconstpointer data)
{
        g_autofree char *path = NULL;
        g_autoptr (GError) error = NULL;

        if (!f->h)
                return; /* skipped in setup */
        path = make_original (f, "sed.txt");
        if (!mount_harness_run (f->share,
                                (const char *const[]){ "sed", "-i", "s/old/new/", "sed.txt", NULL },
                                NULL, &error))
                g_error ("%s", error->message);
        assert_contents (path, "new line\nsecond line\n");
}

static void
test_python_replace (Fixture *f, gconstpointer data)
{
        const char *script = "import os, tempfile\n"
                             "fd, tmp = tempfile.mkstemp(dir='.', prefix='.py.txt.')\n"
                             "with os.fdopen(fd, 'w') as f:\n"
                             "    f.write('from python\\n')\n"
                             "    f.flush()\n"
                             "    os.fsync(f.fileno())\n"
                             "os.replace(tmp, 'py.txt')\n";
        g_autofree char *path = NULL, *py = g_find_program_in_path ("python3");
        g_autoptr (GError) error = NULL;

        if (!f->h)
                return; /* skipped in setup */
        if (!py) {
                g_test_skip ("python3 is not installed");
                return;
        }
        path = make_original (f, "py.txt");
        if (!mount_harness_run (f->share, (const char *const[]){ "python3", "-c", script, NULL },
                                NULL, &error))
                g_error ("%s", error->message);
        assert_contents (path, "from python\n");
}

static void
test_nodelete_still_refuses (Fixture *f, gconstpointer data)
{
        g_autofree char *path = NULL, *dir = NULL;

        if (!f->h)
                return; /* skipped in setup */
        path = make_original (f, "keep.txt");
        dir = path_in (f, "keepdir");
        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        errno = 0;
        g_assert_cmpint (g_unlink (path), ==, -1);
        g_assert_cmpint (errno, !=, 0);
        g_assert_cmpint (g_rmdir (dir), ==, -1);
        assert_contents (path, "old line\nsecond line\n");
        g_assert_true (g_file_test (dir, G_FILE_TEST_IS_DIR));
}

int
main (int argc, char **argv)
{
        static const char *const modes[] = { "rw", "rw-nodelete" };

        g_test_init (&argc, &argv, NULL);
        for (guint i = 0; i < G_N_ELEMENTS (modes); i++) {
                const char *m = modes[i];
                g_autofree char *a = g_strdup_printf ("/mount/editors/%s/tmp-rename", m);
                g_autofree char *b = g_strdup_printf ("/mount/editors/%s/glib", m);
                g_autofree char *c = g_strdup_printf ("/mount/editors/%s/sed-i", m);
                g_autofree char *d = g_strdup_printf ("/mount/editors/%s/python-replace", m);

                g_test_add (a, Fixture, m, fixture_setup, test_tmp_rename, fixture_teardown);
                g_test_add (b, Fixture, m, fixture_setup, test_glib_set_contents, fixture_teardown);
                g_test_add (c, Fixture, m, fixture_setup, test_sed_in_place, fixture_teardown);
                g_test_add (d, Fixture, m, fixture_setup, test_python_replace, fixture_teardown);
        }
        g_test_add ("/mount/editors/rw-nodelete/no-delete", Fixture, "rw-nodelete", fixture_setup,
                    test_nodelete_still_refuses, fixture_teardown);
        return g_test_run ();
}
