/* corral-launcher.c — the interface the window starts workspaces through.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-launcher.h"

#include <glib/gi18n.h>

#include "corral-image.h"
#include "corral-vm-manager.h"
#include "corral-task-private.h"
#include "corral-task-record.h"
#include "corral-task-start.h"
#include "corral-thread.h"
#include "assistant-store.h"
#include "corral-policy.h"

CorralTaskConfig *
corral_task_config_copy (const CorralTaskConfig *config)
{
        CorralTaskConfig *copy = g_new0 (CorralTaskConfig, 1);

        copy->folder = g_strdup (config->folder);
        copy->mode = config->mode;
        copy->image = g_strdup (config->image);
        copy->memory_mib = config->memory_mib;
        copy->kept_space_mib = config->kept_space_mib;
        copy->vcpus = config->vcpus;
        copy->network_preset = g_strdup (config->network_preset);
        copy->network_allow = g_strdupv (config->network_allow);
        copy->unconfined_commands = config->unconfined_commands;
        copy->computer_use = config->computer_use;
        return copy;
}

void
corral_task_config_free (CorralTaskConfig *config)
{
        if (!config)
                return;
        g_free (config->folder);
        g_free (config->image);
        g_free (config->network_preset);
        g_strfreev (config->network_allow);
        g_free (config);
}

void
corral_launch_result_free (CorralLaunchResult *result)
{
        if (!result)
                return;
        g_free (result->vm_name);
        g_free (result->vm_dir);
        g_free (result->accel);
        g_clear_object (&result->agent_client);
        g_free (result->record_error);
        g_free (result);
}

void
corral_session_info_free (CorralSessionInfo *info)
{
        if (!info)
                return;
        g_free (info->vm_name);
        g_free (info->state);
        g_free (info->vm_dir);
        g_free (info);
}

G_DEFINE_INTERFACE (CorralLauncher, corral_launcher, G_TYPE_OBJECT)

static void
corral_launcher_default_init (CorralLauncherInterface *iface)
{
}

typedef struct {
        CorralTaskConfig *config;
        CorralLaunchResult *result;
} Start;

static void
start_free (Start *st)
{
        corral_task_config_free (st->config);
        corral_launch_result_free (st->result);
        g_free (st);
}

/* Worker thread: the task's record, so it can be reopened even after its VM is removed. */
static gpointer
save_record (gpointer data, GCancellable *cancellable, GError **error)
{
        Start *st = data;
        g_autoptr (CorralTaskRecord) record = g_new0 (CorralTaskRecord, 1);

        record->vm_name = g_strdup (st->result->vm_name);
        record->config = corral_task_config_copy (st->config);
        record->created = g_get_real_time () / G_USEC_PER_SEC;
        return corral_task_record_save (record, error) ? GINT_TO_POINTER (TRUE) : NULL;
}

static void
on_record_saved (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        Start *st = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;

        /* Only reopening the task later depends on it: the task itself goes on, and the
         * caller says what is missing. */
        if (!corral_run_in_thread_finish (res, &error)) {
                g_message ("Could not record the task: %s", error->message);
                st->result->record_error = g_strdup (error->message);
        }
        g_task_return_pointer (task, g_steal_pointer (&st->result),
                               (GDestroyNotify) corral_launch_result_free);
}

static void
on_impl_started (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Start *st = g_task_get_task_data (task);
        GError *error = NULL;

        st->result = CORRAL_LAUNCHER_GET_IFACE (source)->start_finish (CORRAL_LAUNCHER (source),
                                                                       res, &error);
        if (corral_task_fail_if (task, error))
                return;
        /* Saved before the start is over: the assistant adds its session id to it next. */
        corral_run_in_thread (save_record, st, NULL, NULL, NULL, on_record_saved, task);
}

void
corral_launcher_start_async (CorralLauncher *self,
                             const CorralTaskConfig *config,
                             CorralLaunchProgressFunc progress,
                             gpointer progress_data,
                             GCancellable *cancellable,
                             GAsyncReadyCallback callback,
                             gpointer user_data)
{
        GTask *task;
        Start *st;

        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        g_return_if_fail (config != NULL && config->folder != NULL);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_launcher_start_async);
        st = g_new0 (Start, 1);
        st->config = corral_task_config_copy (config);
        g_task_set_task_data (task, st, (GDestroyNotify) start_free);
        CORRAL_LAUNCHER_GET_IFACE (self)->start_async (self, config, progress, progress_data,
                                                       cancellable, on_impl_started, task);
}

CorralLaunchResult *
corral_launcher_start_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_LAUNCHER (self), NULL);
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

void
corral_launcher_suspend_async (CorralLauncher *self,
                               const char *vm_name,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        CORRAL_LAUNCHER_GET_IFACE (self)->suspend_async (self, vm_name, cancellable, callback,
                                                         user_data);
}

gboolean
corral_launcher_suspend_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_LAUNCHER (self), FALSE);
        return CORRAL_LAUNCHER_GET_IFACE (self)->suspend_finish (self, result, error);
}

