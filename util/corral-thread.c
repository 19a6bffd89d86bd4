/* corral-thread.c — corral_run_in_thread: one GTask per call.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-thread.h"

typedef struct {
        CorralThreadFunc func;
        gpointer data;
        GDestroyNotify data_free;
        GDestroyNotify result_free;
} ThreadCall;

static void
thread_call_free (ThreadCall *call)
{
        if (call->data_free && call->data)
                call->data_free (call->data);
        g_free (call);
}

static void
thread_call_run (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
        ThreadCall *call = task_data;
        GError *error = NULL;
        gpointer ret = call->func (call->data, cancellable, &error);

        if (error)
                g_task_return_error (task, error);
        else
                g_task_return_pointer (task, ret, call->result_free);
}

void
corral_run_in_thread (CorralThreadFunc func,
                      gpointer data,
                      GDestroyNotify data_free,
                      GDestroyNotify result_free,
                      GCancellable *cancellable,
                      GAsyncReadyCallback callback,
                      gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
        ThreadCall *call = g_new0 (ThreadCall, 1);

        call->func = func;
        call->data = data;
        call->data_free = data_free;
        call->result_free = result_free;
        g_task_set_source_tag (task, corral_run_in_thread);
        g_task_set_task_data (task, call, (GDestroyNotify) thread_call_free);
        g_task_run_in_thread (task, thread_call_run);
}

gpointer
corral_run_in_thread_finish (GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

void
corral_main_context_post (GMainContext *context,
                          GSourceFunc func,
                          gpointer data,
                          GDestroyNotify notify)
{
        GSource *source = g_idle_source_new ();

        g_source_set_priority (source, G_PRIORITY_DEFAULT);
        g_source_set_callback (source, func, data, notify);
        g_source_set_static_name (source, "corral-main-context-post");
        g_source_attach (source, context);
        g_source_unref (source);
}
