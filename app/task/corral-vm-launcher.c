/* corral-vm-launcher.c — starting a task's workspace: check the policy and the folder, open
 * libvirt, then the start corralctl makes too (corral_task_create_async: the image, the VM, the
 * folder, the network daemon), connect to the guest agent and wait until the guest has mounted
 * the folder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-launcher.h"

#include <glib/gi18n.h>

#include "corral-shares.h"
#include "corral-task-private.h"
#include "corral-task-start.h"
#include "corral-thread.h"
#include "corral-vm-manager.h"
#include "corral-task-desktop.h"
#include "corral-warm-workspace.h"
#include "egress-policy.h"

#define CONNECT_TIMEOUT_MS 180000

struct _CorralVmLauncher {
        GObject parent_instance;

        CorralVmManager *manager; /* opened on first use */
        CorralWarmWorkspace *warm; /* with the manager */
};

static void corral_vm_launcher_iface_init (CorralLauncherInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (CorralVmLauncher,
                               corral_vm_launcher,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (CORRAL_TYPE_LAUNCHER,
                                                      corral_vm_launcher_iface_init))

typedef struct {
        CorralTaskConfig *config; /* reopening: (nullable) to make a removed VM again */
        char *vm_name; /* reopening: the earlier task's VM */
        CorralLaunchProgressFunc progress;
        gpointer progress_data;
        CorralLaunchResult *result;
        /* from the warm workspace (nullable): the image checked ahead, a VM booted ahead */
        CorralImage *built;
        CorralVmPool *pool;
} Launch;

static void
launch_free (Launch *l)
{
        corral_task_config_free (l->config);
        g_free (l->vm_name);
        corral_launch_result_free (l->result);
        corral_image_free (l->built);
        g_clear_object (&l->pool);
        g_free (l);
}

static void
report (GTask *task, CorralLaunchStage stage, double fraction, const char *detail)
{
        Launch *l = g_task_get_task_data (task);

        if (l->progress)
                l->progress (stage, fraction, detail, l->progress_data);
}

static void
launch_done (GTask *task)
{
        Launch *l = g_task_get_task_data (task);

        report (task, CORRAL_LAUNCH_STAGE_CONNECT, 1.0, NULL);
        g_task_return_pointer (task, g_steal_pointer (&l->result),
                               (GDestroyNotify) corral_launch_result_free);
        g_object_unref (task);
}

static void
on_desktop (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        if (!corral_task_wait_desktop_finish (res, &error) && corral_task_fail_if (task, error))
                return;
        launch_done (task);
}

static void
on_desktop_waiting (gpointer data)
{
        report (data, CORRAL_LAUNCH_STAGE_CONNECT, -1.0, _ ("Waiting for the desktop…"));
}

static void
on_mounted (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;
        g_autofree char *screen = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        /* A task with a screen (started or reopened) is handed over with its desktop up. */
        screen = g_build_filename (l->result->vm_dir, "vnc.sock", NULL);
        if (g_file_test (screen, G_FILE_TEST_EXISTS)) {
                corral_task_wait_desktop_async (CORRAL_AGENT_CLIENT (l->result->agent_client),
                                                on_desktop_waiting, task,
                                                g_task_get_cancellable (task), on_desktop, task);
                return;
        }
        launch_done (task);
}

/* Worker thread: the task is ready only once the guest has mounted the folder, so that the
 * agent's first command sees it (SECURITY.md F17). Seconds at most once the agent answers. */
static gpointer
wait_mounted (gpointer data, GCancellable *cancellable, GError **error)
{
        Launch *l = data;

        if (!corral_shares_wait_mounted (l->result->vm_dir, CORRAL_SHARES_MOUNT_TIMEOUT_MS,
                                         cancellable, error))
                return NULL;
        return GINT_TO_POINTER (TRUE);
}

static void
on_connected (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;

        if (!corral_vm_manager_connect_agent_finish (CORRAL_VM_MANAGER (source), res, &error) &&
            corral_task_fail_if (task, error))
                return;
        corral_run_in_thread (wait_mounted, l, NULL, NULL, g_task_get_cancellable (task),
                              on_mounted, task);
}

static void
connect_agent (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);
        Launch *l = g_task_get_task_data (task);

        report (task, CORRAL_LAUNCH_STAGE_CONNECT, -1.0, NULL);
        l->result->agent_client = G_OBJECT (corral_agent_client_new ());
        corral_vm_manager_connect_agent_async (
                self->manager, l->result->vm_name, CORRAL_AGENT_CLIENT (l->result->agent_client),
                CONNECT_TIMEOUT_MS, g_task_get_cancellable (task), on_connected, task);
}