void
corral_launcher_list_async (CorralLauncher *self,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        CORRAL_LAUNCHER_GET_IFACE (self)->list_async (self, cancellable, callback, user_data);
}

GPtrArray *
corral_launcher_list_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_LAUNCHER (self), NULL);
        return CORRAL_LAUNCHER_GET_IFACE (self)->list_finish (self, result, error);
}

void
corral_launcher_resume_async (CorralLauncher *self,
                              const char *vm_name,
                              const CorralTaskConfig *recreate,
                              CorralLaunchProgressFunc progress,
                              gpointer progress_data,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        g_return_if_fail (vm_name != NULL);
        CORRAL_LAUNCHER_GET_IFACE (self)->resume_async (
                self, vm_name, recreate, progress, progress_data, cancellable, callback, user_data);
}

CorralLaunchResult *
corral_launcher_resume_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_LAUNCHER (self), NULL);
        return CORRAL_LAUNCHER_GET_IFACE (self)->resume_finish (self, result, error);
}

void
corral_launch_error_explain (const GError *error, char **ret_title, char **ret_hint)
{
        const char *title = _ ("The Workspace Could Not Start");
        const char *hint = NULL;

        if (g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_UNREACHABLE)) {
                title = _ ("Virtual Machines Are Not Available");
                hint = _ ("Install libvirt and QEMU: sudo apt install libvirt-daemon "
                          "libvirt-daemon-driver-qemu qemu-system-x86");
        } else if (g_error_matches (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_BUILD)) {
                title = _ ("The Workspace Image Could Not Be Built");
                hint = _ ("Install the image tools: sudo apt install mmdebstrap qemu-utils cpio");
        } else if (g_error_matches (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_UNTRUSTED)) {
                /* The message names the image and the organisation's rule. */
                title = _ ("Your Organisation Does Not Trust This Image");
                hint = _ ("Ask your IT department for the image they signed, and import it with "
                          "corralctl image import.");
        } else if (g_error_matches (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT)) {
                /* Only an organisation's image: Corral builds its own. */
                title = _ ("The Workspace Image Is Not on This Computer");
                hint = _ ("Ask your IT department for it, and import it with corralctl image "
                          "import.");
        } else if (g_error_matches (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED)) {
                title = _ ("The Workspace Image Was Changed");
                hint = _ ("Remove it in Preferences → Workspace; Corral builds a fresh one (or "
                          "import your organisation’s again).");
        } else if (g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM)) {
                title = _ ("This Task’s Workspace Is Gone");
                hint = _ ("Its workspace was removed and Corral has no record of how it was "
                          "set up; start a new task with the same folder.");
        } else if (g_error_matches (error, CORRAL_TASK_ERROR, CORRAL_TASK_ERROR_FOLDER)) {
                /* The message names the folder and says what to do. */
                title = _ ("This Folder Cannot Be Shared");
        } else if (g_error_matches (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED)) {
                /* The message names the rule, "set by your organisation". */
                title = _ ("Your Organisation Does Not Allow This");
        } else if (error->domain == CORRAL_POLICY_ERROR) {
                /* The message names the file, the line and says to ask IT. */
                title = _ ("Your Organisation’s Policy Needs Fixing");
        } else if (g_error_matches (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_TIMEOUT)) {
                title = _ ("The Workspace Did Not Answer");
                hint = _ ("Without hardware virtualisation (KVM) starting is slow; try again.");
        }
        *ret_title = g_strdup (title);
        /* Otherwise the lower layers' messages already say what to install. */
        *ret_hint = g_strdup (hint ? hint : error->message);
}

/* Tasks ------------------------------------------------------------------------------------- */

void
corral_task_info_free (CorralTaskInfo *info)
{
        if (!info)
                return;
        g_free (info->vm_name);
        g_free (info->title);
        g_free (info->folder);
        g_free (info->state);
        g_free (info);
}

static gpointer
list_records (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_task_record_list ();
}

static void
on_tasks_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GPtrArray *records = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) vms = CORRAL_LAUNCHER_GET_IFACE (source)->list_finish (
                CORRAL_LAUNCHER (source), res, &error);
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_task_info_free);

        /* The records are the tasks; the workspaces only say how each one is. */
        if (!vms && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                g_message ("Could not list the workspaces: %s", error->message);
        for (guint i = 0; i < records->len; i++) {
                const CorralTaskRecord *record = records->pdata[i];
                CorralTaskInfo *info = g_new0 (CorralTaskInfo, 1);

                info->vm_name = g_strdup (record->vm_name);
                info->named = record->title != NULL;
                info->title = record->title ? g_strdup (record->title)
                                            : g_path_get_basename (record->config->folder);
                info->folder = g_strdup (record->config->folder);
                info->mode = record->config->mode;
                info->created = record->created;
                for (guint j = 0; vms && j < vms->len; j++) {
                        const CorralSessionInfo *vm = vms->pdata[j];

                        if (g_str_equal (vm->vm_name, record->vm_name))
                                info->state = g_strdup (vm->state);
                }
                if (!info->state)
                        info->state = g_strdup (vms ? _ ("Workspace removed, set up again when "
                                                         "opened")
                                                    : _ ("State unknown"));
                g_ptr_array_add (out, info);
        }
        g_task_return_pointer (task, out, (GDestroyNotify) g_ptr_array_unref);
}

