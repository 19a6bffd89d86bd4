/* llm-request.c — the life of one streamed request.
 *
 * A request is a GTask whose data is a CorralLlmRequest. Each attempt sends the body, checks
 * the status, then reads the body in 16 KiB reads into the SSE parser, which feeds the wire's
 * decoder. An idle timer re-armed at every read cancels the attempt when the server goes
 * silent. Failures go through request_fail(), which either retries after a delay or completes
 * the task.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-provider-private.h"

#include "llm-error.h"
#include "llm-http.h"

#include <glib/gi18n.h>
#include <string.h>

#define MAX_ERROR_BODY 65536

typedef CorralLlmRequest Request;

static void attempt_start (GTask *task);

/* ---- one attempt's resources ---- */

static void
idle_stop (Request *req)
{
        if (req->idle_source != NULL) {
                g_source_destroy (req->idle_source);
                g_clear_pointer (&req->idle_source, g_source_unref);
        }
}

static void
attempt_clear (Request *req)
{
        idle_stop (req);
        if (req->cancel_handler != 0)
                g_cancellable_disconnect (req->user_cancellable, req->cancel_handler);
        req->cancel_handler = 0;
        /* Cancelling first makes libsoup drop the connection instead of draining the body. */
        if (req->attempt_cancellable != NULL)
                g_cancellable_cancel (req->attempt_cancellable);
        g_clear_object (&req->stream);
        g_clear_object (&req->msg);
        g_clear_object (&req->attempt_cancellable);
        g_clear_pointer (&req->parser, corral_sse_parser_free);
        if (req->decoder != NULL)
                req->self->wire->decoder_free (req->decoder);
        req->decoder = NULL;
        g_clear_error (&req->event_error);
        req->timed_out = FALSE;
        req->body_started = FALSE;
        req->received = 0;
}

void
corral_llm_request_free (Request *req)
{
        attempt_clear (req);
        if (req->sleep_source != NULL) {
                g_source_destroy (req->sleep_source);
                g_source_unref (req->sleep_source);
        }
        g_bytes_unref (req->body);
        g_free (req->url);
        g_free (req->beta);
        if (req->event_data_notify != NULL)
                req->event_data_notify (req->event_data);
        g_free (req);
}

static void
emit (Request *req, const CorralLlmEvent *event)
{
        if (req->event_func != NULL)
                req->event_func (event, req->event_data);
}

static gboolean
on_idle_timeout (gpointer data)
{
        Request *req = data;

        req->timed_out = TRUE;
        g_cancellable_cancel (req->attempt_cancellable);
        g_clear_pointer (&req->idle_source, g_source_unref);
        return G_SOURCE_REMOVE;
}

static void
idle_restart (Request *req)
{
        idle_stop (req);
        if (req->self->idle_timeout_ms == 0)
                return;
        req->idle_source = g_timeout_source_new (req->self->idle_timeout_ms);
        g_source_set_callback (req->idle_source, on_idle_timeout, req, NULL);
        g_source_attach (req->idle_source, g_main_context_get_thread_default ());
}

/* ---- failure and retry ---- */

static guint
backoff_ms (CorralLlmProvider *self, guint attempt, gint64 retry_after_ms)
{
        guint64 delay;

        if (retry_after_ms >= 0)
                return (guint) MIN ((guint64) retry_after_ms, self->max_delay_ms);
        delay = (guint64) self->base_delay_ms << MIN (attempt - 1, 20u);
        delay = MIN (delay, self->max_delay_ms);
        /* Jitter spreads clients that failed together over the second half of the window. */
        return (guint) (delay / 2 +
                        (delay > 1 ? g_random_int_range (0, (gint32) (delay / 2) + 1) : 0));
}

static gboolean
on_sleep_done (gpointer data)
{
        GTask *task = data;
        Request *req = g_task_get_task_data (task);

        g_clear_pointer (&req->sleep_source, g_source_unref);
        /* The source's reference goes with the source; the attempt needs its own. */
        attempt_start (g_object_ref (task));
        return G_SOURCE_REMOVE;
}

static void
schedule_retry (GTask *task, Request *req, guint delay_ms)
{
        GSource *cancel_source;

        req->sleep_source = g_timeout_source_new (delay_ms);
        g_source_set_callback (req->sleep_source, on_sleep_done, g_object_ref (task),
                               g_object_unref);
        /* A cancellation during the sleep wakes it up; attempt_start then sees it. */
        if (req->user_cancellable != NULL) {
                cancel_source = g_cancellable_source_new (req->user_cancellable);
                g_source_set_dummy_callback (cancel_source);
                g_source_add_child_source (req->sleep_source, cancel_source);
                g_source_unref (cancel_source);
        }
        g_source_attach (req->sleep_source, g_main_context_get_thread_default ());
}

