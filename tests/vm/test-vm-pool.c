/* test-vm-pool.c — the warm pool and idle auto-suspend on real VMs through libvirt.
 *
 * Runs in its own state dir (so its own embedded libvirt root), at most two QEMUs at a time:
 * fill the pool with one VM, take it under an alias and exec at once, watch the pool refill,
 * reach the taken VM by its alias; then let the taken VM idle into a pause (T = 2 s) and wake it
 * with a request. Exit 77 (skip) when QEMU, libvirt or the guest image are unusable.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-process.h"
#include "vm-test-util.h"
#include "corral-vm-idle.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"

#include <stdio.h>
#include <stdlib.h>

#define ALIAS "pooltest-a"
#define BOOT_TIMEOUT_S 180

static struct {
        CorralVmManager *manager;
        CorralVmPool *pool;
        CorralAgentClient *taken; /* the client handed out with ALIAS */
        char *taken_name;
        char *image_dir;
} T;

static gboolean
flag_cb (gpointer user_data)
{
        *(gboolean *) user_data = TRUE;
        return G_SOURCE_REMOVE;
}

/* Iterates until check() holds or timeout_s passes; returns check(). */
static gboolean
wait_until (gboolean (*check) (void), guint timeout_s)
{
        gboolean late = FALSE;
        guint id = g_timeout_add_seconds (timeout_s, flag_cb, &late);

        while (!check () && !late)
                g_main_context_iteration (NULL, TRUE);
        if (!late)
                g_source_remove (id);
        return check ();
}

static void
sleep_loop (guint ms)
{
        gboolean done = FALSE;

        g_timeout_add (ms, flag_cb, &done);
        while (!done)
                g_main_context_iteration (NULL, TRUE);
}

static CorralVmInfo *
vm_lookup (const char *name, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_lookup_async (T.manager, name, NULL, vm_test_got_result, &res);
        return corral_vm_manager_lookup_finish (T.manager, vm_test_wait_for (&res), error);
}

static gboolean
vm_op (const char *name, CorralVmOp op, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_op_async (T.manager, name, op, NULL, vm_test_got_result, &res);
        return corral_vm_manager_op_finish (T.manager, vm_test_wait_for (&res), error);
}

static CorralRunResult *
run (CorralAgentClient *client, const char *command, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_shell (command);

        corral_exec_spec_set_timeout_ms (spec, 30000);
        corral_agent_client_run_async (client, spec, 64 * 1024, NULL, vm_test_got_result, &res);
        return corral_agent_client_run_finish (client, vm_test_wait_for (&res), error);
}

static GPtrArray *
pool_list (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_pool_list_async (T.pool, NULL, vm_test_got_result, &res);
        return corral_vm_pool_list_finish (T.pool, vm_test_wait_for (&res), error);
}

static gboolean
pool_drain (guint *removed, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_pool_drain_async (T.pool, NULL, vm_test_got_result, &res);
        return corral_vm_pool_drain_finish (T.pool, vm_test_wait_for (&res), removed, error);
}

static gboolean
pool_ready_1 (void)
{
        return corral_vm_pool_get_n_ready (T.pool) >= 1;
}

static gboolean
pool_quiet (void)
{
        return corral_vm_pool_get_n_booting (T.pool) == 0;
}

/* Tests ---------------------------------------------------------------------------------------- */

static void
test_fill (void)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        guint booted = 0;
        gint64 start = g_get_monotonic_time ();

        corral_vm_pool_fill_async (T.pool, 1, NULL, vm_test_got_result, &res);
        g_assert_true (
                corral_vm_pool_fill_finish (T.pool, vm_test_wait_for (&res), &booted, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (booted, ==, 1);
        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 1);
        g_printerr ("# pool fill 1: %.2f s\n", (g_get_monotonic_time () - start) / 1e6);

        entries = pool_list (&error);
        g_assert_no_error (error);
        g_assert_nonnull (entries);
        if (!entries)
                return;
        g_assert_cmpuint (entries->len, ==, 1);
        if (entries->len == 1) {
                CorralVmPoolEntry *e = entries->pdata[0];
                g_assert_true (g_str_has_prefix (e->name, CORRAL_POOL_VM_PREFIX));
                g_assert_cmpint (e->pool_state, ==, CORRAL_VM_POOL_IDLE);
                g_assert_cmpint (e->state, ==, CORRAL_VM_STATE_RUNNING);
                g_assert_null (e->alias);
        }

        /* Filling to what is there boots nothing. */
        g_clear_object (&res);
        corral_vm_pool_fill_async (T.pool, 1, NULL, vm_test_got_result, &res);
        g_assert_true (
                corral_vm_pool_fill_finish (T.pool, vm_test_wait_for (&res), &booted, &error));
        g_assert_cmpuint (booted, ==, 0);
}

