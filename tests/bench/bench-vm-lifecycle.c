/* bench-vm-lifecycle.c — warm-pool handout vs cold boot, and pause/resume and managed
 * save/restore of a 512 MiB guest, through libvirt (TCG where KVM is unusable).
 *
 * Every figure is "to the first answered exec of /bin/true", next to the cold boot measured in
 * the same run as the baseline. Runs in its own state dir; at most two QEMUs at a time (a taken
 * VM and its replacement). Plain output; the last line is the handout ratio (goal <= 50 ms).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"
#include "../vm/vm-test-util.h"

#include "corral-vm-manager.h"
#include "corral-vm-pool.h"

#include <stdio.h>
#include <stdlib.h>

#define MEMORY_MIB 512
#define COLD_RUNS 3
#define HANDOUT_RUNS 3
#define PAUSE_RUNS 5
#define SAVE_RUNS 2
#define BOOT_TIMEOUT_MS 120000

static CorralVmManager *manager;

/* error is read after ok was computed (argument evaluation order is unspecified). */
static void
check (gboolean ok, GError **error, const char *what)
{
        if (!ok)
                g_error ("%s: %s", what, *error ? (*error)->message : "failed");
}

static void
vm_op (const char *name, CorralVmOp op)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;

        corral_vm_manager_op_async (manager, name, op, NULL, vm_test_got_result, &res);
        check (corral_vm_manager_op_finish (manager, vm_test_wait_for (&res), &error), &error,
               "VM operation");
}

static void
connect_agent (const char *name, CorralAgentClient *client)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;

        corral_vm_manager_connect_agent_async (manager, name, client, BOOT_TIMEOUT_MS, NULL,
                                               vm_test_got_result, &res);
        check (corral_vm_manager_connect_agent_finish (manager, vm_test_wait_for (&res), &error),
               &error, "connecting to the agent");
}

static void
remove_quietly (const char *name)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_op_async (manager, name, CORRAL_VM_OP_REMOVE, NULL, vm_test_got_result,
                                    &res);
        corral_vm_manager_op_finish (manager, vm_test_wait_for (&res), NULL);
}

