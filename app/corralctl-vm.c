/* corralctl-vm.c — VM lifecycle from the command line, on libvirt.
 *
 * argv[0] is "vm". Exit 125 for corralctl's own failures. corralctl exec and shell reach a
 * VM's agent through corralctl_vm_connect().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-vm.h"

#include "corral-egress-vm.h"
#include "corral-unix.h"
#include "corral-image.h"
#include "corral-process.h"
#include "corral-shares.h"
#include "corral-vm-disk.h"
#include "corral-vm-fork.h"
#include "corral-vm-gc.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"
#include "corralctl-share.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define EXIT_CTL 125
/* How long a VM whose agent socket accepts may take to say HELLO before libvirt is asked why
 * (a paused VM accepts and never answers; one with a client already does not accept). */
#define DIRECT_HELLO_MS 3000

void
corralctl_got_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (result);
}

GAsyncResult *
corralctl_wait_for (GAsyncResult **slot)
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

CorralVmManager *
corralctl_vm_open_manager (GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_open_async (NULL, NULL, corralctl_got_result, &res);
        return corral_vm_manager_open_finish (corralctl_wait_for (&res), error);
}

static void
on_image_progress (double fraction, const char *text, gpointer user_data)
{
        g_printerr ("%3.0f%%  %s\n", fraction * 100.0, text);
}

/* Builds NAME if its inputs changed (cached otherwise) and loads it with its manifest verified
 * (corral_image_build_finish does that): a tampered image is refused before anything boots. */
static CorralImage *
ready_image (const char *name, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        /* NULL: the agent from corral_paths_helper, like the app's. */
        corral_image_build_async (name, NULL, on_image_progress, NULL, NULL, corralctl_got_result,
                                  &res);
        return corral_image_build_finish (corralctl_wait_for (&res), error);
}

/* A running VM's file server and network proxy, and its shares. It is ready only once the guest
 * has mounted them, so that the first command sees them (SECURITY.md F17). */
static gboolean
services_ready (const char *vm_dir, GPtrArray *shares, GError **error)
{
        g_autoptr (GError) net_error = NULL;
        g_autofree char *alert = corral_egress_vm_dup_alert (vm_dir);

        /* The network session ended because a program sent a real secret (SECURITY.md K9):
         * the person hears it before the next command runs. */
        if (alert)
                g_printerr (_ ("corralctl: %s\n"), alert);
        corralctl_share_ensure (vm_dir);
        for (guint i = 0; shares && i < shares->len; i++)
                if (!corralctl_share_add_spec (vm_dir, shares->pdata[i], error))
                        return FALSE;
        /* Started before the wait: the guest's proxy sets up its session meanwhile. */
        if (!corral_egress_vm_ensure (vm_dir, &net_error))
                g_printerr (_ ("corralctl: the VM has no network: %s\n"), net_error->message);
        return corral_shares_wait_mounted (vm_dir, CORRAL_SHARES_MOUNT_TIMEOUT_MS, NULL, error);
}

/* Warm pool ---------------------------------------------------------------------------------- */

static gboolean
ensure_services (CorralVmManager *m, const char *name, GPtrArray *shares, GError **error);

/* Returns the exit status, or -1 when the pool is empty (the caller boots normally). shares:
 * the PATH:MODE specs of --share, given to the VM handed out. */
static int
take_from_pool (CorralVmManager *m, const char *name, GPtrArray *shares)
{
        g_autoptr (CorralVmPool) pool = corral_vm_pool_new (m, NULL);
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralAgentClient) client = NULL;
        g_autofree char *vm_name = NULL;

        corral_vm_pool_take_async (pool, name, NULL, corralctl_got_result, &res);
        client = corral_vm_pool_take_finish (pool, corralctl_wait_for (&res), &vm_name, &error);
        if (client) {
                g_print ("%s: running (warm pool VM %s, agent %s)\n", name, vm_name,
                         corral_agent_client_get_agent_version (client));
                corral_agent_client_close (client);
                return ensure_services (m, name, shares, &error) ? 0 : report (error);
        }
        if (!g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM))
                return report (error);
        g_printerr ("corralctl: the warm pool is empty; booting “%s” normally\n", name);
        return -1;
}

