/* test-mount-fuse.c — the file-server rules seen through a real FUSE mount (corral-fs on the
 * host, corral-fsd behind it): what a program in the guest would meet. SECURITY-TESTS.md 1, 5,
 * 8 and 11; the protocol-level attacks are in test-mount-server.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount-harness.h"
#include "mount-test-util.h"

typedef struct {
        char *dir; /* temp: share/ and outside/ */
        char *share;
        char *outside;
        MountHarness *h;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;
        g_autofree char *canary = NULL;
        const char *specs[2] = { NULL, NULL };

        f->dir = g_dir_make_tmp ("corral-fuse-XXXXXX", &error);
        g_assert_no_error (error);
        f->share = g_build_filename (f->dir, "share", NULL);
        f->outside = g_build_filename (f->dir, "outside", NULL);
        g_assert_cmpint (g_mkdir (f->share, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (f->outside, 0755), ==, 0);
        canary = g_build_filename (f->outside, "canary", NULL);
        g_assert_true (g_file_set_contents (canary, "canary", -1, NULL));
        spec = g_strdup_printf ("s:%s:%s", (const char *) data, f->share);
        specs[0] = spec;
        f->h = mount_harness_new (specs, &error);
        if (!f->h)
                mount_harness_skip_or_fail (error);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        g_autofree char *cmd = NULL;

        mount_harness_free (f->h);
        cmd = g_strdup_printf ("rm -rf '%s'", f->dir);
        g_assert_cmpint (system (cmd), ==, 0);
        g_free (f->dir);
        g_free (f->share);
        g_free (f->outside);
}

static char *
mnt (Fixture *f, const char *rel)
{
        return mount_harness_path (f->h, "s", rel);
}

static void
assert_outside_untouched (Fixture *f)
{
        mount_test_assert_outside_untouched (f->outside, 1);
}

/* 1. Links out of the share cannot be followed: read, write, create, rename. */
static void
test_symlinks (Fixture *f, gconstpointer data)
{
        const char *targets[] = { f->outside, "../outside", "d/../../outside", "/proc/self/root",
                                  "/proc/self/cwd" };

        if (!f->h)
                return;
        for (guint i = 0; i < G_N_ELEMENTS (targets); i++) {
                g_autofree char *name = g_strdup_printf ("l%u", i);
                g_autofree char *host = g_build_filename (f->share, name, NULL);
                g_autofree char *via = NULL, *file = NULL, *renamed = NULL;
                char buf[16];
                int fd;

                g_assert_cmpint (symlink (targets[i], host), ==, 0);
                via = mnt (f, name);
                file = g_build_filename (via, "canary", NULL);
                renamed = mnt (f, "stolen");
                g_test_message ("%s -> %s", name, targets[i]);
                fd = open (file, O_RDONLY);
                g_assert_cmpint (fd, <, 0);
                fd = open (file, O_WRONLY | O_TRUNC);
                g_assert_cmpint (fd, <, 0);
                {
                        g_autofree char *newfile = g_build_filename (via, "pwn", NULL);
                        fd = open (newfile, O_WRONLY | O_CREAT, 0644);
                        g_assert_cmpint (fd, <, 0);
                }
                g_assert_cmpint (rename (file, renamed), <, 0);
                g_assert_cmpint (readlink (via, buf, sizeof buf), <, 0);
                g_assert_cmpint (errno, ==, EACCES);
        }
        assert_outside_untouched (f);
}

/* 5. A FIFO in the share: opening it through the mount fails at once. */
static void
test_fifo (Fixture *f, gconstpointer data)
{
        g_autofree char *host = NULL, *via = NULL;
        struct stat st;

        if (!f->h)
                return;
        host = g_build_filename (f->share, "fifo", NULL);
        g_assert_cmpint (mkfifo (host, 0666), ==, 0);
        via = mnt (f, "fifo");
        g_assert_cmpint (lstat (via, &st), ==, 0);
        g_assert_true (S_ISFIFO (st.st_mode));
        alarm (20);
        /* The guest kernel handles FIFOs on FUSE itself (it never asks the server to open
         * them): a guest process talks to itself and the host FIFO is never opened. */
        {
                int fd = open (via, O_RDONLY | O_NONBLOCK);
                if (fd >= 0)
                        close (fd);
        }
        alarm (0);
        /* The host FIFO is still a FIFO, and the server is still answering. */
        g_assert_cmpint (lstat (host, &st), ==, 0);
        g_assert_true (S_ISFIFO (st.st_mode));
        g_assert_cmpint (lstat (via, &st), ==, 0);
}