/* After the daemons of a reopened workspace started. */
static void
on_shared (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        connect_agent (task);
}

static void
on_created (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (CorralVmInfo) info = corral_task_create_finish (res, NULL, &error);

        if (corral_task_fail_if (task, error))
                return;
        l->result = g_new0 (CorralLaunchResult, 1);
        l->result->vm_name = g_strdup (corral_vm_info_get_user_name (info));
        l->result->vm_dir = g_strdup (info->vm_dir);
        l->result->accel = g_strdup (info->accel);
        connect_agent (task);
}

static void
on_create_progress (CorralLaunchStage stage, double fraction, const char *detail, gpointer data)
{
        report (data, stage, fraction, detail);
}

/* The same start as `corralctl vm create` (corral-task-start.h), from what the person chose. */
static void
create_vm (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);
        Launch *l = g_task_get_task_data (task);
        g_autoptr (GDateTime) now = g_date_time_new_now_local ();
        /* A removed workspace made again keeps its name: the task record is keyed by it. */
        g_autofree char *name =
                l->vm_name ? g_strdup (l->vm_name) : g_date_time_format (now, "task-%Y%m%d-%H%M%S");
        g_autoptr (CorralEgressPolicy) policy = NULL;
        CorralEgressPreset preset = CORRAL_EGRESS_PRESET_NONE;
        GError *error = NULL;
        const CorralTaskShare share = { l->config->folder, l->config->mode };

        corral_egress_preset_from_string (l->config->network_preset, &preset);
        policy = corral_egress_policy_new (preset);
        for (guint i = 0; l->config->network_allow && l->config->network_allow[i]; i++)
                if (!corral_egress_policy_add_rule (policy, TRUE, l->config->network_allow[i],
                                                    &error) &&
                    corral_task_fail_if (task, error))
                        return;
        const CorralTaskSpec spec = { .name = name,
                                      .image = l->config->image,
                                      .memory_mib = l->config->memory_mib,
                                      .vcpus = l->config->vcpus,
                                      .kept_space_mib = l->config->kept_space_mib,
                                      .shares = &share,
                                      .n_shares = 1,
                                      .policy = policy,
                                      .screen = l->config->computer_use,
                                      .built = l->built,
                                      .pool = l->pool };
        corral_task_create_async (self->manager, &spec, on_create_progress, task,
                                  g_task_get_cancellable (task), on_created, task);
}

/* What a launch does next, once the libvirt connection is open. */
typedef void (*WithManager) (GTask *task);

typedef struct {
        GTask *task;
        WithManager then;
} Opening;

static void
on_manager_opened (GObject *source, GAsyncResult *res, gpointer user_data)
{
        Opening *o = user_data;
        GTask *task = o->task;
        WithManager then = o->then;
        CorralVmLauncher *self = g_task_get_source_object (task);
        GError *error = NULL;
        CorralVmManager *manager = corral_vm_manager_open_finish (res, &error);

        g_free (o);
        if (corral_task_fail_if (task, error))
                return;
        g_set_object (&self->manager, manager);
        g_object_unref (manager);
        if (!self->warm)
                self->warm = corral_warm_workspace_new (manager);
        then (task);
}

/* Calls then (task) with self->manager open (on first use it is opened; a failure to open
 * ends the task with its error). */
static void
with_manager (GTask *task, WithManager then)
{
        CorralVmLauncher *self = g_task_get_source_object (task);
        Opening *o;

        if (self->manager) {
                then (task);
                return;
        }
        o = g_new0 (Opening, 1);
        o->task = task;
        o->then = then;
        corral_vm_manager_open_async (NULL, g_task_get_cancellable (task), on_manager_opened, o);
}

/* Worker thread: the organisation's policy and the folder, checked before anything is built or
 * booted (corral_task_preflight). A damaged policy or a folder the person cannot open would
 * stop the task after the boot; finding that out then would only make the person wait. */
static gpointer
preflight (gpointer data, GCancellable *cancellable, GError **error)
{
        Launch *l = data;
        const CorralTaskShare share = { l->config->folder, l->config->mode };

        return corral_task_preflight (&share, 1, l->config->image, l->config->memory_mib,
                                      l->config->vcpus, error)
                       ? GINT_TO_POINTER (TRUE)
                       : NULL;
}

