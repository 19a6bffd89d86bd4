/* mount-harness.c — corral-fsd + corral-fs on a socketpair, mounted at a temporary directory.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546
#define CHILD_FD 3
#define MOUNT_TIMEOUT_MS 10000
#define EXIT_TIMEOUT_MS 5000

static void
child_setup (gpointer user_data)
{
        pid_t parent = GPOINTER_TO_INT (user_data);

        /* A test that crashes must not leave a server (and a mount) behind. */
        prctl (PR_SET_PDEATHSIG, SIGTERM);
        if (getppid () != parent)
                _exit (1);
}

static gboolean
spawn_child (GPtrArray *argv, int fd, GPid *ret_pid, GError **error)
{
        int source_fds[1] = { fd }, target_fds[1] = { CHILD_FD };

        g_ptr_array_add (argv, NULL);
        /* stdout goes to stderr: the test's stdout is its TAP stream. stderr is passed
         * explicitly: with -1 next to stdout_fd 2, GLib leaves the child's fd 2 closed. */
        return g_spawn_async_with_pipes_and_fds (
                NULL, (const char *const *) argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                child_setup, GINT_TO_POINTER (getpid ()), -1, STDERR_FILENO, STDERR_FILENO,
                source_fds, target_fds, 1, ret_pid, NULL, NULL, NULL, error);
}

static const char *
program (const char *env, GError **error)
{
        const char *path = g_getenv (env);

        if (!path || !g_file_test (path, G_FILE_TEST_IS_EXECUTABLE)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                             "%s is not set or not executable", env);
                return NULL;
        }
        return path;
}

gboolean
mount_harness_wait_pid (GPid *pid, guint timeout_ms, int *ret_status)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

        if (*pid <= 0)
                return TRUE;
        for (;;) {
                int status;
                pid_t r = waitpid (*pid, &status, WNOHANG);

                if (r == *pid || (r < 0 && errno == ECHILD)) {
                        if (ret_status)
                                *ret_status = r == *pid ? status : 0;
                        *pid = 0;
                        return TRUE;
                }
                if (g_get_monotonic_time () >= deadline)
                        return FALSE;
                g_usleep (5000);
        }
}

static gboolean
is_fuse_mounted (const char *path)
{
        struct statfs sf;

        return statfs (path, &sf) == 0 && (unsigned long) sf.f_type == FUSE_SUPER_MAGIC;
}

static gboolean
wait_mounted (MountHarness *h, GError **error)
{
        gint64 deadline = g_get_monotonic_time () + MOUNT_TIMEOUT_MS * 1000;

        while (!is_fuse_mounted (h->mountpoint)) {
                int status = 0;

                if (mount_harness_wait_pid (&h->fs_pid, 0, &status) ||
                    mount_harness_wait_pid (&h->fsd_pid, 0, &status)) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                     "%s exited before the mount was up (status 0x%x)",
                                     h->fs_pid == 0 ? "corral-fs" : "corral-fsd", status);
                        return FALSE;
                }
                if (g_get_monotonic_time () >= deadline) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                     "%s: no FUSE mount after %d ms", h->mountpoint,
                                     MOUNT_TIMEOUT_MS);
                        return FALSE;
                }
                g_usleep (10000);
        }
        return TRUE;
}

static gboolean
fuse_usable (GError **error)
{
        if (g_access ("/dev/fuse", R_OK | W_OK) != 0) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                             "/dev/fuse is not usable");
                return FALSE;
        }
        if (geteuid () != 0 && !g_find_program_in_path ("fusermount3")) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                             "not root and no fusermount3");
                return FALSE;
        }
        return TRUE;
}

static gboolean
make_pair (int pair[2], GError **error)
{
        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "socketpair: %s",
                             g_strerror (errno));
                return FALSE;
        }
        return TRUE;
}

/* pair[0] goes to corral-fsd and pair[1] to corral-fs; both are closed here. */
static gboolean
start_children (MountHarness *h,
                const char *const *share_specs,
                const char *const *fsd_args,
                const char *const *fs_args,
                int pair[2],
                GError **error)
{
        g_autoptr (GPtrArray) fsd_argv = g_ptr_array_new ();
        g_autoptr (GPtrArray) fs_argv = g_ptr_array_new ();
        const char *fsd = program ("CORRAL_FSD_PATH", error);
        const char *fs = fsd ? program ("CORRAL_FS_PATH", error) : NULL;
        gboolean ok;

        if (!fs) {
                close (pair[0]);
                close (pair[1]);
                return FALSE;
        }
        g_ptr_array_add (fsd_argv, (gpointer) fsd);
        g_ptr_array_add (fsd_argv, (gpointer) "--fd");
        g_ptr_array_add (fsd_argv, (gpointer) G_STRINGIFY (CHILD_FD));
        for (const char *const *s = share_specs; s && *s; s++) {
                g_ptr_array_add (fsd_argv, (gpointer) "--share");
                g_ptr_array_add (fsd_argv, (gpointer) *s);
        }
        g_ptr_array_add (fsd_argv, (gpointer) "--audit");
        g_ptr_array_add (fsd_argv, h->audit_path);
        g_ptr_array_add (fsd_argv, (gpointer) "--keep-dir");
        g_ptr_array_add (fsd_argv, h->kept_dir);
        for (const char *const *a = fsd_args; a && *a; a++)
                g_ptr_array_add (fsd_argv, (gpointer) *a);

        g_ptr_array_add (fs_argv, (gpointer) fs);
        g_ptr_array_add (fs_argv, (gpointer) "--fd");
        g_ptr_array_add (fs_argv, (gpointer) G_STRINGIFY (CHILD_FD));
        for (const char *const *a = fs_args; a && *a; a++)
                g_ptr_array_add (fs_argv, (gpointer) *a);
        g_ptr_array_add (fs_argv, h->mountpoint);

        ok = spawn_child (fsd_argv, pair[0], &h->fsd_pid, error) &&
             spawn_child (fs_argv, pair[1], &h->fs_pid, error);
        close (pair[0]);
        close (pair[1]);
        return ok;
}