static void
test_take (void)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) r = NULL;
        gint64 start, taken_at, ran_at;

        corral_vm_pool_set_size (T.pool, 1);
        start = g_get_monotonic_time ();
        corral_vm_pool_take_async (T.pool, ALIAS, NULL, vm_test_got_result, &res);
        T.taken =
                corral_vm_pool_take_finish (T.pool, vm_test_wait_for (&res), &T.taken_name, &error);
        taken_at = g_get_monotonic_time ();
        g_assert_no_error (error);
        g_assert_nonnull (T.taken);
        if (!T.taken)
                return;
        g_assert_true (corral_agent_client_get_connected (T.taken));
        /* First exec right away, no boot, no HELLO wait. */
        r = run (T.taken, "true", &error);
        ran_at = g_get_monotonic_time ();
        g_assert_no_error (error);
        g_assert_nonnull (r);
        if (r)
                g_assert_cmpint (r->exit_code, ==, 0);
        g_printerr ("# handout: take %.1f ms, + first exec %.1f ms\n", (taken_at - start) / 1e3,
                    (ran_at - start) / 1e3);
        /* The replacement boots in the background, a little later. */
        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 0);
}

static void
test_refill (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        guint idle = 0, taken = 0;

        if (!T.taken) {
                g_test_skip ("nothing was taken");
                return;
        }
        g_assert_true (wait_until (pool_ready_1, BOOT_TIMEOUT_S));
        g_assert_cmpuint (corral_vm_pool_get_n_booting (T.pool), ==, 0);
        entries = pool_list (&error);
        g_assert_no_error (error);
        for (guint i = 0; entries && i < entries->len; i++) {
                CorralVmPoolEntry *e = entries->pdata[i];
                if (e->pool_state == CORRAL_VM_POOL_IDLE) {
                        idle++;
                        g_assert_cmpstr (e->name, !=, T.taken_name);
                } else if (e->pool_state == CORRAL_VM_POOL_TAKEN) {
                        taken++;
                        g_assert_cmpstr (e->name, ==, T.taken_name);
                        g_assert_cmpstr (e->alias, ==, ALIAS);
                }
        }
        g_assert_cmpuint (idle, ==, 1);
        g_assert_cmpuint (taken, ==, 1);
}

static void
test_alias (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) res2 = NULL;
        g_autoptr (CorralAgentClient) second = corral_agent_client_new ();
        g_autoptr (CorralAgentClient) dup = NULL;
        g_autoptr (CorralRunResult) r = NULL;

        if (!T.taken) {
                g_test_skip ("nothing was taken");
                return;
        }
        /* Lookups (and so every operation) find the pool VM by its alias. */
        info = vm_lookup (ALIAS, &error);
        g_assert_no_error (error);
        g_assert_nonnull (info);
        if (info) {
                g_assert_cmpstr (info->name, ==, T.taken_name);
                g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_RUNNING);
        }
        /* The channel takes one client at a time: while the handed-out one is connected, a
         * second connect times out (and must not block the main loop)... */
        corral_vm_manager_connect_agent_async (T.manager, ALIAS, second, 1500, NULL,
                                               vm_test_got_result, &res);
        g_assert_false (corral_vm_manager_connect_agent_finish (T.manager, vm_test_wait_for (&res),
                                                                &error));
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_TIMEOUT);
        g_clear_error (&error);
        g_clear_object (&res);
        /* ...and once it disconnects, reconnecting by the alias works (re-attach). */
        corral_agent_client_close (T.taken);
        corral_vm_manager_connect_agent_async (T.manager, ALIAS, T.taken, 30000, NULL,
                                               vm_test_got_result, &res);
        g_assert_true (corral_vm_manager_connect_agent_finish (T.manager, vm_test_wait_for (&res),
                                                               &error));
        g_assert_no_error (error);
        r = run (T.taken, "echo via-alias", &error);
        g_assert_no_error (error);
        if (r)
                g_assert_cmpmem (g_bytes_get_data (r->stdout_data, NULL),
                                 g_bytes_get_size (r->stdout_data), "via-alias\n", 10);

        /* The alias is taken now: a second take under it fails and keeps the idle VM. */
        corral_vm_pool_take_async (T.pool, ALIAS, NULL, vm_test_got_result, &res2);
        dup = corral_vm_pool_take_finish (T.pool, vm_test_wait_for (&res2), NULL, &error);
        g_assert_null (dup);
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_EXISTS);
        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 1);
        g_assert_cmpuint (corral_vm_pool_get_n_booting (T.pool), ==, 0);
}

