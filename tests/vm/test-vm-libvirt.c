/* test-vm-libvirt.c — one real VM through libvirt: boot, exec, pause/resume, save/restore,
 * re-attach, agent crash and restart, graceful stop and start, destroy + remove.
 *
 * One VM is booted for the whole binary (boots take seconds under TCG); the tests run in
 * order and share it. Exit 77 (skip) when QEMU, libvirt or the guest image are unusable.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-manager.h"
#include "vm-test-util.h"
#include "corral-process.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#define VM_NAME "vmtest"
#define BOOT_TIMEOUT_MS 120000

static struct {
        CorralVmManager *manager;
        CorralAgentClient *client;
        char *state_dir;
        char *image_dir;
        char *vm_dir;
        gboolean usable; /* the VM booted and nothing broke it */
} T;

#define NEED_VM()                                                                                  \
        do {                                                                                       \
                if (!T.usable) {                                                                   \
                        g_test_skip ("the shared VM is not usable");                               \
                        return;                                                                    \
                }                                                                                  \
        } while (0)

/* Helpers ------------------------------------------------------------------------------------ */

static CorralVmManager *
open_manager (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_open_async (NULL, NULL, vm_test_got_result, &res);
        return corral_vm_manager_open_finish (vm_test_wait_for (&res), error);
}

static gboolean
vm_op (CorralVmOp op, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_op_async (T.manager, VM_NAME, op, NULL, vm_test_got_result, &res);
        return corral_vm_manager_op_finish (T.manager, vm_test_wait_for (&res), error);
}

static CorralVmInfo *
vm_lookup (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_lookup_async (T.manager, VM_NAME, NULL, vm_test_got_result, &res);
        return corral_vm_manager_lookup_finish (T.manager, vm_test_wait_for (&res), error);
}

static gboolean
connect_agent (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_connect_agent_async (T.manager, VM_NAME, T.client, BOOT_TIMEOUT_MS, NULL,
                                               vm_test_got_result, &res);
        return corral_vm_manager_connect_agent_finish (T.manager, vm_test_wait_for (&res), error);
}

static CorralRunResult *
run (const char *command, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_shell (command);

        corral_exec_spec_set_timeout_ms (spec, 30000);
        corral_agent_client_run_async (T.client, spec, 64 * 1024, NULL, vm_test_got_result, &res);
        return corral_agent_client_run_finish (T.client, vm_test_wait_for (&res), error);
}

static char *
run_stdout (const char *command, int expected_code)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) r = run (command, &error);

        g_assert_no_error (error);
        if (!r)
                return NULL;
        g_assert_cmpint (r->exit_code, ==, expected_code);
        return g_strndup (g_bytes_get_data (r->stdout_data, NULL),
                          g_bytes_get_size (r->stdout_data));
}

/* Tests ---------------------------------------------------------------------------------------- */

static void
test_boot (void)
{
        g_autofree char *kernel = g_build_filename (T.image_dir, "vmlinuz", NULL);
        g_autofree char *initrd = g_build_filename (T.image_dir, "initramfs.img", NULL);
        CorralVmSpec spec = { .name = VM_NAME,
                              .memory_mib = 256,
                              .vcpus = 1,
                              .kernel = kernel,
                              .initrd = initrd,
                              .image_name = "minimal" };
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        gint64 start = g_get_monotonic_time ();

        corral_vm_manager_create_async (T.manager, &spec, NULL, vm_test_got_result, &res);
        info = corral_vm_manager_create_finish (T.manager, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        g_assert_nonnull (info);
        if (!info)
                return;
        g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_RUNNING);
        g_assert_cmpstr (info->transport, ==, "virtio-serial");
        g_assert_cmpuint (info->memory_mib, ==, 256);
        T.vm_dir = g_strdup (info->vm_dir);
        T.usable = connect_agent (&error);
        g_assert_no_error (error);
        g_test_message ("boot to agent ready: %.2f s (accel %s)",
                        (g_get_monotonic_time () - start) / 1e6, info->accel);
        g_printerr ("# boot to agent ready: %.2f s (accel %s)\n",
                    (g_get_monotonic_time () - start) / 1e6, info->accel);
}

