/* test-vm-standard.c — disk-backed VMs through libvirt: the "standard" image on a per-VM qcow2
 * overlay (python3 through the agent), a live fork (memory and disk), internal snapshots, and
 * removal; the image's base disk must come out bit-identical and its folder untouched.
 *
 * The tests run in order and share the VMs (two QEMUs at most). Exit 77 (skip) when QEMU,
 * qemu-img, mmdebstrap or libvirt are unusable. Building the standard image takes minutes the
 * first time (cached afterwards).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-image.h"
#include "vm-test-util.h"
#include "corral-process.h"
#include "corral-vm-disk.h"
#include "corral-vm-fork.h"
#include "corral-vm-manager.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define SRC "stdtest"
#define FORK "stdfork"
#define BOOT_TIMEOUT_MS 240000

static struct {
        CorralVmManager *manager;
        CorralAgentClient *src;
        CorralAgentClient *fork;
        CorralImage *image;
        char *base_sha256;
        struct stat image_dir_st;
        char *src_dir;
        char *fork_dir;
        gboolean booted;
        gboolean forked;
} T;

static gboolean
vm_op (const char *name, CorralVmOp op, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_op_async (T.manager, name, op, NULL, vm_test_got_result, &res);
        return corral_vm_manager_op_finish (T.manager, vm_test_wait_for (&res), error);
}

static gboolean
connect_agent (const char *name, CorralAgentClient *client, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_connect_agent_async (T.manager, name, client, BOOT_TIMEOUT_MS, NULL,
                                               vm_test_got_result, &res);
        return corral_vm_manager_connect_agent_finish (T.manager, vm_test_wait_for (&res), error);
}

static char *
run_stdout (CorralAgentClient *client, const char *command)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_shell (command);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) r = NULL;

        corral_exec_spec_set_timeout_ms (spec, 60000);
        corral_agent_client_run_async (client, spec, 64 * 1024, NULL, vm_test_got_result, &res);
        r = corral_agent_client_run_finish (client, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        if (!r)
                return NULL;
        g_assert_cmpint (r->exit_code, ==, 0);
        return g_strndup (g_bytes_get_data (r->stdout_data, NULL),
                          g_bytes_get_size (r->stdout_data));
}

static char *
file_sha256 (const char *path)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autoptr (GMappedFile) map = g_mapped_file_new (path, FALSE, NULL);

        if (!map)
                return NULL;
        g_checksum_update (sum, (const guchar *) g_mapped_file_get_contents (map),
                           g_mapped_file_get_length (map));
        return g_strdup (g_checksum_get_string (sum));
}

/* Tests ---------------------------------------------------------------------------------------- */