/* A pool that takes only its own (the app's warm workspace, corral-warm-workspace.h) never takes
 * another's idle VM, which may run another image or size; releasing one removes only its own. */
static void
test_take_own_release (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) released = NULL;
        g_autoptr (CorralVmPool) own = corral_vm_pool_new (T.manager, NULL);
        g_autoptr (CorralAgentClient) none = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        guint removed = 99, idle = 0;

        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 1);
        corral_vm_pool_set_take_own (own, TRUE);
        corral_vm_pool_take_async (own, "pooltest-own", NULL, vm_test_got_result, &res);
        none = corral_vm_pool_take_finish (own, vm_test_wait_for (&res), NULL, &error);
        g_assert_null (none);
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM);
        g_clear_error (&error);

        corral_vm_pool_release_async (own, NULL, vm_test_got_result, &released);
        g_assert_true (corral_vm_pool_release_finish (own, vm_test_wait_for (&released), &removed,
                                                      &error));
        g_assert_no_error (error);
        g_assert_cmpuint (removed, ==, 0);
        g_clear_object (&released);

        /* T.pool's own idle VM goes; the taken one stays. */
        corral_vm_pool_release_async (T.pool, NULL, vm_test_got_result, &released);
        g_assert_true (corral_vm_pool_release_finish (T.pool, vm_test_wait_for (&released),
                                                      &removed, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (removed, ==, 1);
        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 0);
        entries = pool_list (&error);
        g_assert_no_error (error);
        for (guint i = 0; entries && i < entries->len; i++)
                if (((CorralVmPoolEntry *) entries->pdata[i])->pool_state == CORRAL_VM_POOL_IDLE)
                        idle++;
        g_assert_cmpuint (idle, ==, 0);
        if (T.taken)
                g_assert_true (corral_agent_client_get_connected (T.taken));
}

static void
test_drain_empty (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralAgentClient) none = NULL;
        guint removed = 0;

        g_assert_true (pool_drain (&removed, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (removed, ==, 0); /* released before */
        g_assert_true (wait_until (pool_quiet, BOOT_TIMEOUT_S));
        g_assert_cmpuint (corral_vm_pool_get_n_ready (T.pool), ==, 0);
        /* The taken VM survives a drain. */
        if (T.taken)
                g_assert_true (corral_agent_client_get_connected (T.taken));
        corral_vm_pool_take_async (T.pool, "pooltest-b", NULL, vm_test_got_result, &res);
        none = corral_vm_pool_take_finish (T.pool, vm_test_wait_for (&res), NULL, &error);
        g_assert_null (none);
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM);
}

static void
on_paused (CorralVmIdle *idle, gpointer user_data)
{
        *(gboolean *) user_data = TRUE;
}

