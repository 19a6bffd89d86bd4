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

/* 37 (F20): the person's keys and Corral's own files do not exist for a program in the guest,
 * whatever it tries: listing, opening by name, stat, making one, going through a link. */
static void
test_hidden (Fixture *f, gconstpointer data)
{
        const char *secrets[] = { ".ssh/id_ed25519", ".config/corral/mcp.json",
                                  ".local/share/keyrings/login.keyring",
                                  ".local/state/corral/vms/v/egress-policy.json" };
        g_autofree char *root = NULL, *link = NULL, *through = NULL;
        g_autoptr (GDir) dir = NULL;
        const char *name;

        if (!f->h)
                return;
        for (guint i = 0; i < G_N_ELEMENTS (secrets); i++) {
                g_autofree char *host = g_build_filename (f->share, secrets[i], NULL);
                g_autofree char *parent = g_path_get_dirname (host);
                g_autofree char *guest = mnt (f, secrets[i]);
                struct stat st;

                g_assert_cmpint (g_mkdir_with_parents (parent, 0700), ==, 0);
                g_assert_true (g_file_set_contents (host, "SECRET", -1, NULL));
                g_assert_cmpint (stat (guest, &st), <, 0);
                g_assert_cmpint (errno, ==, ENOENT);
                g_assert_cmpint (open (guest, O_RDONLY), <, 0);
                g_assert_cmpint (errno, ==, ENOENT);
        }
        root = mnt (f, NULL);
        dir = g_dir_open (root, 0, NULL);
        g_assert_nonnull (dir);
        while ((name = g_dir_read_name (dir)))
                g_assert_cmpstr (name, !=, ".ssh");
        {
                g_autofree char *ssh = mnt (f, ".ssh");
                g_autofree char *gnupg = mnt (f, ".gnupg");
                g_assert_cmpint (g_mkdir (ssh, 0700), <, 0);
                g_assert_cmpint (errno, ==, EPERM);
                g_assert_cmpint (g_mkdir (gnupg, 0700), <, 0);
                g_assert_cmpint (errno, ==, EPERM);
        }
        /* a link the guest makes to the key leads nowhere in the guest */
        link = mnt (f, "key");
        g_assert_cmpint (symlink (".ssh/id_ed25519", link), ==, 0);
        g_assert_false (g_file_get_contents (link, &through, NULL, NULL));
        g_assert_null (through);
}

/* 8, configured by IT: the managed policy's protected paths are read-only in every mode,
 * under case variants too; a damaged policy keeps the server from serving at all. */
static void
test_managed_policy (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp ("corral-fuse-policy-XXXXXX", &error);
        g_autofree char *share = g_build_filename (dir, "share", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *deploy = g_build_filename (share, "deploy", NULL);
        g_autofree char *script = g_build_filename (deploy, "run.sh", NULL);
        g_autofree char *sub = g_build_filename (share, "sub", NULL);
        g_autofree char *spec = g_strdup_printf ("s:rw:%s", share);
        g_autofree char *via = NULL, *text = NULL, *cmd = NULL, *audit = NULL;
        const char *specs[] = { spec, NULL };
        const char *fsd_args[] = { "--policy", policy, NULL };
        const char *refused[] = { "deploy/run.sh", "deploy/new.sh", "secrets.ENV",
                                  "sub/Secrets.env", NULL };
        const char *no_dirs[] = { "deploy/new", "DEPLOY", "sub/Deploy", NULL };
        MountHarness *h;
        int fd;

        g_assert_no_error (error);
        g_assert_cmpint (g_mkdir_with_parents (deploy, 0755), ==, 0);
        /* made on the host: the policy also holds at depth (a folder the guest makes is its
         * own, SECURITY.md F8) */
        g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
        g_assert_true (g_file_set_contents (script, "echo deploy\n", -1, NULL));
        g_assert_true (
                g_file_set_contents (policy,
                                     "{\"network\": {}, \"sharedFolders\": {\"protectedPaths\": "
                                     "[\"deploy/\", \"Secrets.env\"]}}",
                                     -1, NULL));
        h = mount_harness_new_full (specs, fsd_args, NULL, &error);
        if (!h) {
                mount_harness_skip_or_fail (error);
                return;
        }
        for (const char **r = refused; *r; r++) {
                via = (g_free (via), mount_harness_path (h, "s", *r));
                g_test_message ("%s", *r);
                fd = open (via, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                g_assert_cmpint (fd, <, 0);
                g_assert_cmpint (errno, ==, EPERM);
        }
        for (const char **r = no_dirs; *r; r++) {
                via = (g_free (via), mount_harness_path (h, "s", *r));
                g_test_message ("mkdir %s", *r);
                g_assert_cmpint (g_mkdir (via, 0755), <, 0);
                g_assert_cmpint (errno, ==, EPERM);
        }
        via = (g_free (via), mount_harness_path (h, "s", "deploy"));
        {
                g_autofree char *moved = mount_harness_path (h, "s", "other");
                g_assert_cmpint (rename (via, moved), <, 0);
        }
        /* Everything else is as the mode says. */
        via = (g_free (via), mount_harness_path (h, "s", "notes.txt"));
        g_assert_true (g_file_set_contents (via, "notes", -1, NULL));
        g_assert_true (g_file_get_contents (script, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "echo deploy\n");
        g_assert_true (g_file_get_contents (h->audit_path, &audit, NULL, NULL));
        g_assert_nonnull (strstr (audit, "\"rule\":\"protected-path\""));
        mount_harness_free (h);

        /* Damaged: the server does not start, so nothing is served under a weaker rule. */
        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"protectedPath\": [\"deploy/\"]}}", -1, NULL));
        h = mount_harness_new_full (specs, fsd_args, NULL, &error);
        g_assert_null (h);
        g_assert_nonnull (strstr (error->message, "exited before the mount was up"));
        cmd = g_strdup_printf ("rm -rf '%s'", dir);
        g_assert_cmpint (system (cmd), ==, 0);
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
        ADD ("/mount-fuse/hidden-paths", "rw", test_hidden);
        ADD ("/mount-fuse/atomic-replace-sigkill/rw", "rw", test_atomic_replace_sigkill);
        ADD ("/mount-fuse/atomic-replace-sigkill/rw-nodelete", "rw-nodelete",
             test_atomic_replace_sigkill);
#undef ADD
        g_test_add_func ("/mount-fuse/managed-policy", test_managed_policy);
        return g_test_run ();
}
