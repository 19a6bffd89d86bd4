/* test-launcher.c — see test-launcher.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-launcher.h"

#include <glib/gstdio.h>

#include "corral-shares.h"
#include "corral-vm-manager.h"

static void test_launcher_iface_init (CorralLauncherInterface *iface);
G_DEFINE_FINAL_TYPE_WITH_CODE (TestLauncher,
                               test_launcher,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (CORRAL_TYPE_LAUNCHER,
                                                      test_launcher_iface_init))

static void
tl_start_async (CorralLauncher *launcher,
                const CorralTaskConfig *config,
                CorralLaunchProgressFunc progress,
                gpointer progress_data,
                GCancellable *cancellable,
                GAsyncReadyCallback callback,
                gpointer user_data)
{
        TestLauncher *self = TEST_LAUNCHER (launcher);

        g_assert_null (self->task);
        self->task = g_task_new (launcher, cancellable, callback, user_data);
        self->progress = progress;
        self->progress_data = progress_data;
        g_task_set_task_data (self->task, corral_task_config_copy (config),
                              (GDestroyNotify) corral_task_config_free);
        progress (CORRAL_LAUNCH_STAGE_PREPARE, -1.0, NULL, progress_data);
}

static CorralLaunchResult *
tl_start_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
tl_suspend_async (CorralLauncher *launcher,
                  const char *vm_name,
                  GCancellable *cancellable,
                  GAsyncReadyCallback callback,
                  gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (launcher, cancellable, callback, user_data);

        TEST_LAUNCHER (launcher)->suspended++;
        g_task_return_boolean (task, TRUE);
}

static gboolean
tl_suspend_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
tl_release_async (CorralLauncher *launcher, GAsyncReadyCallback callback, gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (launcher, NULL, callback, user_data);

        TEST_LAUNCHER (launcher)->released++;
        g_task_return_boolean (task, TRUE);
}

static gboolean
tl_release_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
tl_list_async (CorralLauncher *launcher,
               GCancellable *cancellable,
               GAsyncReadyCallback callback,
               gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (launcher, cancellable, callback, user_data);
        GPtrArray *list =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_session_info_free);
        CorralSessionInfo *info = g_new0 (CorralSessionInfo, 1);

        g_autofree char *shares =
                g_build_filename (TEST_LAUNCHER (launcher)->vm_dir, "shares.json", NULL);

        info->vm_name = g_strdup ("task-20250101-090000");
        info->state = g_strdup ("Paused");
        g_ptr_array_add (list, info);
        /* The task started earlier (in this or an earlier window), as libvirt keeps it. */
        if (g_file_test (shares, G_FILE_TEST_EXISTS)) {
                info = g_new0 (CorralSessionInfo, 1);
                info->vm_name = g_strdup ("task-test");
                info->state = g_strdup ("Paused");
                info->vm_dir = g_strdup (TEST_LAUNCHER (launcher)->vm_dir);
                g_ptr_array_add (list, info);
        }
        g_task_return_pointer (task, list, (GDestroyNotify) g_ptr_array_unref);
}

static GPtrArray *
tl_list_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
tl_resume_async (CorralLauncher *launcher,
                 const char *vm_name,
                 const CorralTaskConfig *recreate,
                 CorralLaunchProgressFunc progress,
                 gpointer progress_data,
                 GCancellable *cancellable,
                 GAsyncReadyCallback callback,
                 gpointer user_data)
{
        TestLauncher *self = TEST_LAUNCHER (launcher);

        g_assert_null (self->task);
        self->task = g_task_new (launcher, cancellable, callback, user_data);
        self->progress = progress;
        self->progress_data = progress_data;
        self->resuming = TRUE;
        if (recreate)
                g_task_set_task_data (self->task, corral_task_config_copy (recreate),
                                      (GDestroyNotify) corral_task_config_free);
        g_free (self->resumed);
        self->resumed = g_strdup (vm_name);
        progress (CORRAL_LAUNCH_STAGE_PREPARE, -1.0, NULL, progress_data);
}