static gboolean
may_retry (Request *req, const GError *error)
{
        if (req->attempt >= req->self->max_attempts)
                return FALSE;
        if (g_cancellable_is_cancelled (req->user_cancellable))
                return FALSE;
        /* A connection lost in the middle of a reply may have cost tokens already; it is
         * reported rather than silently paid for twice. */
        if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK) &&
            req->body_started)
                return FALSE;
        return corral_llm_error_is_transient (error);
}

/* Takes error; completes the task or schedules the next attempt. */
static void
request_fail (GTask *task, GError *error)
{
        Request *req = g_task_get_task_data (task);
        CorralLlmEvent event = { .type = CORRAL_LLM_EVENT_RETRY };
        gint64 retry_after = -1;

        if (!may_retry (req, error)) {
                attempt_clear (req);
                g_task_return_error (task, error);
                g_object_unref (task);
                return;
        }
        if (req->msg != NULL)
                retry_after = corral_llm_http_retry_after_ms (
                        soup_message_get_response_headers (req->msg));
        event.delay_ms = backoff_ms (req->self, req->attempt, retry_after);
        event.attempt = req->attempt + 1;
        event.error = error;
        attempt_clear (req);
        emit (req, &event);
        g_error_free (error);
        schedule_retry (task, req, event.delay_ms);
        g_object_unref (task);
}

/* Turns an I/O error into ours: cancellation stays G_IO_ERROR_CANCELLED unless it was the
 * idle timer's. Takes error. */
static GError *
map_io_error (Request *req, GError *error)
{
        GError *mapped;

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) && !req->timed_out)
                return error;
        if (req->timed_out)
                mapped = g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_TIMEOUT,
                                      _ ("The provider sent nothing for %u seconds."),
                                      (req->self->idle_timeout_ms + 999) / 1000);
        else if (req->body_started)
                mapped = g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK,
                                      _ ("The connection to the provider was lost during the "
                                         "reply: %s"),
                                      error->message);
        else
                mapped = g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK,
                                      _ ("Could not reach the provider at %s: %s"),
                                      req->self->base_url, error->message);
        g_error_free (error);
        return mapped;
}

/* ---- success ---- */

static void
request_succeed (GTask *task, Request *req)
{
        g_autoptr (GError) error = NULL;
        gboolean pending = FALSE;
        CorralLlmResponse *response;

        if (!corral_sse_parser_finish (req->parser, &pending, &error)) {
                request_fail (task, g_steal_pointer (&error));
                return;
        }
        response = req->self->wire->decoder_finish (req->decoder, &error);
        if (response == NULL) {
                request_fail (task, g_steal_pointer (&error));
                return;
        }
        attempt_clear (req);
        g_task_return_pointer (task, response, (GDestroyNotify) corral_llm_response_free);
        g_object_unref (task);
}

/* ---- reading the event stream ---- */

static gboolean
on_sse_event (const char *event_type,
              const char *data,
              gsize data_len,
              gpointer user_data,
              GError **error)
{
        Request *req = user_data;

        return req->self->wire->decoder_event (req->decoder, event_type, data, data_len, error);
}

static void read_next (GTask *task, Request *req);

static gboolean
consume (Request *req, gssize n, GError **error)
{
        req->received += (gsize) n;
        if (req->received > req->self->limits.max_response_bytes) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply is larger than %llu bytes."),
                             (unsigned long long) req->self->limits.max_response_bytes);
                return FALSE;
        }
        return corral_sse_parser_feed (req->parser, req->buf, (gsize) n, error);
}

static void
on_read (GObject *source, GAsyncResult *result, gpointer data)
{
        GTask *task = data;
        Request *req = g_task_get_task_data (task);
        GError *error = NULL;
        gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), result, &error);

        if (n < 0) {
                request_fail (task, map_io_error (req, error));
                return;
        }
        if (g_task_return_error_if_cancelled (task)) {
                attempt_clear (req);
                g_object_unref (task);
                return;
        }
        if (n == 0) {
                request_succeed (task, req);
                return;
        }
        if (!consume (req, n, &error)) {
                request_fail (task, error);
                return;
        }
        read_next (task, req);
}