MountHarness *
mount_harness_new_full (const char *const *share_specs,
                        const char *const *fsd_args,
                        const char *const *fs_args,
                        GError **error)
{
        return mount_harness_new_relayed (share_specs, fsd_args, fs_args, NULL, NULL, error);
}

MountHarness *
mount_harness_new_relayed (const char *const *share_specs,
                           const char *const *fsd_args,
                           const char *const *fs_args,
                           MountHarnessRelay relay,
                           gpointer user_data,
                           GError **error)
{
        g_autoptr (MountHarness) h = g_new0 (MountHarness, 1);
        int pair[2], outer[2] = { -1, -1 };

        if (!fuse_usable (error))
                return NULL;
        h->tmpdir = g_dir_make_tmp ("corral-mount-XXXXXX", error);
        if (!h->tmpdir)
                return NULL;
        h->mountpoint = g_build_filename (h->tmpdir, "mnt", NULL);
        h->audit_path = g_build_filename (h->tmpdir, "audit.log", NULL);
        h->kept_dir = g_build_filename (h->tmpdir, "kept", NULL);
        if (g_mkdir (h->mountpoint, 0755) < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "mkdir %s: %s",
                             h->mountpoint, g_strerror (errno));
                return NULL;
        }
        if (!make_pair (pair, error))
                return NULL;
        if (relay) {
                /* corral-fsd keeps pair[0]; corral-fs gets a second pair; the test the middle. */
                if (!make_pair (outer, error)) {
                        close (pair[0]);
                        close (pair[1]);
                        return NULL;
                }
                relay (pair[1], outer[0], user_data);
                pair[1] = outer[1];
        }
        if (!start_children (h, share_specs, fsd_args, fs_args, pair, error) ||
            !wait_mounted (h, error))
                return NULL;
        return g_steal_pointer (&h);
}

MountHarness *
mount_harness_new (const char *const *share_specs, GError **error)
{
        return mount_harness_new_full (share_specs, NULL, NULL, error);
}

char *
mount_harness_path (const MountHarness *h, const char *share, const char *rel)
{
        return g_build_filename (h->mountpoint, share, rel, NULL);
}

static void
unmount (MountHarness *h)
{
        /* Also after a failed start: the mount may have come up late. */
        if (!h->mountpoint || !is_fuse_mounted (h->mountpoint))
                return;
        if (geteuid () == 0) {
                if (umount2 (h->mountpoint, MNT_DETACH) < 0)
                        g_printerr ("# umount %s: %s\n", h->mountpoint, g_strerror (errno));
        } else {
                const char *argv[] = { "fusermount3", "-u", "-z", h->mountpoint, NULL };

                g_spawn_sync (NULL, (char **) argv, NULL,
                              G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                              NULL, NULL, NULL);
        }
}

static void
stop_child (GPid *pid, const char *name)
{
        if (*pid <= 0 || mount_harness_wait_pid (pid, EXIT_TIMEOUT_MS, NULL))
                return;
        g_printerr ("# %s did not exit; killing it\n", name);
        kill (*pid, SIGKILL);
        mount_harness_wait_pid (pid, EXIT_TIMEOUT_MS, NULL);
}

void
mount_harness_free (MountHarness *h)
{
        if (!h)
                return;
        unmount (h);
        /* corral-fs exits when unmounted; corral-fsd when corral-fs closes the connection. */
        stop_child (&h->fs_pid, "corral-fs");
        if (h->fs_pid <= 0 && h->fsd_pid > 0 && !mount_harness_wait_pid (&h->fsd_pid, 0, NULL))
                kill (h->fsd_pid, SIGTERM);
        stop_child (&h->fsd_pid, "corral-fsd");
        if (h->tmpdir) {
                const char *rm[] = { "rm", "-rf", "--one-file-system", h->kept_dir, NULL };

                /* rmdir only: should the unmount have failed, nothing below it is touched. */
                g_rmdir (h->mountpoint);
                g_unlink (h->audit_path);
                mount_harness_run (NULL, rm, NULL, NULL);
                if (g_rmdir (h->tmpdir) < 0)
                        g_printerr ("# %s left behind: %s\n", h->tmpdir, g_strerror (errno));
        }
        g_free (h->mountpoint);
        g_free (h->audit_path);
        g_free (h->kept_dir);
        g_free (h->tmpdir);
        g_free (h);
}

gboolean
mount_harness_skip_or_fail (GError *error)
{
        /* Where mounts are expected to work (tools/test sets CORRAL_REQUIRE_FUSE=1), not
         * mounting is a failure, never a quiet skip. */
        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED) &&
            g_strcmp0 (g_getenv ("CORRAL_REQUIRE_FUSE"), "1") != 0) {
                g_test_skip (error->message);
                return TRUE;
        }
        g_assert_no_error (error);
        return FALSE;
}

gboolean
mount_harness_run (const char *cwd, const char *const *argv, char **ret_stdout, GError **error)
{
        g_autofree char *out = NULL;
        int status = 0;

        if (!g_spawn_sync (cwd, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL,
                           &status, error))
                return FALSE;
        if (!g_spawn_check_wait_status (status, error)) {
                g_prefix_error (error, "%s (stdout: %s): ", argv[0], out ? out : "");
                return FALSE;
        }
        if (ret_stdout)
                *ret_stdout = g_steal_pointer (&out);
        return TRUE;
}
