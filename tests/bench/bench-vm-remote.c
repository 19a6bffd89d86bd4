/* bench-vm-remote.c — a VM over a remote libvirt URI next to the same VM on the local one.
 *
 * $CORRAL_BENCH_REMOTE_URI names the "other machine" (bench-vm-remote.sh starts a private
 * libvirtd on loopback TCP for it); the baseline is the embedded driver, in the same run, with
 * the same minimal image, 512 MiB and 2 vCPUs. Rows, each "remote vs local":
 *   1. create to first answered exec (the image already uploaded), and the first create with
 *      its upload, next to copying the same files on this disk;
 *   2. exec round trip of /bin/true (through corral-chanbridge vs straight to QEMU's socket);
 *   3. 64 MiB of stdout streamed from the guest.
 * At most two QEMUs at a time. Plain output; the last line is the exec round-trip ratio.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"
#include "../vm/vm-test-util.h"

#include "corral-vm-host.h"
#include "corral-vm-manager.h"

#include <stdio.h>
#include <stdlib.h>

#define MEMORY_MIB 512
#define CREATE_RUNS 3
#define EXEC_RUNS 100
#define STREAM_BYTES (64u * 1024 * 1024)
#define BOOT_TIMEOUT_MS 120000

typedef struct {
        const char *label;
        const char *vm; /* its VM's name: the two sides share a state folder */
        CorralVmManager *manager;
        CorralAgentClient *client;
} Side;

static void
check (gboolean ok, GError **error, const char *what)
{
        if (!ok)
                g_error ("%s: %s", what, *error ? (*error)->message : "failed");
}

static CorralVmManager *
open_manager (const char *uri, const char *state_dir)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHostSelection) sel = NULL;
        CorralVmManager *m;
        CorralHostFacts facts = {
                .is_root = geteuid () == 0,
                .env_uri = uri,
                .env_accel = "tcg", /* the same accelerator on both sides */
                .state_dir = state_dir,
        };

        sel = corral_host_select (&facts, &error);
        check (sel != NULL, &error, "selecting the host");
        corral_vm_manager_open_async (sel, NULL, vm_test_got_result, &res);
        m = corral_vm_manager_open_finish (vm_test_wait_for (&res), &error);
        check (m != NULL, &error, "opening libvirt");
        return m;
}

static void
remove_quietly (Side *s, const char *name)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_op_async (s->manager, name, CORRAL_VM_OP_REMOVE, NULL, vm_test_got_result,
                                    &res);
        corral_vm_manager_op_finish (s->manager, vm_test_wait_for (&res), NULL);
}

/* Creates the side's VM and runs its first exec; returns the seconds that took. s->client:
 * connected. */
static double
create_to_exec (Side *s, const CorralVmSpec *tmpl)
{
        const char *name = s->vm;
        CorralVmSpec spec = *tmpl;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) cres = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        double t0;

        spec.name = name;
        g_clear_object (&s->client);
        s->client = corral_agent_client_new ();
        t0 = bench_now ();
        corral_vm_manager_create_async (s->manager, &spec, NULL, vm_test_got_result, &res);
        info = corral_vm_manager_create_finish (s->manager, vm_test_wait_for (&res), &error);
        check (info != NULL, &error, "creating the VM");
        corral_vm_manager_connect_agent_async (s->manager, name, s->client, BOOT_TIMEOUT_MS, NULL,
                                               vm_test_got_result, &cres);
        check (corral_vm_manager_connect_agent_finish (s->manager, vm_test_wait_for (&cres),
                                                       &error),
               &error, "connecting to the agent");
        bench_exec_true (s->client);
        return bench_now () - t0;
}

static double
exec_median (CorralAgentClient *client)
{
        g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (double));

        for (int i = 0; i < 5; i++) /* warm-up */
                bench_exec_true (client);
        for (int i = 0; i < EXEC_RUNS; i++) {
                double t0 = bench_now ();

                bench_exec_true (client);
                t0 = bench_now () - t0;
                g_array_append_val (samples, t0);
        }
        return bench_median (samples);
}

/* The baseline of the upload: the same bytes copied on this machine's disk. */
static double
copy_files (const char *const *paths, const char *dir, guint64 *ret_bytes)
{
        double t0 = bench_now ();

        *ret_bytes = 0;
        for (gsize i = 0; paths[i]; i++) {
                g_autofree char *base = g_path_get_basename (paths[i]);
                g_autofree char *dest = g_build_filename (dir, base, NULL);
                g_autofree char *data = NULL;
                g_autoptr (GError) error = NULL;
                gsize len;

                check (g_file_get_contents (paths[i], &data, &len, &error) &&
                               g_file_set_contents (dest, data, (gssize) len, &error),
                       &error, "copying");
                *ret_bytes += len;
                unlink (dest);
        }
        return bench_now () - t0;
}