static void
drain (CorralVmPool *pool)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;

        corral_vm_pool_drain_async (pool, NULL, vm_test_got_result, &res);
        check (corral_vm_pool_drain_finish (pool, vm_test_wait_for (&res), NULL, &error), &error,
               "drain");
        while (corral_vm_pool_get_n_booting (pool) > 0)
                g_main_context_iteration (NULL, TRUE);
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autofree char *state_dir = g_build_filename (g_get_tmp_dir (), "corral-bench-lc", NULL);
        g_autofree char *image_dir = NULL;
        g_autofree char *kernel = NULL;
        g_autofree char *initrd = NULL;
        g_autoptr (CorralVmPool) pool = NULL;
        g_autoptr (CorralAgentClient) kept = NULL;
        g_autoptr (GArray) cold = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) handout = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) take = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) pause = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) resume = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) save = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) restore = g_array_new (FALSE, FALSE, sizeof (double));
        double t0, c, h;
        const char *kept_alias = NULL;

        corral_vm_manager_quiet_libvirt_logs ();
        if (!g_find_program_in_path ("qemu-system-x86_64")) {
                printf ("SKIP: qemu-system-x86_64 is not installed\n");
                return 77;
        }
        g_setenv ("XDG_STATE_HOME", state_dir, TRUE);
        image_dir = vm_test_build_minimal ();
        kernel = g_build_filename (image_dir, "vmlinuz", NULL);
        initrd = g_build_filename (image_dir, "initramfs.img", NULL);
        corral_vm_manager_open_async (NULL, NULL, vm_test_got_result, &res);
        manager = corral_vm_manager_open_finish (vm_test_wait_for (&res), &error);
        check (manager != NULL, &error, "opening libvirt");
        CorralVmSpec spec = { .memory_mib = MEMORY_MIB,
                              .vcpus = 2,
                              .kernel = kernel,
                              .initrd = initrd,
                              .image_name = "minimal" };
        pool = corral_vm_pool_new (manager, &spec);
        remove_quietly ("bench-cold");
        for (int i = 0; i < HANDOUT_RUNS; i++) {
                g_autofree char *alias = g_strdup_printf ("bench-h%d", i);
                remove_quietly (alias);
        }
        drain (pool);

        /* Cold boot: define + start, agent HELLO, first exec. */
        for (int i = 0; i < COLD_RUNS; i++) {
                g_autoptr (GAsyncResult) cres = NULL;
                g_autoptr (CorralVmInfo) info = NULL;
                g_autoptr (CorralAgentClient) client = corral_agent_client_new ();
                CorralVmSpec cspec = spec;

                cspec.name = "bench-cold";
                t0 = bench_now ();
                corral_vm_manager_create_async (manager, &cspec, NULL, vm_test_got_result, &cres);
                info = corral_vm_manager_create_finish (manager, vm_test_wait_for (&cres), &error);
                check (info != NULL, &error, "cold boot");
                connect_agent ("bench-cold", client);
                bench_exec_true (client);
                c = bench_now () - t0;
                g_array_append_val (cold, c);
                g_print ("cold boot %d/%d to first exec: %.2f s\n", i + 1, COLD_RUNS, c);
                corral_agent_client_close (client);
                vm_op ("bench-cold", CORRAL_VM_OP_REMOVE);
        }
        c = bench_median (cold);

        /* Warm pool: one idle VM, refilled in the background after each handout. */
        {
                g_autoptr (GAsyncResult) fres = NULL;

                corral_vm_pool_fill_async (pool, 1, NULL, vm_test_got_result, &fres);
                check (corral_vm_pool_fill_finish (pool, vm_test_wait_for (&fres), NULL, &error),
                       &error, "pool fill");
        }
        corral_vm_pool_set_size (pool, 1);
        for (int i = 0; i < HANDOUT_RUNS; i++) {
                g_autofree char *alias = g_strdup_printf ("bench-h%d", i);
                g_autoptr (GAsyncResult) tres = NULL;
                g_autoptr (CorralAgentClient) client = NULL;
                double t1, t2;

                while (corral_vm_pool_get_n_ready (pool) < 1)
                        g_main_context_iteration (NULL, TRUE);
                t0 = bench_now ();
                corral_vm_pool_take_async (pool, alias, NULL, vm_test_got_result, &tres);
                client = corral_vm_pool_take_finish (pool, vm_test_wait_for (&tres), NULL, &error);
                check (client != NULL, &error, "pool take");
                t1 = bench_now ();
                bench_exec_true (client);
                t2 = bench_now ();
                g_array_append_val (take, (double){ (t1 - t0) * 1e3 });
                g_array_append_val (handout, (double){ (t2 - t0) * 1e3 });
                g_print ("handout %d/%d: take %.1f ms, take + first exec %.1f ms\n", i + 1,
                         HANDOUT_RUNS, (t1 - t0) * 1e3, (t2 - t0) * 1e3);
                if (i + 1 < HANDOUT_RUNS) {
                        corral_agent_client_close (client);
                        vm_op (alias, CORRAL_VM_OP_REMOVE);
                } else {
                        kept = g_steal_pointer (&client);
                        kept_alias = "bench-h2";
                }
        }
        h = bench_median (handout);
        /* The last taken VM is the 512 MiB guest for pause and save; no refill needed. */
        drain (pool);

        for (int i = 0; i < PAUSE_RUNS; i++) {
                double t1, t2;

                t0 = bench_now ();
                vm_op (kept_alias, CORRAL_VM_OP_PAUSE);
                t1 = bench_now ();
                vm_op (kept_alias, CORRAL_VM_OP_RESUME);
                bench_exec_true (kept);
                t2 = bench_now ();
                g_array_append_val (pause, (double){ (t1 - t0) * 1e3 });
                g_array_append_val (resume, (double){ (t2 - t1) * 1e3 });
        }
        for (int i = 0; i < SAVE_RUNS; i++) {
                double t1, t2;

                t0 = bench_now ();
                vm_op (kept_alias, CORRAL_VM_OP_SAVE);
                t1 = bench_now ();
                corral_agent_client_close (kept);
                vm_op (kept_alias, CORRAL_VM_OP_RESTORE);
                connect_agent (kept_alias, kept);
                bench_exec_true (kept);
                t2 = bench_now ();
                g_array_append_val (save, (double){ t1 - t0 });
                g_array_append_val (restore, (double){ t2 - t1 });
                g_print ("managed save %d/%d: %.2f s; restore to first exec %.2f s\n", i + 1,
                         SAVE_RUNS, t1 - t0, t2 - t1);
        }
        corral_agent_client_close (kept);
        vm_op (kept_alias, CORRAL_VM_OP_REMOVE);

        {
                double p = bench_median (pause), r = bench_median (resume);
                double s = bench_median (save), rs = bench_median (restore);

                g_print ("cold boot to first exec (%u MiB, median of %d): %.2f s\n", MEMORY_MIB,
                         COLD_RUNS, c);
                g_print ("pause %.1f ms + resume to first exec %.1f ms = %.1f ms vs cold boot "
                         "%.2f s, ratio %.4f\n",
                         p, r, p + r, c, (p + r) / 1e3 / c);
                g_print ("managed save %.2f s + restore to first exec %.2f s = %.2f s vs cold "
                         "boot %.2f s, ratio %.3f\n",
                         s, rs, s + rs, c, (s + rs) / c);
                g_print ("warm-pool take (median of %d): %.1f ms\n", HANDOUT_RUNS,
                         bench_median (take));
        }
        g_print ("warm-pool handout (take + first exec): %.1f ms vs cold boot to first exec "
                 "%.2f s, ratio %.4f (goal: handout <= 50 ms)\n",
                 h, c, h / 1e3 / c);
        g_clear_object (&kept);
        g_clear_object (&pool);
        g_clear_object (&manager);
        vm_test_remove_state (state_dir);
        return 0;
}