static int
cmd_pool (CorralVmManager *m, int argc, char **argv)
{
        const char *sub = argc > 0 ? argv[0] : "";
        guint memory = 512, cpus = 2, n, count = 0;
        const char *image_name = "minimal";
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autoptr (CorralVmPool) pool = NULL;
        g_autoptr (GPtrArray) entries = NULL;

        if (g_str_equal (sub, "ls") || g_str_equal (sub, "drain")) {
                pool = corral_vm_pool_new (m, NULL);
                if (g_str_equal (sub, "drain")) {
                        corral_vm_pool_drain_async (pool, NULL, corralctl_got_result, &res);
                        if (!corral_vm_pool_drain_finish (pool, corralctl_wait_for (&res), &count,
                                                          &error))
                                return report (error);
                        g_print ("removed %u idle pool VMs\n", count);
                        return 0;
                }
                corral_vm_pool_list_async (pool, NULL, corralctl_got_result, &res);
                if (!(entries =
                              corral_vm_pool_list_finish (pool, corralctl_wait_for (&res), &error)))
                        return report (error);
                g_print ("%-24s %-9s %-8s %s\n", "NAME", "STATE", "POOL", "ALIAS");
                for (guint i = 0; i < entries->len; i++) {
                        CorralVmPoolEntry *e = entries->pdata[i];
                        g_print ("%-24s %-9s %-8s %s\n", e->name,
                                 corral_vm_state_to_string (e->state),
                                 corral_vm_pool_state_to_string (e->pool_state),
                                 e->alias ? e->alias : "-");
                }
                return 0;
        }
        if (!g_str_equal (sub, "fill") || argc < 2) {
                g_printerr ("usage: corralctl vm pool fill N [--image minimal] [--memory MiB] "
                            "[--cpus N] | ls | drain\n");
                return EXIT_CTL;
        }
        n = (guint) g_ascii_strtoull (argv[1], NULL, 10);
        for (int i = 2; i < argc; i++) {
                if (g_str_equal (argv[i], "--memory") && i + 1 < argc)
                        memory = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--cpus") && i + 1 < argc)
                        cpus = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--image") && i + 1 < argc)
                        image_name = argv[++i];
                else {
                        g_printerr ("corralctl: unknown option “%s”\n", argv[i]);
                        return EXIT_CTL;
                }
        }
        if (!(image = ready_image (image_name, &error)))
                return report (error);
        if (image->disk) {
                /* Pool VMs share nothing yet: no per-VM overlay for disk images. */
                g_printerr ("corralctl: the warm pool boots diskless images only (minimal)\n");
                return EXIT_CTL;
        }
        CorralVmSpec spec = { .memory_mib = memory,
                              .vcpus = cpus,
                              .kernel = image->kernel,
                              .initrd = image->initrd,
                              .cmdline = image->cmdline,
                              .image_name = image->name,
                              .manifest_sha256 = image->manifest_sha256 };
        pool = corral_vm_pool_new (m, &spec);
        corral_vm_pool_fill_async (pool, n, NULL, corralctl_got_result, &res);
        if (!corral_vm_pool_fill_finish (pool, corralctl_wait_for (&res), &count, &error))
                return report (error);
        g_print ("booted %u; %u idle pool VMs\n", count, n);
        return 0;
}

