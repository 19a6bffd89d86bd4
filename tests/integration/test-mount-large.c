/* test-mount-large.c — 64 MiB each way through the mount, byte-identical (sha256).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <unistd.h>

#define FILE_SIZE (64u * 1024u * 1024u)
#define CHUNK (1024u * 1024u)

static char *host_dir;
static MountHarness *harness;
static char *shm_path; /* test-mount-large-shm: contents through a shared-memory file */

/* Writes FILE_SIZE pseudo-random bytes to path with chunk-sized write()s; returns the sha256. */
static char *
write_random (const char *path, guint32 seed, gsize chunk)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
        g_autofree guint32 *buf = g_malloc (chunk);
        int fd = open (path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);

        g_assert_cmpint (fd, >=, 0);
        for (gsize done = 0; done < FILE_SIZE; done += chunk) {
                gsize n = MIN (chunk, FILE_SIZE - done);
                gsize off = 0;

                for (gsize i = 0; i < n / 4; i++)
                        buf[i] = g_rand_int (rand);
                g_checksum_update (sum, (const guchar *) buf, n);
                while (off < n) {
                        gssize w = write (fd, (const char *) buf + off, n - off);

                        if (w < 0 && errno == EINTR)
                                continue;
                        g_assert_cmpint (w, >, 0);
                        off += (gsize) w;
                }
        }
        g_assert_cmpint (fsync (fd), ==, 0);
        g_assert_cmpint (close (fd), ==, 0);
        return g_strdup (g_checksum_get_string (sum));
}

static char *
sha256_file (const char *path, gsize chunk, goffset *ret_size)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autofree guchar *buf = g_malloc (chunk);
        goffset total = 0;
        int fd = open (path, O_RDONLY | O_CLOEXEC);

        g_assert_cmpint (fd, >=, 0);
        for (;;) {
                gssize n = read (fd, buf, chunk);

                if (n < 0 && errno == EINTR)
                        continue;
                g_assert_cmpint (n, >=, 0);
                if (n == 0)
                        break;
                g_checksum_update (sum, buf, (gsize) n);
                total += n;
        }
        close (fd);
        *ret_size = total;
        return g_strdup (g_checksum_get_string (sum));
}

static void
test_write_through_mount (void)
{
        g_autofree char *path = NULL;
        g_autofree char *host = g_build_filename (host_dir, "written.bin", NULL);
        g_autofree char *expected = NULL, *got = NULL;
        goffset size;
        gint64 t0;

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        path = mount_harness_path (harness, "big", "written.bin");
        t0 = g_get_monotonic_time ();
        expected = write_random (path, 1, CHUNK);
        g_test_message ("wrote 64 MiB through the mount in %.2f s",
                        (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
        got = sha256_file (host, CHUNK, &size);
        g_assert_cmpint (size, ==, FILE_SIZE);
        g_assert_cmpstr (got, ==, expected);
        g_assert_cmpint (g_unlink (path), ==, 0);
}

static void
test_read_through_mount (void)
{
        g_autofree char *path = NULL;
        g_autofree char *host = g_build_filename (host_dir, "read.bin", NULL);
        g_autofree char *expected = NULL, *got = NULL;
        goffset size;
        gint64 t0;

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        /* Written on the host, so that the guest's page cache has none of it. */
        expected = write_random (host, 2, CHUNK);
        path = mount_harness_path (harness, "big", "read.bin");
        t0 = g_get_monotonic_time ();
        got = sha256_file (path, CHUNK, &size);
        g_test_message ("read 64 MiB through the mount in %.2f s",
                        (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
        g_assert_cmpint (size, ==, FILE_SIZE);
        g_assert_cmpstr (got, ==, expected);
}

static void
test_odd_sizes (void)
{
        g_autofree char *path = NULL;
        g_autofree char *host = g_build_filename (host_dir, "odd.bin", NULL);
        g_autofree char *expected = NULL, *got = NULL, *got_host = NULL;
        goffset size;

        if (!harness) {
                g_test_skip ("no mount");
                return;
        }
        /* Writes and reads that are not page- or request-aligned, some larger than one
         * request (1 MiB). */
        path = mount_harness_path (harness, "big", "odd.bin");
        expected = write_random (path, 3, 700001 * 4);
        got = sha256_file (path, 123457, &size);
        g_assert_cmpint (size, ==, FILE_SIZE);
        g_assert_cmpstr (got, ==, expected);
        got_host = sha256_file (host, 4096, &size);
        g_assert_cmpstr (got_host, ==, expected);
        g_assert_cmpint (g_unlink (path), ==, 0);
}

/* With shared memory, the bytes must really have gone through it: its slots are not blank. */
static void
test_shm_used (void)
{
        g_autofree char *data = NULL;
        gsize len = 0, nonzero = 0;

        if (!shm_path) {
                g_test_skip ("contents travel inline in this run");
                return;
        }
        g_assert_true (g_file_get_contents (shm_path, &data, &len, NULL));
        for (gsize i = 4096; i < len; i++)
                nonzero += data[i] != 0;
        g_assert_cmpuint (nonzero, >, 512 * 1024); /* at least one slot's worth of random bytes */
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;
        const char *rm[] = { "rm", "-rf", NULL, NULL };
        int ret;

        g_test_init (&argc, &argv, NULL);
        host_dir = g_dir_make_tmp ("corral-share-big-XXXXXX", &error);
        g_assert_no_error (error);
        spec = g_strdup_printf ("big:rw:%s", host_dir);
        /* Built twice: test-mount-large-shm moves contents through shared memory. */
        if (g_str_has_suffix (argv[0], "-shm")) {
                g_autofree char *shm_dir = g_dir_make_tmp ("corral-shm-XXXXXX", &error);
                int fd;

                g_assert_no_error (error);
                shm_path = g_build_filename (shm_dir, "shm", NULL);
                fd = open (shm_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
                g_assert_cmpint (fd, >=, 0);
                g_assert_cmpint (ftruncate (fd, 20 * 1024 * 1024), ==, 0);
                close (fd);
                harness = mount_harness_new_full (
                        (const char *const[]){ spec, NULL },
                        (const char *const[]){ "--shm", shm_path, NULL },
                        (const char *const[]){ "--shm-file", shm_path, NULL }, &error);
        } else {
                harness = mount_harness_new ((const char *const[]){ spec, NULL }, &error);
        }
        if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED))
                g_error ("%s", error->message);

        g_test_add_func ("/mount/large/write", test_write_through_mount);
        g_test_add_func ("/mount/large/read", test_read_through_mount);
        g_test_add_func ("/mount/large/odd-sizes", test_odd_sizes);
        g_test_add_func ("/mount/large/shm-used", test_shm_used);
        ret = g_test_run ();

        mount_harness_free (harness);
        rm[2] = host_dir;
        mount_harness_run (NULL, rm, NULL, NULL);
        if (shm_path) {
                g_autofree char *dir = g_path_get_dirname (shm_path);
                g_unlink (shm_path);
                g_rmdir (dir);
        }
        g_free (host_dir);
        return ret;
}
