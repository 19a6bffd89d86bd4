/* test-mount-enospc.c — a full host disk: the guest writer sees ENOSPC, and a file saved by
 * atomic replace keeps its old content (SECURITY-TESTS.md item 31, without the VM).
 *
 * The share is a 1 MiB tmpfs, so this needs root; it skips otherwise.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/mount.h>
#include <unistd.h>

#define OLD_CONTENT "the old, complete content\n"

static char *small_dir;
static gboolean tmpfs_mounted;
static MountHarness *harness;

static void
assert_contents (const char *path, const char *expected)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *data = NULL;

        g_file_get_contents (path, &data, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (data, ==, expected);
}

/* Writes len bytes in 64 KiB writes; returns 0 or the errno of the first failure (write,
 * fsync or close). */
static int
write_bytes (const char *path, gsize len)
{
        g_autofree char *buf = g_malloc (64 * 1024);
        int fd = open (path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
        int err = 0;

        g_assert_cmpint (fd, >=, 0);
        memset (buf, 'z', 64 * 1024);
        for (gsize done = 0; done < len && err == 0;) {
                gssize n = write (fd, buf, MIN (64 * 1024, len - done));

                if (n < 0 && errno != EINTR)
                        err = errno;
                else if (n > 0)
                        done += (gsize) n;
        }
        if (err == 0 && fsync (fd) < 0)
                err = errno;
        if (close (fd) < 0 && err == 0)
                err = errno;
        return err;
}

static void
test_enospc (void)
{
        g_autofree char *keep = NULL, *keep_host = NULL, *tmp = NULL, *big = NULL;
        g_autoptr (GError) error = NULL;

        if (!harness) {
                g_test_skip ("no mount (needs root, /dev/fuse, corral-fsd and corral-fs)");
                return;
        }
        keep = mount_harness_path (harness, "small", "keep.txt");
        keep_host = g_build_filename (small_dir, "keep.txt", NULL);
        tmp = mount_harness_path (harness, "small", ".keep.txt.tmp");
        big = mount_harness_path (harness, "small", "big.bin");

        /* The file people care about, saved by atomic replace. */
        g_file_set_contents (tmp, OLD_CONTENT, -1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (g_rename (tmp, keep), ==, 0);

        /* A writer that fills the disk gets ENOSPC, not a silent short file. */
        g_assert_cmpint (write_bytes (big, 2 * 1024 * 1024), ==, ENOSPC);

        /* Saving the file again while the disk is full fails the same way... */
        g_assert_cmpint (write_bytes (tmp, 512 * 1024), ==, ENOSPC);
        g_assert_cmpint (g_unlink (tmp), ==, 0);
        g_file_set_contents (keep, "new content that does not fit\n", -1, &error);
        g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
        g_clear_error (&error);

        /* ...and the old version is intact, seen from the guest and from the host. */
        assert_contents (keep, OLD_CONTENT);
        assert_contents (keep_host, OLD_CONTENT);

        /* Space freed: saving works again. */
        g_assert_cmpint (g_unlink (big), ==, 0);
        g_file_set_contents (keep, "saved after cleanup\n", -1, &error);
        g_assert_no_error (error);
        assert_contents (keep_host, "saved after cleanup\n");
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;
        int ret;

        g_test_init (&argc, &argv, NULL);
        small_dir = g_dir_make_tmp ("corral-share-small-XXXXXX", &error);
        g_assert_no_error (error);
        if (geteuid () == 0) {
                if (mount ("corral-test", small_dir, "tmpfs", MS_NOSUID | MS_NODEV,
                           "size=1m,mode=0755") < 0)
                        g_error ("mount tmpfs on %s: %s", small_dir, g_strerror (errno));
                tmpfs_mounted = TRUE;
                spec = g_strdup_printf ("small:rw:%s", small_dir);
                harness = mount_harness_new ((const char *const[]){ spec, NULL }, &error);
                if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED))
                        g_error ("%s", error->message);
        }

        g_test_add_func ("/mount/enospc/atomic-replace", test_enospc);
        ret = g_test_run ();

        mount_harness_free (harness);
        if (tmpfs_mounted && umount2 (small_dir, MNT_DETACH) < 0)
                g_printerr ("# umount %s: %s\n", small_dir, g_strerror (errno));
        g_rmdir (small_dir);
        g_free (small_dir);
        return ret;
}