/* 8. Protected paths through a symlink and under a case variant. */
static void
test_protected (Fixture *f, gconstpointer data)
{
        g_autofree char *cfg = g_build_filename (f->share, ".git", NULL);
        g_autofree char *host_cfg = NULL, *link = NULL, *via = NULL, *text = NULL;

        if (!f->h)
                return;
        g_assert_cmpint (g_mkdir (cfg, 0755), ==, 0);
        host_cfg = g_build_filename (cfg, "config", NULL);
        g_assert_true (g_file_set_contents (host_cfg, "[core]\n", -1, NULL));
        link = g_build_filename (f->share, "innocent.txt", NULL);
        g_assert_cmpint (symlink (".git/config", link), ==, 0);

        via = mnt (f, "innocent.txt");
        /* open() follows the link in the (guest) kernel: the server sees .git/config. */
        {
                int fd = open (via, O_WRONLY | O_TRUNC);
                g_assert_cmpint (fd, <, 0);
                g_assert_cmpint (errno, ==, EPERM);
        }
        {
                int fd = open (via, O_WRONLY | O_APPEND);
                g_assert_cmpint (fd, <, 0);
                g_assert_cmpint (errno, ==, EPERM);
        }
        {
                g_autofree char *hook = mnt (f, ".git/hooks");
                g_assert_cmpint (g_mkdir (hook, 0755), <, 0);
        }
        g_assert_true (g_file_get_contents (host_cfg, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "[core]\n");
}

/* 11. kill -9 of a writer that replaces a file (write a temporary, rename it over), repeated:
 * the host file is always the whole old or the whole new content. */
#define SIZE (1024 * 1024)

static void
writer (const char *dir, char fill, int round)
{
        /* A fresh temporary name per writer: rw-nodelete would refuse to truncate the one a
         * killed writer left behind. */
        g_autofree char *tmpname = g_strdup_printf (".f.tmp.%d", round);
        g_autofree char *tmp = g_build_filename (dir, tmpname, NULL);
        g_autofree char *dst = g_build_filename (dir, "f", NULL);
        char *buf = g_malloc (SIZE);

        memset (buf, fill, SIZE);
        for (;;) {
                int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
                if (fd < 0)
                        _exit (1);
                for (size_t done = 0; done < SIZE;) {
                        ssize_t n = write (fd, buf + done, MIN (SIZE - done, 65536));
                        if (n <= 0)
                                _exit (1);
                        done += (size_t) n;
                }
                fsync (fd);
                close (fd);
                if (rename (tmp, dst) < 0)
                        _exit (1);
        }
}

static void
check_whole (const char *path)
{
        g_autofree char *text = NULL;
        gsize len = 0;

        g_assert_true (g_file_get_contents (path, &text, &len, NULL));
        g_assert_cmpuint (len, ==, SIZE);
        for (gsize i = 1; i < len; i++)
                if (text[i] != text[0])
                        g_error ("%s is torn at byte %" G_GSIZE_FORMAT, path, i);
        g_assert_true (text[0] == 'A' || text[0] == 'B');
}

static void
test_atomic_replace_sigkill (Fixture *f, gconstpointer data)
{
        g_autofree char *host = NULL, *dir = NULL;
        char *initial;

        if (!f->h)
                return;
        host = g_build_filename (f->share, "f", NULL);
        initial = g_malloc (SIZE);
        memset (initial, 'A', SIZE);
        g_assert_true (g_file_set_contents (host, initial, SIZE, NULL));
        g_free (initial);
        dir = mnt (f, NULL);

        for (int round = 0; round < 20; round++) {
                pid_t pid = fork ();
                int status;

                g_assert_cmpint (pid, >=, 0);
                if (pid == 0)
                        writer (dir, round % 2 ? 'A' : 'B', round);
                g_usleep (g_random_int_range (5, 120) * 1000);
                kill (pid, SIGKILL);
                g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
                g_assert_true (WIFSIGNALED (status));
                check_whole (host);
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, mode, func)                                                                      \
        g_test_add (path, Fixture, mode, fixture_setup, func, fixture_teardown)
        ADD ("/mount-fuse/symlinks-outside", "rw", test_symlinks);
        ADD ("/mount-fuse/fifo", "rw", test_fifo);
        ADD ("/mount-fuse/protected-via-symlink", "rw", test_protected);
        ADD ("/mount-fuse/atomic-replace-sigkill/rw", "rw", test_atomic_replace_sigkill);
        ADD ("/mount-fuse/atomic-replace-sigkill/rw-nodelete", "rw-nodelete",
             test_atomic_replace_sigkill);
#undef ADD
        return g_test_run ();
}
