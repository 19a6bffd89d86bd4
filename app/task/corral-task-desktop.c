/* corral-task-desktop.c — see corral-task-desktop.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-task-desktop.h"

#include <glib/gi18n.h>

#include "corral-agent-ops.h"

/* How often the guest's marker is looked for. */
#define POLL_MS 500

typedef struct {
        CorralAgentClient *client;
        void (*waiting) (gpointer data);
        gpointer waiting_data;
        gint64 deadline;
        gboolean had_desktop; /* the image has one: now waiting for it to be up */
} Wait;

static void
wait_free (Wait *w)
{
        g_clear_object (&w->client);
        g_free (w);
}

static void stat_next (GTask *task, const char *path);

static gboolean
poll_again (gpointer data)
{
        stat_next (data, CORRAL_TASK_DESKTOP_READY);
        return G_SOURCE_REMOVE;
}

static void
on_stat (GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Wait *w = g_task_get_task_data (task);
        GError *error = NULL;
        g_autoptr (CorralFileStat) st =
                corral_agent_client_stat_finish (CORRAL_AGENT_CLIENT (source), res, &error);

        if (!st && !g_error_matches (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND)) {
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        g_clear_error (&error);
        if (!w->had_desktop) {
                /* The first question: is there a desktop at all? */
                if (!st) {
                        g_task_return_boolean (task, TRUE);
                        g_object_unref (task);
                        return;
                }
                w->had_desktop = TRUE;
                if (w->waiting)
                        w->waiting (w->waiting_data);
                stat_next (task, CORRAL_TASK_DESKTOP_READY);
                return;
        }
        if (st) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        if (g_get_monotonic_time () > w->deadline) {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                         _ ("The desktop did not start within %d seconds (its "
                                            "log in the VM: /run/corral/desktop.log)"),
                                         CORRAL_TASK_DESKTOP_TIMEOUT_S);
                g_object_unref (task);
                return;
        }
        g_timeout_add (POLL_MS, poll_again, task);
}

static void
stat_next (GTask *task, const char *path)
{
        Wait *w = g_task_get_task_data (task);

        if (g_task_return_error_if_cancelled (task)) {
                g_object_unref (task);
                return;
        }
        corral_agent_client_stat_async (w->client, path, FALSE, g_task_get_cancellable (task),
                                        on_stat, task);
}

void
corral_task_wait_desktop_async (CorralAgentClient *client,
                                void (*waiting) (gpointer data),
                                gpointer waiting_data,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        GTask *task = g_task_new (NULL, cancellable, callback, user_data);
        Wait *w = g_new0 (Wait, 1);

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (client));
        g_task_set_source_tag (task, corral_task_wait_desktop_async);
        w->client = g_object_ref (client);
        w->waiting = waiting;
        w->waiting_data = waiting_data;
        w->deadline = g_get_monotonic_time () + CORRAL_TASK_DESKTOP_TIMEOUT_S * G_USEC_PER_SEC;
        g_task_set_task_data (task, w, (GDestroyNotify) wait_free);
        stat_next (task, CORRAL_TASK_DESKTOP_SERVICE);
}

gboolean
corral_task_wait_desktop_finish (GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}