static void test_exec_body (void);

static void
test_exec (void)
{
        NEED_VM ();
        test_exec_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_exec_body (void)
{
        g_autofree char *out = run_stdout ("uname -a", 0);

        g_assert_nonnull (out);
        g_assert_nonnull (strstr (out, "Linux"));
}

static void test_exit_codes_body (void);

static void
test_exit_codes (void)
{
        NEED_VM ();
        test_exit_codes_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_exit_codes_body (void)
{
        G_GNUC_UNUSED g_autofree char *a = run_stdout ("exit 7", 7);
        G_GNUC_UNUSED g_autofree char *b = run_stdout ("false", 1);
        g_autofree char *c = run_stdout ("echo out; echo err >&2; exit 0", 0);

        g_assert_cmpstr (c, ==, "out\n");
}

static void test_pause_resume_body (void);

static void
test_pause_resume (void)
{
        NEED_VM ();
        test_pause_resume_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_pause_resume_body (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) paused = NULL;
        g_autofree char *out = NULL;

        g_assert_true (vm_op (CORRAL_VM_OP_PAUSE, &error));
        g_assert_no_error (error);
        paused = vm_lookup (&error);
        g_assert_cmpint (paused->state, ==, CORRAL_VM_STATE_PAUSED);
        g_assert_false (vm_op (CORRAL_VM_OP_PAUSE, &error));
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_INVALID_STATE);
        g_clear_error (&error);
        g_assert_true (vm_op (CORRAL_VM_OP_RESUME, &error));
        g_assert_no_error (error);
        out = run_stdout ("echo resumed", 0);
        g_assert_cmpstr (out, ==, "resumed\n");
}

static void test_save_restore_body (void);

static void
test_save_restore (void)
{
        NEED_VM ();
        test_save_restore_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_save_restore_body (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) saved = NULL;
        G_GNUC_UNUSED g_autofree char *before =
                run_stdout ("echo $$ > /tmp/marker; cat /proc/uptime", 0);
        g_autofree char *after = NULL;

        g_assert_true (vm_op (CORRAL_VM_OP_SAVE, &error));
        g_assert_no_error (error);
        saved = vm_lookup (&error);
        g_assert_cmpint (saved->state, ==, CORRAL_VM_STATE_SAVED);
        /* QEMU exited: the connection is gone or about to be noticed. */
        corral_agent_client_close (T.client);
        g_assert_true (vm_op (CORRAL_VM_OP_RESTORE, &error));
        g_assert_no_error (error);
        g_assert_true (connect_agent (&error));
        g_assert_no_error (error);
        /* Same boot: the file written before the save is still there. */
        after = run_stdout ("test -f /tmp/marker && echo same-boot", 0);
        g_assert_cmpstr (after, ==, "same-boot\n");
}

static void test_reattach_body (void);

static void
test_reattach (void)
{
        NEED_VM ();
        test_reattach_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_reattach_body (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GPtrArray) vms = NULL;
        g_autofree char *out = NULL;
        gboolean found = FALSE;

        corral_agent_client_close (T.client);
        g_clear_object (&T.client);
        g_clear_object (&T.manager);

        T.manager = open_manager (&error);
        g_assert_no_error (error);
        corral_vm_manager_list_async (T.manager, NULL, vm_test_got_result, &res);
        vms = corral_vm_manager_list_finish (T.manager, vm_test_wait_for (&res), &error);
        g_assert_no_error (error);
        for (guint i = 0; vms && i < vms->len; i++) {
                CorralVmInfo *info = vms->pdata[i];
                if (g_str_equal (info->name, VM_NAME)) {
                        found = TRUE;
                        g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_RUNNING);
                        g_assert_cmpstr (info->transport, ==, "virtio-serial");
                        g_assert_nonnull (info->agent_socket);
                }
        }
        g_assert_true (found);
        T.client = corral_agent_client_new ();
        g_assert_true (connect_agent (&error));
        g_assert_no_error (error);
        out = run_stdout ("echo reattached", 0);
        g_assert_cmpstr (out, ==, "reattached\n");
}

