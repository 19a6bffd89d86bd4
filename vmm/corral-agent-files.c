/* corral-agent-files.c — file.read and file.write: contents travel as DATA on a channel.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-ops.h"

#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>

typedef struct {
        CorralChannel *channel;
        GByteArray *buf;
        gsize max_bytes;
        gboolean too_large;
        guint64 expected; /* write: bytes sent */
} Transfer;

static void
transfer_free (Transfer *t)
{
        if (t->channel) {
                corral_channel_close (t->channel, TRUE);
                corral_channel_unref (t->channel);
        }
        g_clear_pointer (&t->buf, g_byte_array_unref);
        g_free (t);
}

/* After a response the agent has forgotten the channel; only an abandoned transfer (cancelled)
 * needs a CLOSE, which transfer_free() sends. */
static void
transfer_settle (Transfer *t, const GError *error)
{
        if (!error || !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                corral_channel_close (t->channel, FALSE);
}

static void
read_data (gpointer owner,
           CorralChannel *ch,
           guint stream,
           gboolean eof,
           const guint8 *data,
           gsize len)
{
        Transfer *t = owner;

        if (t->too_large)
                return;
        if (len > t->max_bytes - t->buf->len) {
                /* The agent was asked for at most max_bytes + 1: stop it and refuse. */
                t->too_large = TRUE;
                corral_channel_close (ch, TRUE);
                return;
        }
        g_byte_array_append (t->buf, data, (guint) len);
        corral_channel_consumed (ch, len);
}

static void
no_event (gpointer owner, CorralChannel *ch, const char *name, const cJSON *params)
{
        g_debug ("ignoring %s on a file channel", name);
}

static void
no_lost (gpointer owner, CorralChannel *ch, const GError *error)
{
        /* The request fails with the connection. */
}

static const CorralChannelFuncs read_funcs = { read_data, no_event, no_lost };

static gboolean
check_size (const cJSON *reply, guint64 expected, GError **error)
{
        int64_t size;

        if (proto_json_get_int (reply, "size", 0, (int64_t) PROTO_MAX_ID, &size) == 0 &&
            (guint64) size == expected)
                return TRUE;
        g_set_error_literal (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                             _ ("The guest agent reported a wrong transfer size"));
        return FALSE;
}

static void
read_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        Transfer *t = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;

        reply = corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        transfer_settle (t, error);
        if (t->too_large) {
                g_task_return_new_error (task, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE,
                                         _ ("The file is larger than %llu bytes"),
                                         (unsigned long long) t->max_bytes);
                return;
        }
        if (!reply || !check_size (reply, t->buf->len, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_task_return_pointer (task, g_byte_array_free_to_bytes (g_steal_pointer (&t->buf)),
                               (GDestroyNotify) g_bytes_unref);
}

static Transfer *
transfer_new (CorralAgentClient *self, const CorralChannelFuncs *funcs, GTask *task)
{
        g_autoptr (GError) error = NULL;
        Transfer *t = g_new0 (Transfer, 1);

        t->channel = corral_channel_open (self, funcs, t, &error);
        if (!t->channel) {
                g_task_return_error (task, g_steal_pointer (&error));
                g_free (t);
                return NULL;
        }
        g_task_set_task_data (task, t, (GDestroyNotify) transfer_free);
        return t;
}

void
corral_agent_client_read_file_async (CorralAgentClient *self,
                                     const char *path,
                                     guint64 offset,
                                     gint64 length,
                                     gsize max_bytes,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        cJSON *params;
        Transfer *t;
        guint64 ask;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (path != NULL);
        g_return_if_fail (max_bytes < G_MAXUINT);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_read_file_async);
        t = transfer_new (self, &read_funcs, task);
        if (!t)
                return;
        t->max_bytes = max_bytes ? max_bytes : CORRAL_AGENT_DEFAULT_MAX_READ;
        t->buf = g_byte_array_new ();
        /* One byte more than allowed tells "too large" from "exactly max_bytes". */
        ask = (guint64) t->max_bytes + 1;
        if (length >= 0)
                ask = MIN (ask, (guint64) length);
        params = cJSON_CreateObject ();
        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddNumberToObject (params, "channel", corral_channel_get_id (t->channel));
        cJSON_AddNumberToObject (params, "offset", (double) MIN (offset, (guint64) PROTO_MAX_ID));
        cJSON_AddNumberToObject (params, "length", (double) ask);
        corral_agent_client_call_async (self, "file.read", params, cancellable, read_done,
                                        g_steal_pointer (&task));
}

GBytes *
corral_agent_client_read_file_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
write_data (gpointer owner,
            CorralChannel *ch,
            guint stream,
            gboolean eof,
            const guint8 *data,
            gsize len)
{
        g_debug ("ignoring output on a file.write channel");
        corral_channel_consumed (ch, len);
}

static const CorralChannelFuncs write_funcs = { write_data, no_event, no_lost };

static void
write_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GTask) task = user_data;
        Transfer *t = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;

        reply = corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        transfer_settle (t, error);
        if (!reply || !check_size (reply, t->expected, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_task_return_boolean (task, TRUE);
}

static void
sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        /* The response says how the write went; this only fails with the connection. */
        if (!corral_channel_write_finish (result, &error))
                g_debug ("file contents not sent: %s", error->message);
}

void
corral_agent_client_write_file_async (CorralAgentClient *self,
                                      const char *path,
                                      GBytes *contents,
                                      CorralWriteMode mode,
                                      guint perm,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        cJSON *params;
        Transfer *t;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (path != NULL && contents != NULL);
        g_return_if_fail (perm <= 07777);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_write_file_async);
        t = transfer_new (self, &write_funcs, task);
        if (!t)
                return;
        t->expected = g_bytes_get_size (contents);
        params = cJSON_CreateObject ();
        cJSON_AddStringToObject (params, "path", path);
        cJSON_AddNumberToObject (params, "channel", corral_channel_get_id (t->channel));
        cJSON_AddStringToObject (params, "mode",
                                 mode == CORRAL_WRITE_APPEND ? "append" : "replace");
        if (perm)
                cJSON_AddNumberToObject (params, "perm", perm);
        corral_agent_client_call_async (self, "file.write", params, cancellable, write_done,
                                        g_object_ref (task));
        /* Queued after the request frame: control frames always go first. */
        corral_channel_write_async (t->channel, self, contents, TRUE, NULL, sent_cb, NULL);
}

gboolean
corral_agent_client_write_file_finish (CorralAgentClient *self,
                                       GAsyncResult *result,
                                       GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}