/* The workspace goes as the real one does: "task-test" loses its folder's shares. */
static void
tl_remove_async (CorralLauncher *launcher,
                 const char *vm_name,
                 GCancellable *cancellable,
                 GAsyncReadyCallback callback,
                 gpointer user_data)
{
        TestLauncher *self = TEST_LAUNCHER (launcher);
        g_autoptr (GTask) task = g_task_new (launcher, cancellable, callback, user_data);

        g_free (self->removed);
        self->removed = g_strdup (vm_name);
        if (g_str_equal (vm_name, "task-test")) {
                g_autofree char *shares = g_build_filename (self->vm_dir, "shares.json", NULL);

                g_unlink (shares);
        }
        g_task_return_boolean (task, TRUE);
}

static gboolean
tl_remove_finish (CorralLauncher *launcher, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
test_launcher_iface_init (CorralLauncherInterface *iface)
{
        iface->start_async = tl_start_async;
        iface->start_finish = tl_start_finish;
        iface->suspend_async = tl_suspend_async;
        iface->suspend_finish = tl_suspend_finish;
        iface->list_async = tl_list_async;
        iface->list_finish = tl_list_finish;
        iface->resume_async = tl_resume_async;
        iface->resume_finish = tl_start_finish;
        iface->remove_async = tl_remove_async;
        iface->remove_finish = tl_remove_finish;
        iface->release_async = tl_release_async;
        iface->release_finish = tl_release_finish;
}

static void
test_launcher_finalize (GObject *object)
{
        TestLauncher *self = TEST_LAUNCHER (object);

        g_clear_object (&self->task);
        g_free (self->vm_dir);
        g_free (self->resumed);
        g_free (self->removed);
        G_OBJECT_CLASS (test_launcher_parent_class)->finalize (object);
}

static void
test_launcher_class_init (TestLauncherClass *klass)
{
        G_OBJECT_CLASS (klass)->finalize = test_launcher_finalize;
}

static void
test_launcher_init (TestLauncher *self)
{
}

void
test_launcher_finish (TestLauncher *self)
{
        g_autoptr (GTask) task = g_steal_pointer (&self->task);
        CorralTaskConfig *config = g_task_get_task_data (task);
        CorralLaunchResult *result;
        g_autoptr (GError) error = NULL;
        gboolean resuming = self->resuming;
        g_autofree char *shares = g_build_filename (self->vm_dir, "shares.json", NULL);

        self->resuming = FALSE;
        self->recreated = FALSE;
        if (resuming && !g_file_test (shares, G_FILE_TEST_EXISTS)) {
                if (!config) {
                        g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM,
                                                 "no such workspace");
                        return;
                }
                self->recreated = TRUE;
                resuming = FALSE;
        }
        if (self->fail) {
                g_task_return_new_error (task, CORRAL_VM_ERROR, CORRAL_VM_ERROR_UNREACHABLE,
                                         "Cannot open qemu:///session: libvirt is not installed");
                return;
        }
        if (!resuming) {
                self->unconfined_commands = config->unconfined_commands;
                g_assert_true (corral_shares_add (self->vm_dir, config->folder, config->mode, NULL,
                                                  NULL, NULL, &error));
        }
        g_assert_no_error (error);
        result = g_new0 (CorralLaunchResult, 1);
        result->vm_name = g_strdup ("task-test");
        result->vm_dir = g_strdup (self->vm_dir);
        result->accel = g_strdup ("tcg");
        /* A client that never connected: the app tries its assistant with it, and the model's
         * key is looked up first. */
        if (self->with_client)
                result->agent_client = G_OBJECT (corral_agent_client_new ());
        g_task_return_pointer (task, result, (GDestroyNotify) corral_launch_result_free);
}