static void
on_disconnected (CorralAgentClient *client, GError *error, gpointer user_data)
{
        *(gboolean *) user_data = TRUE;
}

static void test_agent_killed_body (void);

static void
test_agent_killed (void)
{
        NEED_VM ();
        test_agent_killed_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static gboolean
deadline_cb (gpointer user_data)
{
        *(gboolean *) user_data = TRUE;
        return G_SOURCE_REMOVE;
}

static void
test_agent_killed_body (void)
{
        g_autoptr (GError) error = NULL;
        /* The agent started this shell: /proc hides it from the commands' user (A9). */
        g_autofree char *pid = run_stdout ("echo $PPID", 0);
        g_autofree char *cmd = NULL;
        g_autoptr (CorralExecSpec) spec = NULL;
        g_autofree char *boot_id = g_strdup (corral_agent_client_get_boot_id (T.client));
        g_autofree char *out = NULL;
        gboolean disconnected = FALSE, late = FALSE;
        gulong id;
        guint deadline;

        g_assert_nonnull (pid);
        if (!pid)
                return;
        g_strstrip (pid);
        g_assert_cmpint (atoi (pid), >, 1);
        cmd = g_strdup_printf ("kill -9 %d", atoi (pid));
        spec = corral_exec_spec_new_shell (cmd);
        /* The agent runs as root; commands default to the unprivileged user, who may not. */
        corral_exec_spec_set_user (spec, "root");
        id = g_signal_connect (T.client, "disconnected", G_CALLBACK (on_disconnected),
                               &disconnected);
        deadline = g_timeout_add_seconds (15, deadline_cb, &late);
        corral_agent_client_spawn_async (T.client, spec, NULL, NULL, NULL);
        while (!disconnected && !late)
                g_main_context_iteration (NULL, TRUE);
        if (!late)
                g_source_remove (deadline);
        g_signal_handler_disconnect (T.client, id);
        /* Over virtio-serial the host socket stays open when the guest agent dies: only the
         * heartbeat can notice, within three intervals. */
        g_assert_true (disconnected);
        g_assert_false (corral_agent_client_get_connected (T.client));
        /* corral-init restarts the agent after 1 s. */
        g_assert_true (connect_agent (&error));
        g_assert_no_error (error);
        g_assert_cmpstr (corral_agent_client_get_boot_id (T.client), ==, boot_id);
        out = run_stdout ("echo $PPID", 0);
        g_assert_nonnull (out);
        if (out)
                g_assert_cmpstr (g_strstrip (out), !=, pid);
}

/* vm stop is the guest's own poweroff (system.poweroff, as the agent's commands cannot power
 * off), not the forced stop at the timeout: busybox init says it is going down. Then the VM
 * starts again for the tests after this one. */
static void test_stop_graceful_body (void);

static void
test_stop_graceful (void)
{
        NEED_VM ();
        test_stop_graceful_body ();
        if (g_test_failed ())
                T.usable = FALSE;
}

static void
test_stop_graceful_body (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autofree char *tail = NULL;
        g_autofree char *out = NULL;

        /* A timeout far beyond the agent's grace period: only a graceful stop is this quick to
         * leave a "going down" on the console. */
        corral_vm_manager_stop_async (T.manager, VM_NAME, T.client, 120000, NULL,
                                      vm_test_got_result, &res);
        g_assert_true (corral_vm_manager_stop_finish (T.manager, vm_test_wait_for (&res), &error));
        g_assert_no_error (error);
        info = vm_lookup (&error);
        g_assert_no_error (error);
        g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_SHUTOFF);
        tail = corral_vm_info_read_console_tail (info, 4096);
        g_assert_nonnull (tail);
        g_assert_nonnull (strstr (tail, "going down"));

        g_assert_true (vm_op (CORRAL_VM_OP_START, &error));
        g_assert_no_error (error);
        corral_agent_client_close (T.client);
        g_clear_object (&T.client);
        T.client = corral_agent_client_new ();
        g_assert_true (connect_agent (&error));
        g_assert_no_error (error);
        out = run_stdout ("echo started-again", 0);
        g_assert_cmpstr (out, ==, "started-again\n");
}