static void
on_warm (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;

        if (!corral_warm_workspace_wait_finish (CORRAL_WARM_WORKSPACE (source), res, &l->built,
                                                &l->pool, &error) &&
            corral_task_fail_if (task, error))
                return;
        create_vm (task);
}

/* A new task's workspace is the one made ready ahead for these values (corral_launcher_prepare):
 * taken at once when it is, waited for while it boots, begun now when it was not. */
static void
wait_warm (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);
        Launch *l = g_task_get_task_data (task);

        corral_warm_workspace_prepare (self->warm, l->config->image, l->config->memory_mib,
                                       l->config->vcpus);
        corral_warm_workspace_wait_async (self->warm, l->config->image, l->config->memory_mib,
                                          l->config->vcpus, on_create_progress, task,
                                          g_task_get_cancellable (task), on_warm, task);
}

static void
on_preflight (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        with_manager (task, wait_warm);
}

static void
vm_start_async (CorralLauncher *launcher,
                const CorralTaskConfig *config,
                CorralLaunchProgressFunc progress,
                gpointer progress_data,
                GCancellable *cancellable,
                GAsyncReadyCallback callback,
                gpointer user_data)
{
        GTask *task = g_task_new (launcher, cancellable, callback, user_data);
        Launch *l = g_new0 (Launch, 1);

        l->config = corral_task_config_copy (config);
        l->progress = progress;
        l->progress_data = progress_data;
        g_task_set_task_data (task, l, (GDestroyNotify) launch_free);
        report (task, CORRAL_LAUNCH_STAGE_PREPARE, -1.0, NULL);
        corral_run_in_thread (preflight, l, NULL, NULL, cancellable, on_preflight, task);
}

static CorralLaunchResult *
vm_start_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
on_op_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;

        if (corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), res, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

static void
vm_suspend_async (CorralLauncher *launcher,
                  const char *vm_name,
                  GCancellable *cancellable,
                  GAsyncReadyCallback callback,
                  gpointer user_data)
{
        CorralVmLauncher *self = CORRAL_VM_LAUNCHER (launcher);
        GTask *task = g_task_new (launcher, cancellable, callback, user_data);

        if (!self->manager) {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED,
                                         "no workspace was started");
                g_object_unref (task);
                return;
        }
        corral_vm_manager_op_async (self->manager, vm_name, CORRAL_VM_OP_PAUSE, cancellable,
                                    on_op_done, task);
}

static gboolean
vm_suspend_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static const char *
state_words (CorralVmState state)
{
        switch (state) {
        case CORRAL_VM_STATE_RUNNING:
                return _ ("Running");
        case CORRAL_VM_STATE_PAUSED:
                return _ ("Paused");
        case CORRAL_VM_STATE_SAVED:
                return _ ("Saved");
        case CORRAL_VM_STATE_CRASHED:
                return _ ("Stopped unexpectedly");
        case CORRAL_VM_STATE_SHUTOFF:
        case CORRAL_VM_STATE_OTHER:
        default:
                return _ ("Off");
        }
}

static void
on_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;
        g_autoptr (GPtrArray) vms =
                corral_vm_manager_list_finish (CORRAL_VM_MANAGER (source), res, &error);
        GPtrArray *out;

        if (!vms) {
                g_task_return_error (task, error);
                return;
        }
        out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_session_info_free);
        for (guint i = 0; i < vms->len; i++) {
                CorralVmInfo *vm = vms->pdata[i];
                CorralSessionInfo *info = g_new0 (CorralSessionInfo, 1);

                info->vm_name = g_strdup (corral_vm_info_get_user_name (vm));
                info->state = g_strdup (state_words (vm->state));
                info->vm_dir = g_strdup (vm->vm_dir);
                g_ptr_array_add (out, info);
        }
        g_task_return_pointer (task, out, (GDestroyNotify) g_ptr_array_unref);
}

static void
list_vms (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);

        corral_vm_manager_list_async (self->manager, g_task_get_cancellable (task), on_listed,
                                      task);
}

static void
vm_list_async (CorralLauncher *launcher,
               GCancellable *cancellable,
               GAsyncReadyCallback callback,
               gpointer user_data)
{
        GTask *task = g_task_new (launcher, cancellable, callback, user_data);

        with_manager (task, list_vms);
}

