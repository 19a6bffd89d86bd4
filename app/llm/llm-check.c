/* llm-check.c — checking a key with one cheap request: the provider's list of models (one
 * entry), which needs the key and costs nothing.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-http.h"
#include "llm-provider-private.h"
#include "llm-error.h"

#include <glib/gi18n.h>

/* A models reply is small; more is not read. */
#define CHECK_MAX_BODY 65536
#define CHECK_TIMEOUT_S 20

typedef struct {
        SoupMessage *msg;
        GCancellable *cancellable; /* the request's: the caller's, or the timer, cancels it */
        gulong caller_id;
        guint timer_id;
        gboolean timed_out;
} Check;

static void
check_free (Check *c)
{
        g_clear_handle_id (&c->timer_id, g_source_remove);
        g_object_unref (c->msg);
        g_object_unref (c->cancellable);
        g_free (c);
}

static gboolean
on_timeout (gpointer data)
{
        Check *c = data;

        c->timer_id = 0;
        c->timed_out = TRUE;
        g_cancellable_cancel (c->cancellable);
        return G_SOURCE_REMOVE;
}

static void
on_caller_cancelled (GCancellable *caller, gpointer data)
{
        g_cancellable_cancel (data);
}

static void
on_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        CorralLlmProvider *self = g_task_get_source_object (task);
        Check *c = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) body =
                soup_session_send_and_read_finish (SOUP_SESSION (source), res, &error);
        guint status;
        gsize len = 0;
        const char *data;

        g_cancellable_disconnect (g_task_get_cancellable (task), c->caller_id);
        c->caller_id = 0;
        if (!body) {
                if (c->timed_out)
                        g_task_return_new_error (task, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_TIMEOUT,
                                                 _ ("The provider sent nothing for %u seconds."),
                                                 CHECK_TIMEOUT_S);
                else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        g_task_return_error (task, g_steal_pointer (&error));
                else
                        g_task_return_new_error (task, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK,
                                                 _ ("Could not reach the provider at %s: %s"),
                                                 self->base_url, error->message);
                return;
        }
        status = soup_message_get_status (c->msg);
        if (status >= 200 && status < 300) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        data = g_bytes_get_data (body, &len);
        g_task_return_error (task,
                             corral_llm_http_error (self->kind, status, data,
                                                    MIN (len, CHECK_MAX_BODY), self->api_key));
}

void
corral_llm_provider_check_key_async (CorralLlmProvider *self,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data)
{
        GTask *task;
        g_autofree char *url = NULL;
        SoupMessage *msg;
        Check *c;

        g_return_if_fail (CORRAL_IS_LLM_PROVIDER (self));
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_llm_provider_check_key_async);
        /* Anthropic's base URL is the host, OpenAI-compatible ones end in /v1. */
        url = g_strconcat (self->base_url,
                           self->kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "/v1/models?limit=1"
                                                                       : "/models",
                           NULL);
        msg = soup_message_new (SOUP_METHOD_GET, url);
        if (!msg) {
                g_task_return_new_error (task, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST,
                                         _ ("The provider’s address is not valid: %s"), url);
                g_object_unref (task);
                return;
        }
        corral_llm_http_add_headers (self->kind, soup_message_get_request_headers (msg),
                                     self->api_key);
        /* One request: no connection is kept open after it. */
        soup_message_headers_replace (soup_message_get_request_headers (msg), "Connection",
                                      "close");
        c = g_new0 (Check, 1);
        c->msg = msg;
        c->cancellable = g_cancellable_new ();
        c->timer_id = g_timeout_add_seconds (CHECK_TIMEOUT_S, on_timeout, c);
        if (cancellable)
                c->caller_id = g_cancellable_connect (cancellable, G_CALLBACK (on_caller_cancelled),
                                                      c->cancellable, NULL);
        g_task_set_task_data (task, c, (GDestroyNotify) check_free);
        soup_session_send_and_read_async (self->session, msg, G_PRIORITY_DEFAULT, c->cancellable,
                                          on_checked, task);
}

gboolean
corral_llm_provider_check_key_finish (CorralLlmProvider *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}