/* A guest kernel panic: the VM stops (on_crash / panic=-1) and is reported as crashed, with
 * the panic in the console tail that the person is shown. */
static void
test_crash_reported (void)
{
        g_autoptr (CorralExecSpec) spec =
                corral_exec_spec_new_shell ("echo c > /proc/sysrq-trigger");
        g_autoptr (CorralVmInfo) info = NULL;
        g_autofree char *tail = NULL;
        gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;

        NEED_VM ();
        corral_exec_spec_set_user (spec, "root");
        corral_agent_client_spawn_async (T.client, spec, NULL, NULL, NULL);
        while (g_get_monotonic_time () < deadline) {
                g_autoptr (GError) error = NULL;

                g_clear_pointer (&info, corral_vm_info_free);
                info = vm_lookup (&error);
                g_assert_no_error (error);
                if (info->state == CORRAL_VM_STATE_CRASHED)
                        break;
                g_usleep (200 * 1000);
                g_main_context_iteration (NULL, FALSE);
        }
        g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_CRASHED);
        tail = corral_vm_info_read_console_tail (info, 4096);
        g_assert_nonnull (strstr (tail, "Kernel panic"));
}

static void
test_destroy_remove (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) gone = NULL;

        corral_agent_client_close (T.client);
        g_assert_true (vm_op (CORRAL_VM_OP_DESTROY, &error));
        g_assert_no_error (error);
        g_assert_true (vm_op (CORRAL_VM_OP_REMOVE, &error));
        g_assert_no_error (error);
        g_assert_nonnull (T.vm_dir);
        g_assert_false (g_file_test (T.vm_dir, G_FILE_TEST_EXISTS));
        gone = vm_lookup (&error);
        g_assert_null (gone);
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM);
}

/* Setup ---------------------------------------------------------------------------------------- */

/* A previous run that crashed may have left the VM behind. */
static void
remove_leftover (void)
{
        g_autoptr (GError) error = NULL;

        if (!vm_op (CORRAL_VM_OP_REMOVE, &error) &&
            !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM))
                g_printerr ("# could not remove a leftover VM: %s\n", error->message);
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        int ret;

        corral_vm_manager_quiet_libvirt_logs ();
        g_test_init (&argc, &argv, NULL);
        if (!g_find_program_in_path ("qemu-system-x86_64"))
                vm_test_skip ("qemu-system-x86_64 is not installed");
        /* Short, fixed paths: sockets must fit in sun_path, and leftovers are found again. */
        T.state_dir = g_build_filename (g_get_tmp_dir (), "corral-vmtest", NULL);
        g_setenv ("XDG_STATE_HOME", T.state_dir, TRUE);
        T.image_dir = vm_test_build_minimal ();
        T.manager = open_manager (&error);
        if (!T.manager)
                vm_test_skip (error->message);
        remove_leftover ();
        T.client = corral_agent_client_new ();

        g_test_add_func ("/vm/boot", test_boot);
        g_test_add_func ("/vm/exec", test_exec);
        g_test_add_func ("/vm/exit-codes", test_exit_codes);
        g_test_add_func ("/vm/pause-resume", test_pause_resume);
        g_test_add_func ("/vm/save-restore", test_save_restore);
        g_test_add_func ("/vm/reattach", test_reattach);
        g_test_add_func ("/vm/agent-killed", test_agent_killed);
        g_test_add_func ("/vm/stop-graceful", test_stop_graceful);
        g_test_add_func ("/vm/crash-reported", test_crash_reported);
        g_test_add_func ("/vm/destroy-remove", test_destroy_remove);
        g_test_set_nonfatal_assertions ();
        ret = g_test_run ();

        /* Never leave a VM running, whatever happened above. */
        if (T.manager)
                remove_leftover ();
        g_clear_object (&T.client);
        g_clear_object (&T.manager);
        if (ret == 0)
                vm_test_remove_state (T.state_dir);
        return ret;
}