static GPtrArray *
vm_list_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Reopening ----------------------------------------------------------------------------------- */

/* Worker thread: the folder and the network policy are already in the VM folder; only the two
 * per-VM daemons may have stopped with the app. */
static gpointer
ensure_daemons (gpointer data, GCancellable *cancellable, GError **error)
{
        Launch *l = data;

        if (!corral_task_start_services (l->result->vm_dir, 0, NULL, 0, NULL, NULL, error))
                return NULL;
        return GINT_TO_POINTER (TRUE);
}

static void
on_running (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;

        if (res && !corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), res, &error) &&
            corral_task_fail_if (task, error))
                return;
        report (task, CORRAL_LAUNCH_STAGE_SHARE, -1.0, NULL);
        corral_run_in_thread (ensure_daemons, l, NULL, NULL, g_task_get_cancellable (task),
                              on_shared, task);
}

static void
on_recreate_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        create_vm (task);
}

static void
on_looked_up (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        CorralVmLauncher *self = g_task_get_source_object (task);
        Launch *l = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (CorralVmInfo) info =
                corral_vm_manager_lookup_finish (CORRAL_VM_MANAGER (source), res, &error);

        if (g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM) && l->config) {
                /* Removed (vm rm, gc): the same folder, mode and network again, in a new VM. */
                g_clear_error (&error);
                report (task, CORRAL_LAUNCH_STAGE_PREPARE, -1.0,
                        _ ("Its workspace was removed; setting up a new one"));
                corral_run_in_thread (preflight, l, NULL, NULL, g_task_get_cancellable (task),
                                      on_recreate_checked, task);
                return;
        }
        if (corral_task_fail_if (task, error))
                return;
        if (!info->vm_dir) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                                         _ ("The workspace %s has no folder any more"),
                                         corral_vm_info_get_user_name (info));
                g_object_unref (task);
                return;
        }
        l->result = g_new0 (CorralLaunchResult, 1);
        l->result->vm_name = g_strdup (corral_vm_info_get_user_name (info));
        l->result->vm_dir = g_strdup (info->vm_dir);
        l->result->accel = g_strdup (info->accel);
        report (task, CORRAL_LAUNCH_STAGE_IMAGE, 1.0, NULL);
        report (task, CORRAL_LAUNCH_STAGE_BOOT, -1.0, NULL);
        switch (info->state) {
        case CORRAL_VM_STATE_RUNNING:
                on_running (NULL, NULL, task);
                break;
        case CORRAL_VM_STATE_PAUSED:
                corral_vm_manager_op_async (self->manager, info->name, CORRAL_VM_OP_RESUME,
                                            g_task_get_cancellable (task), on_running, task);
                break;
        default:
                /* Off, saved (restored from its memory image) or crashed: booted again. */
                corral_vm_manager_op_async (self->manager, info->name, CORRAL_VM_OP_START,
                                            g_task_get_cancellable (task), on_running, task);
                break;
        }
}

static void
look_up_vm (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);

        corral_vm_manager_lookup_async (self->manager,
                                        ((Launch *) g_task_get_task_data (task))->vm_name,
                                        g_task_get_cancellable (task), on_looked_up, task);
}

static void
vm_resume_async (CorralLauncher *launcher,
                 const char *vm_name,
                 const CorralTaskConfig *recreate,
                 CorralLaunchProgressFunc progress,
                 gpointer progress_data,
                 GCancellable *cancellable,
                 GAsyncReadyCallback callback,
                 gpointer user_data)
{
        GTask *task = g_task_new (launcher, cancellable, callback, user_data);
        Launch *l = g_new0 (Launch, 1);

        l->vm_name = g_strdup (vm_name);
        l->config = recreate ? corral_task_config_copy (recreate) : NULL;
        l->progress = progress;
        l->progress_data = progress_data;
        g_task_set_task_data (task, l, (GDestroyNotify) launch_free);
        report (task, CORRAL_LAUNCH_STAGE_PREPARE, -1.0, NULL);
        with_manager (task, look_up_vm);
}

static CorralLaunchResult *
vm_resume_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* Removing ------------------------------------------------------------------------------------ */

static void
on_removed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;

        if (corral_vm_manager_op_finish (CORRAL_VM_MANAGER (source), res, &error) ||
            g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM)) {
                g_clear_error (&error);
                g_task_return_boolean (task, TRUE);
                return;
        }
        g_task_return_error (task, error);
}