static void
on_records_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;
        GPtrArray *records = corral_run_in_thread_finish (res, &error);

        if (corral_task_fail_if (task, error))
                return;
        /* No task, nothing to ask libvirt: a window that opens on a new task does not open it. */
        if (records->len == 0) {
                g_ptr_array_unref (records);
                g_task_return_pointer (
                        task,
                        g_ptr_array_new_with_free_func ((GDestroyNotify) corral_task_info_free),
                        (GDestroyNotify) g_ptr_array_unref);
                g_object_unref (task);
                return;
        }
        g_task_set_task_data (task, records, (GDestroyNotify) g_ptr_array_unref);
        CORRAL_LAUNCHER_GET_IFACE (g_task_get_source_object (task))
                ->list_async (g_task_get_source_object (task), g_task_get_cancellable (task),
                              on_tasks_listed, task);
}

void
corral_launcher_list_tasks_async (CorralLauncher *self,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        GTask *task;

        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_launcher_list_tasks_async);
        corral_run_in_thread (list_records, NULL, NULL, (GDestroyNotify) g_ptr_array_unref,
                              cancellable, on_records_listed, task);
}

GPtrArray *
corral_launcher_list_tasks_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

typedef struct {
        char *vm_name;
        char *session_id; /* from the record, once loaded */
} Removal;

static void
removal_free (Removal *r)
{
        g_free (r->vm_name);
        g_free (r->session_id);
        g_free (r);
}

/* Worker thread: the conversation, then the record (last: while it is there, the task is
 * listed and can be removed again). */
static gpointer
forget_task (gpointer data, GCancellable *cancellable, GError **error)
{
        Removal *r = data;

        if (r->session_id && !corral_assistant_store_remove (r->session_id, error))
                return NULL;
        return corral_task_record_remove (r->vm_name, error) ? GINT_TO_POINTER (TRUE) : NULL;
}

static void
on_task_forgotten (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        GError *error = NULL;

        if (corral_run_in_thread_finish (res, &error))
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

static void
on_workspace_removed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;

        CORRAL_LAUNCHER_GET_IFACE (source)->remove_finish (CORRAL_LAUNCHER (source), res, &error);
        if (corral_task_fail_if (task, error))
                return;
        corral_run_in_thread (forget_task, g_task_get_task_data (task), NULL, NULL, NULL,
                              on_task_forgotten, task);
}

/* Worker thread: which conversation belongs to the task. */
static gpointer
find_session (gpointer data, GCancellable *cancellable, GError **error)
{
        Removal *r = data;
        g_autoptr (CorralTaskRecord) record = corral_task_record_load (r->vm_name, NULL);

        if (record)
                r->session_id = g_strdup (record->session_id);
        return GINT_TO_POINTER (TRUE);
}

static void
on_session_found (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Removal *r = g_task_get_task_data (task);
        CorralLauncher *self = g_task_get_source_object (task);

        corral_run_in_thread_finish (res, NULL);
        CORRAL_LAUNCHER_GET_IFACE (self)->remove_async (
                self, r->vm_name, g_task_get_cancellable (task), on_workspace_removed, task);
}

void
corral_launcher_remove_task_async (CorralLauncher *self,
                                   const char *vm_name,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        GTask *task;
        Removal *r;

        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        g_return_if_fail (vm_name != NULL);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_launcher_remove_task_async);
        r = g_new0 (Removal, 1);
        r->vm_name = g_strdup (vm_name);
        g_task_set_task_data (task, r, (GDestroyNotify) removal_free);
        corral_run_in_thread (find_session, r, NULL, NULL, NULL, on_session_found, task);
}

gboolean
corral_launcher_remove_task_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

void
corral_launcher_prepare (CorralLauncher *self, const CorralTaskConfig *config)
{
        CorralLauncherInterface *iface;

        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        g_return_if_fail (config != NULL);
        iface = CORRAL_LAUNCHER_GET_IFACE (self);
        if (iface->prepare)
                iface->prepare (self, config);
}

void
corral_launcher_release_async (CorralLauncher *self,
                               GAsyncReadyCallback callback,
                               gpointer user_data)
{
        CorralLauncherInterface *iface;
        GTask *task;

        g_return_if_fail (CORRAL_IS_LAUNCHER (self));
        iface = CORRAL_LAUNCHER_GET_IFACE (self);
        if (iface->release_async) {
                iface->release_async (self, callback, user_data);
                return;
        }
        task = g_task_new (self, NULL, callback, user_data);
        g_task_set_source_tag (task, corral_launcher_release_async);
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
}

gboolean
corral_launcher_release_finish (CorralLauncher *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_LAUNCHER (self), FALSE);
        if (g_task_is_valid (result, self) &&
            g_task_get_source_tag (G_TASK (result)) == corral_launcher_release_async)
                return g_task_propagate_boolean (G_TASK (result), error);
        return CORRAL_LAUNCHER_GET_IFACE (self)->release_finish (self, result, error);
}