static void
test_idle (void)
{
        g_autoptr (CorralVmIdle) idle = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autoptr (CorralVmInfo) after = NULL;
        g_autoptr (CorralRunResult) r1 = NULL;
        g_autoptr (CorralRunResult) r2 = NULL;
        g_autoptr (GAsyncResult) res1 = NULL;
        g_autoptr (GAsyncResult) res2 = NULL;
        g_autoptr (CorralExecSpec) echo1 = corral_exec_spec_new_shell ("echo before");
        g_autoptr (CorralExecSpec) echo2 = corral_exec_spec_new_shell ("echo awake");
        gboolean paused = FALSE, late = FALSE;
        guint deadline;
        gint64 start;

        if (!T.taken) {
                g_test_skip ("nothing was taken");
                return;
        }
        idle = corral_vm_idle_new (T.manager, ALIAS, T.taken, 2000);
        g_signal_connect (idle, "paused", G_CALLBACK (on_paused), &paused);
        corral_vm_idle_run_async (idle, echo1, 4096, NULL, vm_test_got_result, &res1);
        r1 = corral_vm_idle_run_finish (idle, vm_test_wait_for (&res1), &error);
        g_assert_no_error (error);
        g_assert_nonnull (r1);

        /* Idle for 2 s: paused. */
        deadline = g_timeout_add_seconds (10, flag_cb, &late);
        while (!paused && !late)
                g_main_context_iteration (NULL, TRUE);
        if (!late)
                g_source_remove (deadline);
        g_assert_true (paused);
        g_assert_true (corral_vm_idle_get_paused (idle));
        info = vm_lookup (ALIAS, &error);
        g_assert_no_error (error);
        if (info)
                g_assert_cmpint (info->state, ==, CORRAL_VM_STATE_PAUSED);
        /* Longer than the heartbeat allows (3 x 1 s): the connection must survive. */
        sleep_loop (5000);
        g_assert_true (corral_agent_client_get_connected (T.taken));

        /* A request wakes it and is answered. */
        start = g_get_monotonic_time ();
        corral_vm_idle_run_async (idle, echo2, 4096, NULL, vm_test_got_result, &res2);
        r2 = corral_vm_idle_run_finish (idle, vm_test_wait_for (&res2), &error);
        g_assert_no_error (error);
        g_assert_nonnull (r2);
        if (r2)
                g_assert_cmpmem (g_bytes_get_data (r2->stdout_data, NULL),
                                 g_bytes_get_size (r2->stdout_data), "awake\n", 6);
        g_printerr ("# wake + exec: %.1f ms\n", (g_get_monotonic_time () - start) / 1e3);
        g_assert_false (corral_vm_idle_get_paused (idle));
        g_assert_cmpuint (corral_vm_idle_get_n_suspends (idle), ==, 1);
        after = vm_lookup (ALIAS, &error);
        g_assert_no_error (error);
        if (after)
                g_assert_cmpint (after->state, ==, CORRAL_VM_STATE_RUNNING);
        g_assert_true (corral_agent_client_get_connected (T.taken));
}

/* Setup ---------------------------------------------------------------------------------------- */

/* Removes the taken VM and every pool VM (leftovers of a crashed run included). */
static void
cleanup (void)
{
        g_autoptr (GError) error = NULL;

        if (T.taken)
                corral_agent_client_close (T.taken);
        if (!vm_op (ALIAS, CORRAL_VM_OP_REMOVE, &error) &&
            !g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM))
                g_printerr ("# could not remove %s: %s\n", ALIAS, error->message);
        g_clear_error (&error);
        if (!pool_drain (NULL, &error))
                g_printerr ("# could not drain the pool: %s\n", error->message);
        wait_until (pool_quiet, BOOT_TIMEOUT_S);
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autofree char *state_dir = NULL;
        g_autofree char *kernel = NULL;
        g_autofree char *initrd = NULL;
        int ret;

        corral_vm_manager_quiet_libvirt_logs ();
        g_test_init (&argc, &argv, NULL);
        if (!g_find_program_in_path ("qemu-system-x86_64"))
                vm_test_skip ("qemu-system-x86_64 is not installed");
        /* Its own state dir, so its own embedded libvirt root; short for sun_path. */
        state_dir = g_build_filename (g_get_tmp_dir (), "corral-pooltest", NULL);
        g_setenv ("XDG_STATE_HOME", state_dir, TRUE);
        T.image_dir = vm_test_build_minimal ();
        kernel = g_build_filename (T.image_dir, "vmlinuz", NULL);
        initrd = g_build_filename (T.image_dir, "initramfs.img", NULL);
        corral_vm_manager_open_async (NULL, NULL, vm_test_got_result, &res);
        T.manager = corral_vm_manager_open_finish (vm_test_wait_for (&res), &error);
        if (!T.manager)
                vm_test_skip (error->message);
        CorralVmSpec spec = { .memory_mib = 256,
                              .vcpus = 1,
                              .kernel = kernel,
                              .initrd = initrd,
                              .image_name = "minimal" };
        T.pool = corral_vm_pool_new (T.manager, &spec);
        cleanup ();

        g_test_add_func ("/vm/pool/fill", test_fill);
        g_test_add_func ("/vm/pool/take", test_take);
        g_test_add_func ("/vm/pool/refill", test_refill);
        g_test_add_func ("/vm/pool/alias", test_alias);
        g_test_add_func ("/vm/pool/take-own-release", test_take_own_release);
        g_test_add_func ("/vm/pool/drain-empty", test_drain_empty);
        g_test_add_func ("/vm/idle/suspend-wake", test_idle);
        g_test_set_nonfatal_assertions ();
        ret = g_test_run ();

        /* Never leave a VM running, whatever happened above. */
        cleanup ();
        g_clear_object (&T.taken);
        g_clear_object (&T.pool);
        g_clear_object (&T.manager);
        g_free (T.taken_name);
        g_free (T.image_dir);
        if (ret == 0)
                vm_test_remove_state (state_dir);
        return ret;
}