int
main (int argc, char **argv)
{
        const char *uri = g_getenv ("CORRAL_BENCH_REMOTE_URI");
        g_autofree char *state_dir = g_build_filename (g_get_tmp_dir (), "corral-bench-rm", NULL);
        g_autofree char *image_dir = NULL;
        g_autofree char *kernel = NULL;
        g_autofree char *initrd = NULL;
        g_autofree char *scratch = NULL;
        Side local = { "local", "bench-local" }, remote = { "remote", "bench-remote" };
        Side *sides[] = { &local, &remote };
        g_autoptr (GArray) create_local = g_array_new (FALSE, FALSE, sizeof (double));
        g_autoptr (GArray) create_remote = g_array_new (FALSE, FALSE, sizeof (double));
        GArray *create[] = { create_local, create_remote };
        g_autofree char *corral_state = NULL;
        double first_upload, copy, exec_rt[2], streamed[2];
        guint64 image_bytes;

        corral_vm_manager_quiet_libvirt_logs ();
        if (!uri || !*uri) {
                printf ("SKIP: CORRAL_BENCH_REMOTE_URI is not set (run bench-vm-remote.sh)\n");
                return 77;
        }
        g_setenv ("XDG_STATE_HOME", state_dir, TRUE);
        image_dir = vm_test_build_minimal ();
        kernel = g_build_filename (image_dir, "vmlinuz", NULL);
        initrd = g_build_filename (image_dir, "initramfs.img", NULL);
        scratch = g_build_filename (state_dir, "copy", NULL);
        g_mkdir_with_parents (scratch, 0700);
        corral_state = g_build_filename (state_dir, "corral", NULL);
        local.manager = open_manager (NULL, corral_state);
        remote.manager = open_manager (uri, corral_state);
        /* No manifest digest: the image is named by its files' own digests there. */
        CorralVmSpec spec = { .memory_mib = MEMORY_MIB,
                              .vcpus = 2,
                              .kernel = kernel,
                              .initrd = initrd,
                              .image_name = "minimal" };
        for (int s = 0; s < 2; s++)
                remove_quietly (sides[s], sides[s]->vm);

        /* Row 1: the first remote create uploads the image. The first local one (not counted)
         * has the embedded driver probe QEMU's capabilities, which the daemon over there has
         * cached already. */
        {
                const char *const files[] = { kernel, initrd, NULL };

                copy = copy_files (files, scratch, &image_bytes);
                create_to_exec (&local, &spec);
                remove_quietly (&local, local.vm);
                first_upload = create_to_exec (&remote, &spec);
                remove_quietly (&remote, remote.vm);
        }
        for (int i = 0; i < CREATE_RUNS; i++)
                for (int s = 0; s < 2; s++) {
                        double t = create_to_exec (sides[s], &spec);

                        g_array_append_val (create[s], t);
                        if (i + 1 < CREATE_RUNS)
                                remove_quietly (sides[s], sides[s]->vm);
                }
        /* Rows 2 and 3, one side after the other (both VMs up, one measured at a time). */
        for (int s = 0; s < 2; s++) {
                guint64 bytes = 0;
                g_autoptr (GError) error = NULL;

                exec_rt[s] = exec_median (sides[s]->client);
                streamed[s] = bench_stream_zero (sides[s]->client, STREAM_BYTES, &bytes, &error);
                check (streamed[s] >= 0 && bytes == STREAM_BYTES, &error, "streaming");
        }
        for (int s = 0; s < 2; s++) {
                corral_agent_client_close (sides[s]->client);
                remove_quietly (sides[s], sides[s]->vm);
                g_clear_object (&sides[s]->client);
                g_clear_object (&sides[s]->manager);
        }

        g_print ("remote URI: %s; local: the embedded driver; TCG, %u MiB, 2 vCPUs\n", uri,
                 MEMORY_MIB);
        g_print ("create to first exec (image there already): remote %.2f s vs local %.2f s "
                 "(ratio %.2f)\n",
                 bench_median (create[1]), bench_median (create[0]),
                 bench_median (create[1]) / bench_median (create[0]));
        g_print ("first create with the upload of %.1f MiB: %.2f s (copying the same files here: "
                 "%.3f s)\n",
                 image_bytes / 1048576.0, first_upload, copy);
        g_print ("stream 64 MiB stdout: remote %.1f MiB/s vs local %.1f MiB/s (ratio %.2f)\n",
                 STREAM_BYTES / streamed[1] / 1048576, STREAM_BYTES / streamed[0] / 1048576,
                 streamed[0] / streamed[1]);
        g_print ("exec round trip of /bin/true: remote %.2f ms vs local %.2f ms (ratio %.2f)\n",
                 exec_rt[1] * 1000, exec_rt[0] * 1000, exec_rt[1] / exec_rt[0]);
        vm_test_remove_state (state_dir);
        return 0;
}