static void
remove_vm (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);

        corral_vm_manager_op_async (self->manager, g_task_get_task_data (task), CORRAL_VM_OP_REMOVE,
                                    g_task_get_cancellable (task), on_removed, task);
}

static void
vm_remove_async (CorralLauncher *launcher,
                 const char *vm_name,
                 GCancellable *cancellable,
                 GAsyncReadyCallback callback,
                 gpointer user_data)
{
        GTask *task = g_task_new (launcher, cancellable, callback, user_data);

        g_task_set_task_data (task, g_strdup (vm_name), g_free);
        with_manager (task, remove_vm);
}

static gboolean
vm_remove_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Making ready ahead ---------------------------------------------------------------------- */

static void
prepare_warm (GTask *task)
{
        CorralVmLauncher *self = g_task_get_source_object (task);
        const CorralTaskConfig *config = g_task_get_task_data (task);

        corral_warm_workspace_prepare (self->warm, config->image, config->memory_mib,
                                       config->vcpus);
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

/* Worker thread: a damaged policy stops every start (corral_task_preflight); nothing is made
 * ready for one that cannot happen. */
static gpointer
check_policy (gpointer data, GCancellable *cancellable, GError **error)
{
        const CorralTaskConfig *config = data;

        return corral_task_check_workspace (config->image, config->memory_mib, config->vcpus, error)
                       ? GINT_TO_POINTER (TRUE)
                       : NULL;
}

static void
on_policy_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (corral_task_fail_if (task, error))
                return;
        with_manager (task, prepare_warm);
}

static void
vm_prepare (CorralLauncher *launcher, const CorralTaskConfig *config)
{
        /* No one waits: a failure (a damaged policy, libvirt cannot be opened) is met again,
         * and shown, by the start. */
        GTask *task = g_task_new (launcher, NULL, NULL, NULL);

        g_task_set_task_data (task, corral_task_config_copy (config),
                              (GDestroyNotify) corral_task_config_free);
        corral_run_in_thread (check_policy, corral_task_config_copy (config),
                              (GDestroyNotify) corral_task_config_free, NULL, NULL,
                              on_policy_checked, task);
}

static void
on_warm_released (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;

        if (corral_warm_workspace_release_finish (CORRAL_WARM_WORKSPACE (source), res, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

static void
vm_release_async (CorralLauncher *launcher, GAsyncReadyCallback callback, gpointer user_data)
{
        CorralVmLauncher *self = CORRAL_VM_LAUNCHER (launcher);
        GTask *task = g_task_new (launcher, NULL, callback, user_data);

        if (!self->warm) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        corral_warm_workspace_release_async (self->warm, NULL, on_warm_released, task);
}

static gboolean
vm_release_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
corral_vm_launcher_iface_init (CorralLauncherInterface *iface)
{
        iface->start_async = vm_start_async;
        iface->start_finish = vm_start_finish;
        iface->suspend_async = vm_suspend_async;
        iface->suspend_finish = vm_suspend_finish;
        iface->list_async = vm_list_async;
        iface->list_finish = vm_list_finish;
        iface->resume_async = vm_resume_async;
        iface->resume_finish = vm_resume_finish;
        iface->remove_async = vm_remove_async;
        iface->remove_finish = vm_remove_finish;
        iface->prepare = vm_prepare;
        iface->release_async = vm_release_async;
        iface->release_finish = vm_release_finish;
}

static void
corral_vm_launcher_dispose (GObject *object)
{
        g_clear_object (&CORRAL_VM_LAUNCHER (object)->warm);
        g_clear_object (&CORRAL_VM_LAUNCHER (object)->manager);
        G_OBJECT_CLASS (corral_vm_launcher_parent_class)->dispose (object);
}

static void
corral_vm_launcher_class_init (CorralVmLauncherClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_vm_launcher_dispose;
}

static void
corral_vm_launcher_init (CorralVmLauncher *self)
{
}

void
corral_vm_launcher_init_process (void)
{
        corral_vm_manager_quiet_libvirt_logs ();
}

CorralVmLauncher *
corral_vm_launcher_new (void)
{
        return g_object_new (CORRAL_TYPE_VM_LAUNCHER, NULL);
}

CorralVmManager *
corral_vm_launcher_get_manager (CorralVmLauncher *self)
{
        g_return_val_if_fail (CORRAL_IS_VM_LAUNCHER (self), NULL);
        return self->manager;
}
