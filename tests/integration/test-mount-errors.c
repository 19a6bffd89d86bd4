/* test-mount-errors.c — errors reach guest programs as the errno they expect.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

static char *rw_host, *ro_host;
static MountHarness *harness;

static char *
rw (const char *rel)
{
        return mount_harness_path (harness, "rw", rel);
}

static char *
ro (const char *rel)
{
        return mount_harness_path (harness, "ro", rel);
}

#define ASSERT_ERRNO(call, err)                                                                    \
        do {                                                                                       \
                errno = 0;                                                                         \
                g_assert_cmpint ((call), ==, -1);                                                  \
                g_assert_cmpint (errno, ==, (err));                                                \
        } while (0)

static void
write_file (const char *path, const char *contents)
{
        g_autoptr (GError) error = NULL;

        g_file_set_contents (path, contents, -1, &error);
        g_assert_no_error (error);
}

static void
test_enoent (void)
{
        g_autofree char *missing = rw ("missing");
        g_autofree char *missing_dir = rw ("missing/file");
        struct stat st;

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        ASSERT_ERRNO (open (missing, O_RDONLY | O_CLOEXEC), ENOENT);
        ASSERT_ERRNO (stat (missing, &st), ENOENT);
        ASSERT_ERRNO (g_unlink (missing), ENOENT);
        ASSERT_ERRNO (g_rmdir (missing), ENOENT);
        ASSERT_ERRNO (open (missing_dir, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), ENOENT);
        ASSERT_ERRNO (g_rename (missing, missing_dir), ENOENT);
}

static void
test_eexist_enotempty (void)
{
        g_autofree char *file = rw ("exists.txt");
        g_autofree char *dir = rw ("full");
        g_autofree char *inner = rw ("full/inner");
        g_autofree char *empty = rw ("empty");

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        write_file (file, "x");
        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (empty, 0755), ==, 0);
        write_file (inner, "y");
        ASSERT_ERRNO (open (file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644), EEXIST);
        ASSERT_ERRNO (g_mkdir (dir, 0755), EEXIST);
        ASSERT_ERRNO (g_mkdir (file, 0755), EEXIST);
        ASSERT_ERRNO (symlink ("anything", file), EEXIST);
        ASSERT_ERRNO (g_rmdir (dir), ENOTEMPTY);
        /* A directory over a non-empty one. */
        ASSERT_ERRNO (g_rename (empty, dir), ENOTEMPTY);
}

static void
test_eisdir_enotdir (void)
{
        g_autofree char *dir = rw ("adir");
        g_autofree char *file = rw ("afile");
        g_autofree char *below_file = rw ("afile/x");

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        write_file (file, "x");
        ASSERT_ERRNO (open (dir, O_WRONLY | O_CLOEXEC), EISDIR);
        ASSERT_ERRNO (g_unlink (dir), EISDIR);
        ASSERT_ERRNO (g_rename (file, dir), EISDIR);
        ASSERT_ERRNO (g_rmdir (file), ENOTDIR);
        ASSERT_ERRNO (open (below_file, O_RDONLY | O_CLOEXEC), ENOTDIR);
        ASSERT_ERRNO (g_rename (dir, file), ENOTDIR);
}

