/* corralctl-vm.c — VM lifecycle from the command line, on libvirt.
 *
 * argv[0] is "vm". Exit 125 for corralctl's own failures. corralctl exec and shell reach a
 * VM's agent through corralctl_vm_connect().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-vm.h"

#include "corral-image.h"
#include "corral-process.h"
#include "corral-vm-manager.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <unistd.h>

#define EXIT_CTL 125

static void
got_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (result);
}

static GAsyncResult *
wait_for (GAsyncResult **slot)
{
        while (!*slot)
                g_main_context_iteration (NULL, TRUE);
        return *slot;
}

static int
report (GError *error)
{
        g_printerr ("corralctl: %s\n", error->message);
        return EXIT_CTL;
}

static CorralVmManager *
open_manager (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_open_async (NULL, NULL, got_result, &res);
        return corral_vm_manager_open_finish (wait_for (&res), error);
}

static void
on_image_progress (double fraction, const char *text, gpointer user_data)
{
        g_printerr ("%3.0f%%  %s\n", fraction * 100.0, text);
}

/* Builds NAME if its inputs changed (cached otherwise), then loads it with its manifest
 * verified: a tampered image is refused here, before anything boots from it. */
static CorralImage *
ready_image (const char *name, GError **error)
{
        const char *agent = g_getenv ("CORRAL_AGENT_PATH");
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralImage) built = NULL;

        if (!agent || !*agent)
                agent = CORRAL_AGENT_BUILD_PATH;
        corral_image_build_async (name, agent, on_image_progress, NULL, NULL, got_result, &res);
        built = corral_image_build_finish (wait_for (&res), error);
        if (!built)
                return NULL;
        return corral_image_load_dir (name, built->dir, error);
}

static int
cmd_create (CorralVmManager *m, const char *name, int argc, char **argv)
{
        guint memory = 512, cpus = 2;
        const char *image_name = "minimal";
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;

        for (int i = 0; i < argc; i++) {
                if (g_str_equal (argv[i], "--memory") && i + 1 < argc)
                        memory = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--cpus") && i + 1 < argc)
                        cpus = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--image") && i + 1 < argc)
                        image_name = argv[++i];
                else {
                        g_printerr ("corralctl: unknown option “%s” (use --image NAME, "
                                    "--memory MiB, --cpus N)\n",
                                    argv[i]);
                        return EXIT_CTL;
                }
        }
        if (!(image = ready_image (image_name, &error)))
                return report (error);
        if (image->disk) {
                /* Disk-backed images need a per-VM qcow2 overlay, which the manager does not
                 * create yet; refuse instead of booting a VM that cannot find its root. */
                g_printerr ("corralctl: VMs from the “%s” image are not supported yet; use "
                            "--image minimal\n",
                            image_name);
                return EXIT_CTL;
        }
        CorralVmSpec spec = { .name = name,
                              .memory_mib = memory,
                              .vcpus = cpus,
                              .kernel = image->kernel,
                              .initrd = image->initrd,
                              .cmdline = image->cmdline,
                              .image_name = image->name,
                              .manifest_sha256 = image->manifest_sha256 };
        corral_vm_manager_create_async (m, &spec, NULL, got_result, &res);
        if (!(info = corral_vm_manager_create_finish (m, wait_for (&res), &error)))
                return report (error);
        g_print ("%s: %s (%s, %s)\n", info->name, corral_vm_state_to_string (info->state),
                 info->transport, info->accel);
        return 0;
}

static int
cmd_ls (CorralVmManager *m)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) vms = NULL;

        corral_vm_manager_list_async (m, NULL, got_result, &res);
        if (!(vms = corral_vm_manager_list_finish (m, wait_for (&res), &error)))
                return report (error);
        g_print ("%-24s %-9s %-14s %-5s %8s %4s\n", "NAME", "STATE", "TRANSPORT", "ACCEL", "MEMORY",
                 "CPUS");
        for (guint i = 0; i < vms->len; i++) {
                CorralVmInfo *v = vms->pdata[i];
                g_print ("%-24s %-9s %-14s %-5s %5uMiB %4u\n", v->name,
                         corral_vm_state_to_string (v->state), v->transport, v->accel,
                         v->memory_mib, v->vcpus);
        }
        return 0;
}