static int
cmd_create (CorralVmManager *m, const char *name, int argc, char **argv)
{
        guint memory = 512, cpus = 2;
        const char *image_name = "minimal";
        gboolean from_pool = FALSE;
        int pool_ret;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autoptr (GPtrArray) shares = g_ptr_array_new ();

        for (int i = 0; i < argc; i++) {
                if (g_str_equal (argv[i], "--share") && i + 1 < argc)
                        g_ptr_array_add (shares, argv[++i]);
                else if (g_str_equal (argv[i], "--memory") && i + 1 < argc)
                        memory = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--cpus") && i + 1 < argc)
                        cpus = (guint) g_ascii_strtoull (argv[++i], NULL, 10);
                else if (g_str_equal (argv[i], "--image") && i + 1 < argc)
                        image_name = argv[++i];
                else if (g_str_equal (argv[i], "--from-pool"))
                        from_pool = TRUE;
                else {
                        g_printerr ("corralctl: unknown option “%s” (use --image NAME, "
                                    "--memory MiB, --cpus N, --share PATH:MODE)\n",
                                    argv[i]);
                        return EXIT_CTL;
                }
        }
        if (from_pool && (pool_ret = take_from_pool (m, name, shares)) >= 0)
                return pool_ret;
        if (!(image = ready_image (image_name, &error)))
                return report (error);
        CorralVmSpec spec = { .name = name,
                              .memory_mib = memory,
                              .vcpus = cpus,
                              .kernel = image->kernel,
                              .initrd = image->initrd,
                              .cmdline = image->cmdline,
                              .image_name = image->name,
                              .manifest_sha256 = image->manifest_sha256,
                              /* A per-VM overlay on it: the image's base is never written. */
                              .disk = image->disk,
                              /* Uploads to a remote libvirt host (once per image). */
                              .progress = on_image_progress };
        corral_vm_manager_create_async (m, &spec, NULL, corralctl_got_result, &res);
        if (!(info = corral_vm_manager_create_finish (m, corralctl_wait_for (&res), &error)))
                return report (error);
        g_print ("%s: %s (%s, %s)\n", info->name, corral_vm_state_to_string (info->state),
                 info->transport, info->accel);
        return services_ready (info->vm_dir, shares, &error) ? 0 : report (error);
}

static int
cmd_ls (CorralVmManager *m)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) vms = NULL;

        corral_vm_manager_list_async (m, NULL, corralctl_got_result, &res);
        if (!(vms = corral_vm_manager_list_finish (m, corralctl_wait_for (&res), &error)))
                return report (error);
        g_print ("%-24s %-9s %-14s %-5s %8s %4s %9s\n", "NAME", "STATE", "TRANSPORT", "ACCEL",
                 "MEMORY", "CPUS", "DISK");
        for (guint i = 0; i < vms->len; i++) {
                CorralVmInfo *v = vms->pdata[i];
                g_autofree char *disk = g_format_size (corral_vm_disk_usage (v->vm_dir));

                g_print ("%-24s %-9s %-14s %-5s %5uMiB %4u %9s\n", v->name,
                         corral_vm_state_to_string (v->state), v->transport, v->accel,
                         v->memory_mib, v->vcpus, disk);
        }
        return 0;
}

static gboolean
connect_client (CorralVmManager *m, const char *name, CorralAgentClient *client, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_connect_agent_async (m, name, client, 120000, NULL, corralctl_got_result,
                                               &res);
        return corral_vm_manager_connect_agent_finish (m, corralctl_wait_for (&res), error);
}

static int
cmd_stop (CorralVmManager *m, const char *name)
{
        g_autoptr (CorralAgentClient) client = corral_agent_client_new ();
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) cres = NULL;
        g_autoptr (GError) error = NULL;

        /* A short try: a VM whose agent is gone is powered off by libvirt instead. */
        corral_vm_manager_connect_agent_async (m, name, client, 5000, NULL, corralctl_got_result,
                                               &cres);
        corral_vm_manager_connect_agent_finish (m, corralctl_wait_for (&cres), NULL);
        corral_vm_manager_stop_async (m, name, client, 30000, NULL, corralctl_got_result, &res);
        if (!corral_vm_manager_stop_finish (m, corralctl_wait_for (&res), &error))
                return report (error);
        return 0;
}

static int
cmd_fork (CorralVmManager *m, const char *source, int argc, char **argv)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        gint64 start = g_get_monotonic_time ();

        if (argc != 1) {
                g_printerr ("usage: corralctl vm fork SOURCE NEW\n");
                return EXIT_CTL;
        }
        corral_vm_manager_fork_async (m, source, argv[0], NULL, corralctl_got_result, &res);
        if (!(info = corral_vm_manager_fork_finish (m, corralctl_wait_for (&res), &error)))
                return report (error);
        g_print ("%s: %s, forked from %s in %.1f s\n", info->name,
                 corral_vm_state_to_string (info->state), source,
                 (g_get_monotonic_time () - start) / 1e6);
        return 0;
}