static void
test_names (void)
{
        char name[300];
        g_autofree char *long_path = NULL;
        g_autofree char *ok_path = NULL;
        int fd;

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        memset (name, 'n', sizeof name);
        name[256] = '\0';
        long_path = rw (name);
        ASSERT_ERRNO (open (long_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), ENAMETOOLONG);
        ASSERT_ERRNO (g_mkdir (long_path, 0755), ENAMETOOLONG);
        /* 255 bytes is fine. */
        name[255] = '\0';
        ok_path = rw (name);
        fd = open (ok_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        g_assert_cmpint (fd, >=, 0);
        close (fd);
        g_assert_cmpint (g_unlink (ok_path), ==, 0);
}

static void
test_refused (void)
{
        g_autofree char *fifo = rw ("fifo");
        g_autofree char *file = rw ("linked");
        g_autofree char *link_path = rw ("hardlink");
        g_autofree char *root_file =
                g_build_filename (harness ? harness->mountpoint : "/", "new", NULL);

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        /* Special files and hard links are never made in a share. */
        ASSERT_ERRNO (mkfifo (fifo, 0644), EPERM);
        g_assert_false (g_file_test (fifo, G_FILE_TEST_EXISTS));
        write_file (file, "x");
        g_assert_cmpint (link (file, link_path), ==, -1);
        g_assert_false (g_file_test (link_path, G_FILE_TEST_EXISTS));
        /* The mount's root holds the shares and nothing else. */
        g_assert_cmpint (open (root_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), ==, -1);
        g_assert_false (g_file_test (root_file, G_FILE_TEST_EXISTS));
}

static void
test_read_only (void)
{
        g_autofree char *file = ro ("file.txt");
        g_autofree char *dir = ro ("dir");
        g_autofree char *newf = ro ("new.txt");
        g_autofree char *newd = ro ("newdir");
        g_autofree char *moved = ro ("moved.txt");
        g_autofree char *contents = NULL;
        g_autoptr (GError) error = NULL;
        struct timeval tv[2] = { { 0 } };

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        /* Reading works. */
        g_file_get_contents (file, &contents, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (contents, ==, "read me");
        g_assert_true (g_file_test (dir, G_FILE_TEST_IS_DIR));

        /* Every change is EROFS. */
        ASSERT_ERRNO (open (newf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), EROFS);
        ASSERT_ERRNO (open (file, O_WRONLY | O_CLOEXEC), EROFS);
        ASSERT_ERRNO (open (file, O_RDWR | O_CLOEXEC), EROFS);
        ASSERT_ERRNO (truncate (file, 0), EROFS);
        ASSERT_ERRNO (g_mkdir (newd, 0755), EROFS);
        ASSERT_ERRNO (g_unlink (file), EROFS);
        ASSERT_ERRNO (g_rmdir (dir), EROFS);
        ASSERT_ERRNO (g_rename (file, moved), EROFS);
        ASSERT_ERRNO (symlink ("file.txt", newf), EROFS);
        ASSERT_ERRNO (chmod (file, 0600), EROFS);
        ASSERT_ERRNO (utimes (file, tv), EROFS);
        ASSERT_ERRNO (setxattr (file, "user.x", "1", 1, 0), EROFS);

        g_clear_pointer (&contents, g_free);
        g_file_get_contents (file, &contents, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (contents, ==, "read me");
        g_assert_false (g_file_test (newf, G_FILE_TEST_EXISTS));
        g_assert_false (g_file_test (moved, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *rw_spec = NULL, *ro_spec = NULL;
        g_autofree char *ro_file = NULL, *ro_dir = NULL, *ro_inner = NULL;
        const char *rm[] = { "rm", "-rf", NULL, NULL };
        int ret;

        g_test_init (&argc, &argv, NULL);
        rw_host = g_dir_make_tmp ("corral-share-rw-XXXXXX", &error);
        g_assert_no_error (error);
        ro_host = g_dir_make_tmp ("corral-share-ro-XXXXXX", &error);
        g_assert_no_error (error);
        ro_file = g_build_filename (ro_host, "file.txt", NULL);
        ro_dir = g_build_filename (ro_host, "dir", NULL);
        ro_inner = g_build_filename (ro_host, "dir", "inner", NULL);
        write_file (ro_file, "read me");
        g_assert_cmpint (g_mkdir (ro_dir, 0755), ==, 0);
        write_file (ro_inner, "inner");

        rw_spec = g_strdup_printf ("rw:rw:%s", rw_host);
        ro_spec = g_strdup_printf ("ro:ro:%s", ro_host);
        harness = mount_harness_new ((const char *const[]){ rw_spec, ro_spec, NULL }, &error);
        if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED))
                g_error ("%s", error->message);
        if (error)
                g_printerr ("# skipping: %s\n", error->message);

        g_test_add_func ("/mount/errors/enoent", test_enoent);
        g_test_add_func ("/mount/errors/eexist-enotempty", test_eexist_enotempty);
        g_test_add_func ("/mount/errors/eisdir-enotdir", test_eisdir_enotdir);
        g_test_add_func ("/mount/errors/names", test_names);
        g_test_add_func ("/mount/errors/refused", test_refused);
        g_test_add_func ("/mount/errors/read-only", test_read_only);
        ret = g_test_run ();

        mount_harness_free (harness);
        rm[2] = rw_host;
        mount_harness_run (NULL, rm, NULL, NULL);
        rm[2] = ro_host;
        mount_harness_run (NULL, rm, NULL, NULL);
        g_free (rw_host);
        g_free (ro_host);
        return ret;
}