static gboolean
connect_client (CorralVmManager *m, const char *name, CorralAgentClient *client, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_connect_agent_async (m, name, client, 120000, NULL, got_result, &res);
        return corral_vm_manager_connect_agent_finish (m, wait_for (&res), error);
}

static int
cmd_stop (CorralVmManager *m, const char *name)
{
        g_autoptr (CorralAgentClient) client = corral_agent_client_new ();
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) cres = NULL;
        g_autoptr (GError) error = NULL;

        /* A short try: a VM whose agent is gone is powered off by libvirt instead. */
        corral_vm_manager_connect_agent_async (m, name, client, 5000, NULL, got_result, &cres);
        corral_vm_manager_connect_agent_finish (m, wait_for (&cres), NULL);
        corral_vm_manager_stop_async (m, name, client, 30000, NULL, got_result, &res);
        if (!corral_vm_manager_stop_finish (m, wait_for (&res), &error))
                return report (error);
        return 0;
}

static const struct {
        const char *name;
        CorralVmOp op;
} simple_ops[] = {
        { "start", CORRAL_VM_OP_START },     { "pause", CORRAL_VM_OP_PAUSE },
        { "resume", CORRAL_VM_OP_RESUME },   { "save", CORRAL_VM_OP_SAVE },
        { "restore", CORRAL_VM_OP_RESTORE }, { "destroy", CORRAL_VM_OP_DESTROY },
        { "rm", CORRAL_VM_OP_REMOVE },
};

static int
usage (void)
{
        g_printerr ("usage: corralctl vm create NAME [--image minimal] [--memory MiB] [--cpus N]\n"
                    "       corralctl vm start|stop|pause|resume|save|restore|destroy|rm NAME\n"
                    "       corralctl vm ls\n");
        return EXIT_CTL;
}

int
corralctl_vm_main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmManager) m = NULL;
        const char *cmd = argc > 1 ? argv[1] : NULL;

        corral_vm_manager_quiet_libvirt_logs ();
        if (!cmd)
                return usage ();
        if (!g_str_equal (cmd, "ls") && argc < 3)
                return usage ();
        if (!(m = open_manager (&error)))
                return report (error);
        if (g_str_equal (cmd, "ls"))
                return cmd_ls (m);
        if (g_str_equal (cmd, "create"))
                return cmd_create (m, argv[2], argc - 3, argv + 3);
        if (g_str_equal (cmd, "stop"))
                return cmd_stop (m, argv[2]);
        for (gsize i = 0; i < G_N_ELEMENTS (simple_ops); i++) {
                g_autoptr (GAsyncResult) res = NULL;

                if (!g_str_equal (cmd, simple_ops[i].name))
                        continue;
                corral_vm_manager_op_async (m, argv[2], simple_ops[i].op, NULL, got_result, &res);
                if (!corral_vm_manager_op_finish (m, wait_for (&res), &error))
                        return report (error);
                return 0;
        }
        return usage ();
}

/* exec and shell connect through here ------------------------------------------------------ */

gboolean
corralctl_vm_connect (const char *name,
                      CorralVmManager **ret_manager,
                      CorralAgentClient **ret_client,
                      GError **error)
{
        g_autoptr (CorralVmManager) m = NULL;
        g_autoptr (CorralAgentClient) client = NULL;

        corral_vm_manager_quiet_libvirt_logs ();
        if (!(m = open_manager (error)))
                return FALSE;
        client = corral_agent_client_new ();
        if (!connect_client (m, name, client, error))
                return FALSE;
        *ret_manager = g_steal_pointer (&m);
        *ret_client = g_steal_pointer (&client);
        return TRUE;
}