static int
cmd_snapshot (CorralVmManager *m, const char *cmd, const char *name, int argc, char **argv)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        CorralVmSnapshotOp op = CORRAL_VM_SNAPSHOT_CREATE;

        if (g_str_equal (cmd, "snapshots")) {
                g_auto (GStrv) names = NULL;

                corral_vm_manager_snapshot_list_async (m, name, NULL, corralctl_got_result, &res);
                if (!(names = corral_vm_manager_snapshot_list_finish (m, corralctl_wait_for (&res),
                                                                      &error)))
                        return report (error);
                for (char **n = names; *n; n++)
                        g_print ("%s\n", *n);
                return 0;
        }
        if (argc != 1) {
                g_printerr ("usage: corralctl vm %s NAME SNAPSHOT\n", cmd);
                return EXIT_CTL;
        }
        if (g_str_equal (cmd, "snapshot-restore"))
                op = CORRAL_VM_SNAPSHOT_REVERT;
        else if (g_str_equal (cmd, "snapshot-rm"))
                op = CORRAL_VM_SNAPSHOT_DELETE;
        corral_vm_manager_snapshot_async (m, name, argv[0], op, NULL, corralctl_got_result, &res);
        if (!corral_vm_manager_snapshot_finish (m, corralctl_wait_for (&res), &error))
                return report (error);
        return 0;
}

static int
cmd_log (CorralVmManager *m, const char *name)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_autofree char *tail = NULL;

        corral_vm_manager_lookup_async (m, name, NULL, corralctl_got_result, &res);
        if (!(info = corral_vm_manager_lookup_finish (m, corralctl_wait_for (&res), &error)))
                return report (error);
        if (!(tail = corral_vm_info_read_console_tail (info, 16 * 1024))) {
                g_printerr ("corralctl: VM “%s” has no console log yet\n", name);
                return EXIT_CTL;
        }
        g_print ("%s: %s (console log %s)\n", info->name, corral_vm_state_to_string (info->state),
                 info->console_log);
        fputs (tail, stdout);
        if (*tail && tail[strlen (tail) - 1] != '\n')
                putchar ('\n');
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

/* A VM that (re)started needs its file server and its network proxy: their ports are new.
 * shares: more PATH:MODE specs to share (nullable). */
static gboolean
ensure_services (CorralVmManager *m, const char *name, GPtrArray *shares, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;

        corral_vm_manager_lookup_async (m, name, NULL, corralctl_got_result, &res);
        info = corral_vm_manager_lookup_finish (m, corralctl_wait_for (&res), NULL);
        if (!info || !info->vm_dir || info->state != CORRAL_VM_STATE_RUNNING)
                return TRUE;
        return services_ready (info->vm_dir, shares, error);
}

static int
usage (void)
{
        g_printerr ("usage: corralctl vm create NAME [--image minimal] [--memory MiB] [--cpus N] "
                    "[--from-pool] [--share PATH:ro|rw|rw-nodelete]...\n"
                    "       corralctl vm pool fill N [--memory MiB] [--cpus N] | pool ls | "
                    "pool drain\n"
                    "       corralctl vm start|stop|pause|resume|save|restore|destroy|rm NAME\n"
                    "       corralctl vm ls\n"
                    "       corralctl vm fork SOURCE NEW\n"
                    "       corralctl vm snapshot|snapshot-restore|snapshot-rm NAME SNAPSHOT\n"
                    "       corralctl vm snapshots|log NAME\n");
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
        if (!(m = corralctl_vm_open_manager (&error)))
                return report (error);
        if (g_str_equal (cmd, "ls"))
                return cmd_ls (m);
        if (g_str_equal (cmd, "pool"))
                return cmd_pool (m, argc - 2, argv + 2);
        if (g_str_equal (cmd, "create"))
                return cmd_create (m, argv[2], argc - 3, argv + 3);
        if (g_str_equal (cmd, "stop"))
                return cmd_stop (m, argv[2]);
        if (g_str_equal (cmd, "fork"))
                return cmd_fork (m, argv[2], argc - 3, argv + 3);
        if (g_str_equal (cmd, "snapshot") || g_str_equal (cmd, "snapshot-restore") ||
            g_str_equal (cmd, "snapshot-rm") || g_str_equal (cmd, "snapshots"))
                return cmd_snapshot (m, cmd, argv[2], argc - 3, argv + 3);
        if (g_str_equal (cmd, "log"))
                return cmd_log (m, argv[2]);
        for (gsize i = 0; i < G_N_ELEMENTS (simple_ops); i++) {
                g_autoptr (GAsyncResult) res = NULL;

                if (!g_str_equal (cmd, simple_ops[i].name))
                        continue;
                corral_vm_manager_op_async (m, argv[2], simple_ops[i].op, NULL,
                                            corralctl_got_result, &res);
                if (!corral_vm_manager_op_finish (m, corralctl_wait_for (&res), &error) ||
                    !ensure_services (m, argv[2], NULL, &error))
                        return report (error);
                return 0;
        }
        return usage ();
}

