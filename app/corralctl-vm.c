/* corralctl-vm.c — VM lifecycle from the command line, on libvirt.
 *
 * argv[0] is "vm". Exit 125 for corralctl's own failures. corralctl exec and shell reach a
 * VM's agent through corralctl_vm_connect().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-vm.h"

#include "corral-egress-vm.h"
#include "corral-task-desktop.h"
#include "corral-unix.h"
#include "corral-image.h"
#include "corral-process.h"
#include "corral-shares.h"
#include "corral-task-start.h"
#include "corral-domain-xml.h"
#include "corral-vm-disk.h"
#include "corral-vm-fork.h"
#include "corral-vm-gc.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"
#include "corralctl-opts.h"
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

/* The --share PATH:MODE specs, parsed: folders owned by paths. */
typedef struct {
        GArray *shares; /* CorralTaskShare */
        GPtrArray *paths;
} ShareList;

static void
share_list_clear (ShareList *list)
{
        g_clear_pointer (&list->shares, g_array_unref);
        g_clear_pointer (&list->paths, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (ShareList, share_list_clear)

static gboolean
share_list_parse (ShareList *list, char **specs, GError **error)
{
        list->shares = g_array_new (FALSE, FALSE, sizeof (CorralTaskShare));
        list->paths = g_ptr_array_new_with_free_func (g_free);
        for (char **spec = specs; spec && *spec; spec++) {
                CorralTaskShare share;
                char *path;

                if (!corralctl_share_parse_spec (*spec, &path, &share.mode, error))
                        return FALSE;
                g_ptr_array_add (list->paths, path);
                share.folder = path;
                g_array_append_val (list->shares, share);
        }
        return TRUE;
}

static void
print_shared (const ShareList *list, char **names)
{
        for (guint i = 0; list && i < list->shares->len; i++) {
                const CorralTaskShare *share = &g_array_index (list->shares, CorralTaskShare, i);

                g_print ("shared %s as /workspace/%s (%s)\n", share->folder, names[i],
                         fs_mode_describe (share->mode));
        }
}

/* A running VM's file server and network proxy, and its shares (nullable), started as the app
 * starts them (app/task). It is ready only once the guest has mounted them, so that the first
 * command sees them (SECURITY.md F17). */
static gboolean
services_ready (const char *vm_dir, const ShareList *list, GError **error)
{
        g_autofree char *alert = corral_egress_vm_dup_alert (vm_dir);
        g_auto (GStrv) names = NULL;

        /* The network session ended because a program sent a real secret (SECURITY.md K9):
         * the person hears it before the next command runs. */
        if (alert)
                g_printerr (_ ("corralctl: %s\n"), alert);
        if (!corral_task_start_services (
                    vm_dir, 0, list ? (const CorralTaskShare *) (void *) list->shares->data : NULL,
                    list ? list->shares->len : 0, NULL, &names, error))
                return FALSE;
        print_shared (list, names);
        return corral_shares_wait_mounted (vm_dir, CORRAL_SHARES_MOUNT_TIMEOUT_MS, NULL, error);
}

/* Warm pool ---------------------------------------------------------------------------------- */

static gboolean
ensure_services (CorralVmManager *m, const char *name, const ShareList *shares, GError **error);

/* Returns the exit status, or -1 when the pool is empty (the caller boots normally). shares:
 * those of --share, given to the VM handed out. */
static int
take_from_pool (CorralVmManager *m, const char *name, const ShareList *shares)
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

/* Options of vm create and vm pool fill. */
typedef struct {
        char *image;
        char *memory;
        char *cpus;
        char **shares;
        gboolean from_pool;
        gboolean screen;
        char *screen_size;
        /* memory and cpus, parsed (vm_options_size) */
        guint memory_mib;
        guint vcpus;
        /* --screen-size, parsed (vm_options_screen); 0: the default */
        guint screen_width, screen_height;
} VmOptions;

static void
vm_options_clear (VmOptions *o)
{
        g_free (o->image);
        g_free (o->memory);
        g_free (o->cpus);
        g_strfreev (o->shares);
        g_free (o->screen_size);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VmOptions, vm_options_clear)

/* Memory in MiB and vCPUs, strictly: the bounds are the domain XML's (corral-domain-xml.c). */
static gboolean
vm_options_size (const char *command, VmOptions *o)
{
        o->memory_mib = 512;
        o->vcpus = 2;
        return (!o->memory || corralctl_option_uint (command, "--memory", o->memory, 64,
                                                     1024 * 1024, &o->memory_mib)) &&
               (!o->cpus || corralctl_option_uint (command, "--cpus", o->cpus, 1, 256, &o->vcpus));
}

/* --screen-size WIDTHxHEIGHT (it implies --screen), in the domain XML's bounds. */
static gboolean
vm_options_screen (VmOptions *o)
{
        g_auto (GStrv) parts = NULL;

        if (!o->screen_size)
                return TRUE;
        o->screen = TRUE;
        parts = g_strsplit (o->screen_size, "x", 3);
        if (g_strv_length (parts) != 2) {
                g_printerr (_ ("corralctl vm create: --screen-size takes WIDTHxHEIGHT, such as "
                               "1280x800\n"));
                return FALSE;
        }
        return corralctl_option_uint ("vm create", "--screen-size", parts[0],
                                      CORRAL_DISPLAY_MIN_WIDTH, CORRAL_DISPLAY_MAX_WIDTH,
                                      &o->screen_width) &&
               corralctl_option_uint ("vm create", "--screen-size", parts[1],
                                      CORRAL_DISPLAY_MIN_HEIGHT, CORRAL_DISPLAY_MAX_HEIGHT,
                                      &o->screen_height);
}

static int
cmd_pool_fill (CorralVmManager *m, guint n, const VmOptions *o)
{
        guint count = 0;
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autoptr (CorralVmPool) pool = NULL;

        if (!(image = ready_image (o->image ? o->image : "minimal", &error)))
                return report (error);
        if (image->disk) {
                /* Pool VMs share nothing yet: no per-VM overlay for disk images. */
                g_printerr ("corralctl: the warm pool boots diskless images only (minimal)\n");
                return EXIT_CTL;
        }
        CorralVmSpec spec = { .memory_mib = o->memory_mib,
                              .vcpus = o->vcpus,
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
cmd_pool_ls (CorralVmManager *m)
{
        g_autoptr (CorralVmPool) pool = corral_vm_pool_new (m, NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GPtrArray) entries = NULL;

        corral_vm_pool_list_async (pool, NULL, corralctl_got_result, &res);
        if (!(entries = corral_vm_pool_list_finish (pool, corralctl_wait_for (&res), &error)))
                return report (error);
        g_print ("%-24s %-9s %-8s %s\n", "NAME", "STATE", "POOL", "ALIAS");
        for (guint i = 0; i < entries->len; i++) {
                CorralVmPoolEntry *e = entries->pdata[i];
                g_print ("%-24s %-9s %-8s %s\n", e->name, corral_vm_state_to_string (e->state),
                         corral_vm_pool_state_to_string (e->pool_state), e->alias ? e->alias : "-");
        }
        return 0;
}

static int
cmd_pool_drain (CorralVmManager *m)
{
        g_autoptr (CorralVmPool) pool = corral_vm_pool_new (m, NULL);
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        guint count = 0;

        corral_vm_pool_drain_async (pool, NULL, corralctl_got_result, &res);
        if (!corral_vm_pool_drain_finish (pool, corralctl_wait_for (&res), &count, &error))
                return report (error);
        g_print ("removed %u idle pool VMs\n", count);
        return 0;
}

static void
on_create_progress (CorralLaunchStage stage, double fraction, const char *detail, gpointer data)
{
        /* The image's build and a remote host's upload say how far they are. */
        if (detail && fraction >= 0.0)
                on_image_progress (fraction, detail, NULL);
}

static void
on_desktop_waiting (gpointer data)
{
        g_printerr (_ ("Waiting for the desktop…\n"));
}

/* A VM with a screen is handed over once its image's desktop (if it has one) is up. */
static gboolean
wait_desktop (CorralVmManager *m, const char *name, GError **error)
{
        g_autoptr (CorralAgentClient) client = corral_agent_client_new ();
        g_autoptr (GAsyncResult) res = NULL;

        corral_vm_manager_connect_agent_async (m, name, client, 120000, NULL, corralctl_got_result,
                                               &res);
        if (!corral_vm_manager_connect_agent_finish (m, corralctl_wait_for (&res), error))
                return FALSE;
        g_clear_object (&res);
        corral_task_wait_desktop_async (client, on_desktop_waiting, NULL, NULL,
                                        corralctl_got_result, &res);
        return corral_task_wait_desktop_finish (corralctl_wait_for (&res), error);
}

/* The app's start (corral_task_create_async), after the same preflight (run_vm_command). */
static int
cmd_create (CorralVmManager *m, const char *name, const VmOptions *o, const ShareList *shares)
{
        int pool_ret;
        g_autoptr (GError) error = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        g_auto (GStrv) names = NULL;

        if (o->from_pool && !o->screen && (pool_ret = take_from_pool (m, name, shares)) >= 0)
                return pool_ret;
        const CorralTaskSpec spec = {
                .name = name,
                .image = o->image ? o->image : "minimal",
                .memory_mib = o->memory_mib,
                .vcpus = o->vcpus,
                .shares = (const CorralTaskShare *) (void *) shares->shares->data,
                .n_shares = shares->shares->len,
                .screen = o->screen,
                .screen_width = o->screen_width,
                .screen_height = o->screen_height,
        };
        corral_task_create_async (m, &spec, on_create_progress, NULL, NULL, corralctl_got_result,
                                  &res);
        if (!(info = corral_task_create_finish (corralctl_wait_for (&res), &names, &error)))
                return report (error);
        g_print ("%s: %s (%s, %s)\n", info->name, corral_vm_state_to_string (info->state),
                 info->transport, info->accel);
        print_shared (shares, names);
        if (!corral_shares_wait_mounted (info->vm_dir, CORRAL_SHARES_MOUNT_TIMEOUT_MS, NULL,
                                         &error) ||
            (o->screen && !wait_desktop (m, name, &error)))
                return report (error);
        return 0;
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
cmd_fork (CorralVmManager *m, const char *source, const char *new_name)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        gint64 start = g_get_monotonic_time ();

        corral_vm_manager_fork_async (m, source, new_name, NULL, corralctl_got_result, &res);
        if (!(info = corral_vm_manager_fork_finish (m, corralctl_wait_for (&res), &error)))
                return report (error);
        g_print ("%s: %s, forked from %s in %.1f s\n", info->name,
                 corral_vm_state_to_string (info->state), source,
                 (g_get_monotonic_time () - start) / 1e6);
        return 0;
}

static int
cmd_snapshot (CorralVmManager *m, const char *cmd, const char *name, const char *snapshot)
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
        if (g_str_equal (cmd, "snapshot-restore"))
                op = CORRAL_VM_SNAPSHOT_REVERT;
        else if (g_str_equal (cmd, "snapshot-rm"))
                op = CORRAL_VM_SNAPSHOT_DELETE;
        corral_vm_manager_snapshot_async (m, name, snapshot, op, NULL, corralctl_got_result, &res);
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
ensure_services (CorralVmManager *m, const char *name, const ShareList *shares, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralVmInfo) info = NULL;

        corral_vm_manager_lookup_async (m, name, NULL, corralctl_got_result, &res);
        info = corral_vm_manager_lookup_finish (m, corralctl_wait_for (&res), NULL);
        if (!info || !info->vm_dir || info->state != CORRAL_VM_STATE_RUNNING)
                return TRUE;
        return services_ready (info->vm_dir, shares, error);
}

/* The vm subcommands ("pool" takes a second word). */
static const CorralctlCommand vm_commands[] = {
        { "create", N_ ("NAME"), 1, N_ ("Create a VM and start it") },
        { "ls", "", 0, N_ ("List the VMs") },
        { "start", N_ ("NAME"), 1, N_ ("Start a VM that is shut off") },
        { "stop", N_ ("NAME"), 1, N_ ("Shut a VM down, asking its agent first") },
        { "pause", N_ ("NAME"), 1, N_ ("Pause a VM (its memory stays)") },
        { "resume", N_ ("NAME"), 1, N_ ("Resume a paused VM") },
        { "save", N_ ("NAME"), 1, N_ ("Save a VM's memory to disk and stop it") },
        { "restore", N_ ("NAME"), 1, N_ ("Start a saved VM where it was") },
        { "destroy", N_ ("NAME"), 1, N_ ("Power a VM off at once") },
        { "rm", N_ ("NAME"), 1, N_ ("Remove a VM and its folder") },
        { "fork", N_ ("SOURCE NEW"), 2, N_ ("Make a new VM from a copy of a running one") },
        { "snapshot", N_ ("NAME SNAPSHOT"), 2, N_ ("Take a snapshot of a VM's disk") },
        { "snapshot-restore", N_ ("NAME SNAPSHOT"), 2, N_ ("Go back to a snapshot") },
        { "snapshot-rm", N_ ("NAME SNAPSHOT"), 2, N_ ("Remove a snapshot") },
        { "snapshots", N_ ("NAME"), 1, N_ ("List a VM's snapshots") },
        { "log", N_ ("NAME"), 1, N_ ("Show the end of a VM's console log") },
        { "pool fill", N_ ("N"), 1, N_ ("Boot idle VMs into the warm pool until it holds N") },
        { "pool ls", "", 0, N_ ("List the warm pool's VMs") },
        { "pool drain", "", 0, N_ ("Remove the warm pool's idle VMs") },
};

static int
run_vm_command (const char *cmd, const char *const *args, VmOptions *o)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmManager) m = NULL;
        g_auto (ShareList) shares = { 0 };
        guint n;

        /* Every argument is checked before libvirt is asked anything. */
        if (g_str_equal (cmd, "pool fill") &&
            !corralctl_option_uint ("vm pool fill", "N", args[0], 1, 64, &n))
                return EXIT_CTL;
        if ((g_str_equal (cmd, "create") || g_str_equal (cmd, "pool fill")) &&
            !vm_options_size (g_str_equal (cmd, "create") ? "vm create" : "vm pool fill", o))
                return EXIT_CTL;
        if (g_str_equal (cmd, "create") && !vm_options_screen (o))
                return EXIT_CTL;
        if (g_str_equal (cmd, "create") && o->screen && !corral_task_check_computer_use (&error))
                return report (error);
        /* The organisation's policy and the folders before anything is built or booted, as the
         * app checks them (corral_task_preflight): either would stop the task after the boot. */
        if ((g_str_equal (cmd, "create") || g_str_equal (cmd, "pool fill")) &&
            (!share_list_parse (&shares, o->shares, &error) ||
             !corral_task_preflight ((const CorralTaskShare *) (void *) shares.shares->data,
                                     shares.shares->len, o->image ? o->image : "minimal",
                                     o->memory_mib, o->vcpus, &error)))
                return report (error);
        if (!(m = corralctl_vm_open_manager (&error)))
                return report (error);
        if (g_str_equal (cmd, "ls"))
                return cmd_ls (m);
        if (g_str_equal (cmd, "pool fill"))
                return cmd_pool_fill (m, n, o);
        if (g_str_equal (cmd, "pool ls"))
                return cmd_pool_ls (m);
        if (g_str_equal (cmd, "pool drain"))
                return cmd_pool_drain (m);
        if (g_str_equal (cmd, "create"))
                return cmd_create (m, args[0], o, &shares);
        if (g_str_equal (cmd, "stop"))
                return cmd_stop (m, args[0]);
        if (g_str_equal (cmd, "fork"))
                return cmd_fork (m, args[0], args[1]);
        if (g_str_has_prefix (cmd, "snapshot"))
                return cmd_snapshot (m, cmd, args[0], args[1]);
        if (g_str_equal (cmd, "log"))
                return cmd_log (m, args[0]);
        for (gsize i = 0; i < G_N_ELEMENTS (simple_ops); i++) {
                g_autoptr (GAsyncResult) res = NULL;

                if (!g_str_equal (cmd, simple_ops[i].name))
                        continue;
                corral_vm_manager_op_async (m, args[0], simple_ops[i].op, NULL,
                                            corralctl_got_result, &res);
                if (!corral_vm_manager_op_finish (m, corralctl_wait_for (&res), &error) ||
                    !ensure_services (m, args[0], NULL, &error))
                        return report (error);
                return 0;
        }
        g_return_val_if_reached (EXIT_CTL);
}

int
corralctl_vm_main (int argc, char **argv)
{
        g_auto (VmOptions) o = { 0 };
        const GOptionEntry create_entries[] = {
                { "image", 0, 0, G_OPTION_ARG_STRING, &o.image,
                  N_ ("The guest image: minimal (the default, unless your organisation requires "
                      "another), standard, or your organisation’s"),
                  N_ ("NAME") },
                { "memory", 0, 0, G_OPTION_ARG_STRING, &o.memory,
                  N_ ("Memory in MiB, 64 to 1048576 (default 512)"), N_ ("MIB") },
                { "cpus", 0, 0, G_OPTION_ARG_STRING, &o.cpus,
                  N_ ("Virtual CPUs, 1 to 256 (default 2)"), N_ ("N") },
                { "share", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.shares,
                  N_ ("Share a folder: PATH:ro, PATH:rw or PATH:rw-nodelete (repeatable)"),
                  N_ ("PATH:MODE") },
                { "from-pool", 0, 0, G_OPTION_ARG_NONE, &o.from_pool,
                  N_ ("Take a booted VM from the warm pool when it has one"), NULL },
                { "screen", 0, 0, G_OPTION_ARG_NONE, &o.screen,
                  N_ ("Give the VM a screen for computer use (see “corralctl computer”)"), NULL },
                { "screen-size", 0, 0, G_OPTION_ARG_STRING, &o.screen_size,
                  N_ ("The screen’s size, 640x480 to 3840x2160 (default 1280x800)"),
                  N_ ("WIDTHxHEIGHT") },
                G_OPTION_ENTRY_NULL
        };
        /* pool fill takes the same options but --share and --from-pool. */
        const GOptionEntry fill_entries[] = { create_entries[0], create_entries[1],
                                              create_entries[2], G_OPTION_ENTRY_NULL };
        g_autofree char *name = NULL;
        const CorralctlCommand *command;
        const GOptionEntry *entries = NULL;
        int words = 1;

        corral_vm_manager_quiet_libvirt_logs ();
        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h"))
                return corralctl_group_usage (argc < 2 ? stderr : stdout, "vm", vm_commands,
                                              G_N_ELEMENTS (vm_commands), NULL);
        /* "pool" takes a second word. */
        if (g_str_equal (argv[1], "pool") && argc > 2 && argv[2][0] != '-') {
                name = g_strdup_printf ("pool %s", argv[2]);
                words = 2;
        } else if (g_str_equal (argv[1], "pool")) {
                g_printerr (_ ("corralctl vm pool: expected fill N, ls or drain\n"));
                return corralctl_group_usage (stderr, "vm", vm_commands, G_N_ELEMENTS (vm_commands),
                                              NULL);
        } else {
                name = g_strdup (argv[1]);
        }
        if (!(command = corralctl_group_lookup ("vm", vm_commands, G_N_ELEMENTS (vm_commands), name,
                                                NULL)))
                return EXIT_CTL;
        if (g_str_equal (name, "create"))
                entries = create_entries;
        else if (g_str_equal (name, "pool fill"))
                entries = fill_entries;
        argc -= words;
        argv += words;
        if (!corralctl_command_parse ("vm", command, entries, &argc, &argv))
                return EXIT_CTL;
        /* No --image: the one the organisation requires, as the app does, else minimal. */
        if (entries && !o.image)
                o.image = corral_task_default_image (NULL, FALSE);
        return run_vm_command (name, (const char *const *) argv + 1, &o);
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