static void
read_next (GTask *task, Request *req)
{
        idle_restart (req);
        g_input_stream_read_async (req->stream, req->buf, sizeof req->buf, G_PRIORITY_DEFAULT,
                                   req->attempt_cancellable, on_read, task);
}

/* ---- an error reply ---- */

static void
on_error_body (GObject *source, GAsyncResult *result, gpointer data)
{
        GTask *task = data;
        Request *req = g_task_get_task_data (task);
        GError *error = NULL;
        gsize n = 0;

        if (!g_input_stream_read_all_finish (G_INPUT_STREAM (source), result, &n, &error) &&
            (req->timed_out || g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))) {
                request_fail (task, map_io_error (req, error));
                return;
        }
        /* A body that broke off still tells us the status; what we got of it is enough. */
        g_clear_error (&error);
        request_fail (task,
                      corral_llm_http_error (req->self->kind, soup_message_get_status (req->msg),
                                             req->buf, n, req->self->api_key));
}

/* ---- sending ---- */

static gboolean
is_event_stream (SoupMessage *msg)
{
        const char *type = soup_message_headers_get_content_type (
                soup_message_get_response_headers (msg), NULL);

        return type == NULL || g_ascii_strcasecmp (type, "text/event-stream") == 0;
}

static void
on_sent (GObject *source, GAsyncResult *result, gpointer data)
{
        GTask *task = data;
        Request *req = g_task_get_task_data (task);
        GError *error = NULL;
        guint status;

        req->stream = soup_session_send_finish (SOUP_SESSION (source), result, &error);
        if (req->stream == NULL) {
                request_fail (task, map_io_error (req, error));
                return;
        }
        status = soup_message_get_status (req->msg);
        idle_restart (req);
        if (status != SOUP_STATUS_OK) {
                g_input_stream_read_all_async (
                        req->stream, req->buf, MIN (sizeof req->buf, MAX_ERROR_BODY),
                        G_PRIORITY_DEFAULT, req->attempt_cancellable, on_error_body, task);
                return;
        }
        if (!is_event_stream (req->msg)) {
                request_fail (task, g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                                                 _ ("The provider did not answer with an event "
                                                    "stream.")));
                return;
        }
        req->body_started = TRUE;
        read_next (task, req);
}

static void
on_user_cancelled (GCancellable *cancellable, gpointer data)
{
        g_cancellable_cancel (G_CANCELLABLE (data));
}

static void
attempt_start (GTask *task)
{
        Request *req = g_task_get_task_data (task);
        CorralLlmProvider *self = req->self;

        if (g_task_return_error_if_cancelled (task)) {
                g_object_unref (task);
                return;
        }
        req->attempt++;
        req->attempt_cancellable = g_cancellable_new ();
        if (req->user_cancellable != NULL)
                req->cancel_handler = g_cancellable_connect (
                        req->user_cancellable, G_CALLBACK (on_user_cancelled),
                        g_object_ref (req->attempt_cancellable), g_object_unref);
        req->decoder = self->wire->decoder_new (&self->limits, req->event_func, req->event_data);
        req->parser = corral_sse_parser_new (self->limits.max_event_bytes,
                                             self->limits.max_event_bytes, on_sse_event, req);
        req->msg = soup_message_new (SOUP_METHOD_POST, req->url);
        corral_llm_http_add_headers (self->kind, soup_message_get_request_headers (req->msg),
                                     self->api_key);
        if (req->beta && self->kind == CORRAL_LLM_PROVIDER_ANTHROPIC)
                soup_message_headers_replace (soup_message_get_request_headers (req->msg),
                                              "anthropic-beta", req->beta);
        soup_message_set_request_body_from_bytes (req->msg, "application/json", req->body);
        idle_restart (req);
        soup_session_send_async (self->session, req->msg, G_PRIORITY_DEFAULT,
                                 req->attempt_cancellable, on_sent, task);
}

void
corral_llm_request_start (GTask *task)
{
        attempt_start (task);
}

CorralLlmRequest *
corral_llm_request_new (CorralLlmProvider *self,
                        GBytes *body,
                        CorralLlmEventFunc event_func,
                        gpointer event_data,
                        GDestroyNotify event_data_notify,
                        GCancellable *cancellable)
{
        Request *req = g_new0 (Request, 1);

        req->self = self;
        req->body = g_bytes_ref (body);
        req->url = g_strconcat (self->base_url, self->wire->path, NULL);
        req->event_func = event_func;
        req->event_data = event_data;
        req->event_data_notify = event_data_notify;
        req->user_cancellable = cancellable;
        return req;
}