/* exec and shell connect through here ------------------------------------------------------ */

static gboolean
cancel_cb (gpointer user_data)
{
        g_cancellable_cancel (user_data);
        return G_SOURCE_REMOVE;
}

/* A running VM's agent, straight through the socket in its folder, without libvirt: so exec,
 * shell, info, mcp and agent work while another process holds the embedded driver, and cost no
 * libvirt connection. NULL when the VM is not plainly there (not started, paused, busy with
 * another client, on vsock or another machine, a warm-pool alias): libvirt then says why, or
 * waits for it. ret_vm_dir: (transfer full) the VM's folder. */
static CorralAgentClient *
connect_direct (const char *name, char **ret_vm_dir)
{
        g_autoptr (CorralHostSelection) sel = corral_host_select_default (NULL);
        g_autofree char *dname = g_strconcat (CORRAL_DOMAIN_PREFIX, name, NULL);
        g_autofree char *vm_dir = NULL;
        g_autofree char *sock = NULL;
        g_autoptr (CorralAgentClient) client = NULL;
        g_autoptr (GCancellable) cancellable = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        guint timeout_id;
        int fd;

        if (!sel || sel->remote || !corral_domain_name_is_valid (dname))
                return NULL;
        vm_dir = g_build_filename (sel->state_dir, "vms", name, NULL);
        sock = g_build_filename (vm_dir, "agent.sock", NULL);
        if ((fd = corral_unix_connect_full (sock, 1)) < 0) {
                g_debug ("no direct way to the agent of VM “%s”: %s", name, g_strerror (-fd));
                return NULL;
        }
        client = corral_agent_client_new ();
        cancellable = g_cancellable_new ();
        timeout_id = g_timeout_add (DIRECT_HELLO_MS, cancel_cb, cancellable);
        corral_agent_client_connect_fd_async (client, fd, cancellable, corralctl_got_result, &res);
        if (!corral_agent_client_connect_fd_finish (client, corralctl_wait_for (&res), &error)) {
                g_debug ("the agent of VM “%s” did not answer directly: %s", name, error->message);
                if (!g_cancellable_is_cancelled (cancellable))
                        g_source_remove (timeout_id);
                return NULL;
        }
        g_source_remove (timeout_id);
        *ret_vm_dir = g_steal_pointer (&vm_dir);
        return g_steal_pointer (&client);
}

gboolean
corralctl_vm_connect (const char *name,
                      CorralVmManager **ret_manager,
                      CorralAgentClient **ret_client,
                      GError **error)
{
        g_autoptr (CorralVmManager) m = NULL;
        g_autoptr (CorralAgentClient) client = NULL;
        g_autofree char *vm_dir = NULL;

        corral_vm_manager_quiet_libvirt_logs ();
        if ((client = connect_direct (name, &vm_dir))) {
                /* Its agent answered, so it runs: re-attach as below. */
                if (!services_ready (vm_dir, NULL, error))
                        return FALSE;
                *ret_manager = NULL;
                *ret_client = g_steal_pointer (&client);
                return TRUE;
        }
        if (!(m = corralctl_vm_open_manager (error)))
                return FALSE;
        client = corral_agent_client_new ();
        if (!connect_client (m, name, client, error))
                return FALSE;
        /* Re-attach: the file server and the network proxy may have gone (they exit with the
         * VM's ports); a new server's shares are there for the first command too. */
        if (!ensure_services (m, name, NULL, error))
                return FALSE;
        *ret_manager = g_steal_pointer (&m);
        *ret_client = g_steal_pointer (&client);
        return TRUE;
}