static void
test_boot (void)
{
        CorralVmSpec spec = { .name = SRC,
                              .memory_mib = 512,
                              .vcpus = 2,
                              .kernel = T.image->kernel,
                              .initrd = T.image->initrd,
                              .cmdline = T.image->cmdline,
                              .image_name = T.image->name,
                              .manifest_sha256 = T.image->manifest_sha256,
                              .disk = T.image->disk };
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autofree char *overlay = NULL;
        g_autofree char *backing = NULL;
        gint64 start = g_get_monotonic_time ();

        g_assert_nonnull (T.image->disk);
        corral_vm_manager_create_async (T.manager, &spec, NULL, vm_test_got_result, &res);
        info = corral_vm_manager_create_finish (T.manager, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        if (!info)
                return;
        T.src_dir = g_strdup (info->vm_dir);
        overlay = g_build_filename (info->vm_dir, CORRAL_VM_DISK_OVERLAY, NULL);
        backing = corral_vm_disk_backing_file (overlay, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (backing, ==, T.image->disk);
        T.booted = connect_agent (SRC, T.src, &error);
        g_assert_no_error (error);
        g_printerr ("# standard: create to agent ready: %.2f s (accel %s)\n",
                    (g_get_monotonic_time () - start) / 1e6, info->accel);
}

static void
test_python (void)
{
        g_autofree char *out = NULL;

        if (!T.booted) {
                g_test_skip ("the VM did not boot");
                return;
        }
        out = run_stdout (T.src, "python3 -c 'print(6*7)'");
        g_assert_cmpstr (out, ==, "42\n");
}

static void
test_fork (void)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autofree char *w = NULL;
        g_autofree char *in_fork = NULL;
        g_autofree char *a = NULL;
        g_autofree char *b = NULL;
        g_autofree char *src_boot = NULL;
        gint64 start;

        if (!T.booted) {
                g_test_skip ("the VM did not boot");
                return;
        }
        /* Memory (a tmpfs or page-cache file) and disk (synced to the overlay). */
        w = run_stdout (T.src, "echo at-fork > /tmp/marker && echo disk-at-fork > "
                               "/var/tmp/dmarker && sync && echo ok");
        g_assert_cmpstr (w, ==, "ok\n");
        src_boot = g_strdup (corral_agent_client_get_boot_id (T.src));
        start = g_get_monotonic_time ();
        corral_vm_manager_fork_async (T.manager, SRC, FORK, NULL, vm_test_got_result, &res);
        info = corral_vm_manager_fork_finish (T.manager, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        if (!info)
                return;
        g_printerr ("# fork (save, disk copy, restore both): %.2f s\n",
                    (g_get_monotonic_time () - start) / 1e6);
        T.forked = TRUE;
        T.fork_dir = g_strdup (info->vm_dir);
        g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_RUNNING);
        g_assert_cmpstr (info->image_name, ==, "standard");
        g_assert_nonnull (strstr (info->agent_socket, "/" FORK "/"));
        g_assert_true (connect_agent (FORK, T.fork, &error));
        g_assert_no_error (error);
        g_printerr ("# fork to agent ready: %.2f s\n", (g_get_monotonic_time () - start) / 1e6);
        g_assert_cmpstr (corral_agent_client_get_boot_id (T.fork), ==, src_boot);
        in_fork = run_stdout (T.fork, "cat /tmp/marker /var/tmp/dmarker");
        g_assert_cmpstr (in_fork, ==, "at-fork\ndisk-at-fork\n");

        /* The source went through save + restore: its connection dropped. */
        corral_agent_client_close (T.src);
        g_assert_true (connect_agent (SRC, T.src, &error));
        g_assert_no_error (error);
        g_free (run_stdout (T.src,
                            "echo source > /tmp/marker; echo source-disk > /var/tmp/dmarker"));
        g_free (run_stdout (T.fork, "echo fork > /tmp/marker; echo fork-disk > /var/tmp/dmarker"));
        a = run_stdout (T.src, "cat /tmp/marker /var/tmp/dmarker");
        b = run_stdout (T.fork, "cat /tmp/marker /var/tmp/dmarker");
        g_assert_cmpstr (a, ==, "source\nsource-disk\n");
        g_assert_cmpstr (b, ==, "fork\nfork-disk\n");
}

static gboolean
snapshot_op (const char *snap, CorralVmSnapshotOp op, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_snapshot_async (T.manager, SRC, snap, op, NULL, vm_test_got_result, &res);
        return corral_vm_manager_snapshot_finish (T.manager, vm_test_wait_for (&res), error);
}

static void
test_snapshot (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_auto (GStrv) names = NULL;
        g_autofree char *out = NULL;
        gint64 start;

        if (!T.booted) {
                g_test_skip ("the VM did not boot");
                return;
        }
        g_free (run_stdout (T.src, "echo before > /var/tmp/snap; sync"));
        start = g_get_monotonic_time ();
        g_assert_true (snapshot_op ("s1", CORRAL_VM_SNAPSHOT_CREATE, &error));
        g_assert_no_error (error);
        g_printerr ("# live internal snapshot: %.2f s\n", (g_get_monotonic_time () - start) / 1e6);
        corral_vm_manager_snapshot_list_async (T.manager, SRC, NULL, vm_test_got_result, &res);
        names = corral_vm_manager_snapshot_list_finish (T.manager, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        g_assert_nonnull (names);
        if (names)
                g_assert_true (g_strv_contains ((const char *const *) names, "s1"));
        g_assert_false (snapshot_op ("../x", CORRAL_VM_SNAPSHOT_CREATE, &error));
        g_clear_error (&error);

        /* The agent answers after the snapshot; then the file changes and is reverted. */
        g_free (run_stdout (T.src, "echo after > /var/tmp/snap; sync"));
        start = g_get_monotonic_time ();
        g_assert_true (snapshot_op ("s1", CORRAL_VM_SNAPSHOT_REVERT, &error));
        g_assert_no_error (error);
        g_printerr ("# revert: %.2f s\n", (g_get_monotonic_time () - start) / 1e6);
        corral_agent_client_close (T.src);
        g_assert_true (connect_agent (SRC, T.src, &error));
        g_assert_no_error (error);
        out = run_stdout (T.src, "cat /var/tmp/snap");
        g_assert_cmpstr (out, ==, "before\n");
        g_assert_true (snapshot_op ("s1", CORRAL_VM_SNAPSHOT_DELETE, &error));
        g_assert_no_error (error);
}

static void
test_remove (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *sha = NULL;
        struct stat st;

        corral_agent_client_close (T.src);
        corral_agent_client_close (T.fork);
        g_assert_true (vm_op (SRC, CORRAL_VM_OP_REMOVE, &error));
        g_assert_no_error (error);
        if (T.forked) {
                g_assert_true (vm_op (FORK, CORRAL_VM_OP_REMOVE, &error));
                g_assert_no_error (error);
                g_assert_false (g_file_test (T.fork_dir, G_FILE_TEST_EXISTS));
        }
        if (T.src_dir)
                g_assert_false (g_file_test (T.src_dir, G_FILE_TEST_EXISTS));
        sha = file_sha256 (T.image->disk);
        g_assert_cmpstr (sha, ==, T.base_sha256);
        g_assert_cmpint (stat (T.image->dir, &st), ==, 0);
        g_assert_cmpint (st.st_mtim.tv_sec, ==, T.image_dir_st.st_mtim.tv_sec);
        g_assert_cmpint (st.st_mode, ==, T.image_dir_st.st_mode);
        g_assert_cmpint (st.st_uid, ==, T.image_dir_st.st_uid);
        g_assert_cmpint (stat (T.image->disk, &st), ==, 0);
        g_assert_cmpint (st.st_mode & 0777, ==, 0644);
}

/* Setup ---------------------------------------------------------------------------------------- */

static void
remove_leftovers (void)
{
        const char *names[] = { FORK, SRC };

        for (gsize i = 0; i < G_N_ELEMENTS (names); i++) {
                g_autoptr (GError) error = NULL;

                if (!vm_op (names[i], CORRAL_VM_OP_REMOVE, &error) &&
                    !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM))
                        g_printerr ("# could not remove leftover %s: %s\n", names[i],
                                    error->message);
        }
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autofree char *state_dir = NULL;
        const char *agent = g_getenv ("CORRAL_AGENT_PATH");
        int ret;

        corral_vm_manager_quiet_libvirt_logs ();
        g_test_init (&argc, &argv, NULL);
        if (!g_find_program_in_path ("qemu-system-x86_64") || !g_find_program_in_path ("qemu-img"))
                vm_test_skip ("QEMU is not installed");
        if (!g_find_program_in_path ("mmdebstrap"))
                vm_test_skip ("mmdebstrap is not installed (needed to build the standard image)");
        if (!agent)
                vm_test_skip ("CORRAL_AGENT_PATH must be set (run through meson)");
        /* Short, fixed paths: sockets must fit in sun_path; its own embedded libvirt root. */
        state_dir = g_build_filename (g_get_tmp_dir (), "corral-stdtest", NULL);
        g_setenv ("XDG_STATE_HOME", state_dir, TRUE);

        corral_image_build_async ("standard", agent, NULL, NULL, NULL, vm_test_got_result, &res);
        T.image = corral_image_build_finish (vm_test_wait_for (&res), &error);
        if (!T.image) {
                g_autofree char *why =
                        g_strdup_printf ("building the standard image failed: %s", error->message);

                vm_test_skip (why);
        }
        T.base_sha256 = file_sha256 (T.image->disk);
        g_assert (stat (T.image->dir, &T.image_dir_st) == 0);
        {
                g_autoptr (GAsyncResult) ores = NULL;

                corral_vm_manager_open_async (NULL, NULL, vm_test_got_result, &ores);
                T.manager = corral_vm_manager_open_finish (vm_test_wait_for (&ores), &error);
        }
        if (!T.manager)
                vm_test_skip (error->message);
        remove_leftovers ();
        T.src = corral_agent_client_new ();
        T.fork = corral_agent_client_new ();

        g_test_add_func ("/vm-standard/boot", test_boot);
        g_test_add_func ("/vm-standard/python", test_python);
        g_test_add_func ("/vm-standard/fork", test_fork);
        g_test_add_func ("/vm-standard/snapshot", test_snapshot);
        g_test_add_func ("/vm-standard/remove", test_remove);
        g_test_set_nonfatal_assertions ();
        ret = g_test_run ();

        /* Never leave a VM running, whatever happened above. */
        remove_leftovers ();
        g_clear_object (&T.src);
        g_clear_object (&T.fork);
        g_clear_object (&T.manager);
        corral_image_free (T.image);
        g_free (T.base_sha256);
        if (ret == 0)
                vm_test_remove_state (state_dir);
        return ret;
}
