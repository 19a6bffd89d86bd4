/* corral-mcp-transport.c — newline-delimited JSON-RPC over a pair of GIO streams.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-transport.h"

#include <glib/gi18n-lib.h>
#include <signal.h>
#include <string.h>

#define READ_CHUNK (64 * 1024)
/* A peer that stops reading (while it keeps sending requests) must not grow our memory. */
#define MAX_QUEUED ((gsize) 4 * CORRAL_MCP_MAX_LINE)

struct _CorralMcpTransport {
        GObject parent_instance;
        GInputStream *input;
        GOutputStream *output;
        GCancellable *cancellable; /* cancelled on close: stops the read and the write */
        GByteArray *line; /* the partial line read so far */
        GQueue out; /* GBytes waiting to be written */
        gsize queued; /* bytes in out */
        gboolean writing;
        gboolean started;
        gboolean half_close;
        gboolean closed;
        GPtrArray *flush_tasks;
};

G_DEFINE_FINAL_TYPE (CorralMcpTransport, corral_mcp_transport, G_TYPE_OBJECT)

enum { SIGNAL_MESSAGE, SIGNAL_INVALID, SIGNAL_CLOSED, SIGNAL_INPUT_CLOSED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void read_next (CorralMcpTransport *self);
static void write_next (CorralMcpTransport *self);

static void
finish_flushes (CorralMcpTransport *self)
{
        g_autoptr (GPtrArray) tasks = g_steal_pointer (&self->flush_tasks);

        self->flush_tasks = g_ptr_array_new_with_free_func (g_object_unref);
        for (guint i = 0; i < tasks->len; i++)
                g_task_return_boolean (tasks->pdata[i], TRUE);
}

void
corral_mcp_transport_close (CorralMcpTransport *self, const GError *error)
{
        g_autoptr (GError) copy = NULL;

        g_return_if_fail (CORRAL_IS_MCP_TRANSPORT (self));
        if (self->closed)
                return;
        self->closed = TRUE;
        g_cancellable_cancel (self->cancellable);
        g_queue_clear_full (&self->out, (GDestroyNotify) g_bytes_unref);
        self->queued = 0;
        copy = error ? g_error_copy (error)
                     : g_error_new_literal (CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED,
                                            _ ("the MCP connection was closed"));
        g_object_ref (self);
        finish_flushes (self);
        g_signal_emit (self, signals[SIGNAL_CLOSED], 0, copy);
        g_object_unref (self);
}

gboolean
corral_mcp_transport_is_closed (CorralMcpTransport *self)
{
        return self->closed;
}

static void
handle_line (CorralMcpTransport *self, const char *line, gsize len)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) id = NULL;
        g_autoptr (CorralMcpMessage) msg = NULL;
        int code = 0;

        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (len == 0)
                return;
        msg = corral_mcp_message_parse (line, len, &code, &id, &error);
        if (msg)
                g_signal_emit (self, signals[SIGNAL_MESSAGE], 0, msg);
        else
                g_signal_emit (self, signals[SIGNAL_INVALID], 0, code, id, error);
}

/* Splits what was read into lines; keeps the tail. Stops when a handler closed us. */
static void
consume (CorralMcpTransport *self, const guint8 *data, gsize len)
{
        while (len > 0 && !self->closed) {
                const guint8 *nl = memchr (data, '\n', len);
                gsize n = nl ? (gsize) (nl - data) : len;

                if (self->line->len + n > CORRAL_MCP_MAX_LINE) {
                        g_autoptr (GError) error =
                                g_error_new (CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TOO_LARGE,
                                             _ ("the MCP peer sent a line longer than %zu bytes"),
                                             CORRAL_MCP_MAX_LINE);
                        corral_mcp_transport_close (self, error);
                        return;
                }
                g_byte_array_append (self->line, data, (guint) n);
                if (!nl)
                        return;
                handle_line (self, (const char *) self->line->data, self->line->len);
                g_byte_array_set_size (self->line, 0);
                data += n + 1;
                len -= n + 1;
        }
}

static void
read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpTransport) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) bytes =
                g_input_stream_read_bytes_finish (G_INPUT_STREAM (source), result, &error);
        gsize len;
        const guint8 *data;

        if (self->closed)
                return;
        if (!bytes) {
                corral_mcp_transport_close (self, error);
                return;
        }
        data = g_bytes_get_data (bytes, &len);
        if (len == 0 && self->half_close) {
                g_signal_emit (self, signals[SIGNAL_INPUT_CLOSED], 0);
                return;
        }
        if (len == 0) {
                corral_mcp_transport_close (self, NULL);
                return;
        }
        consume (self, data, len);
        if (!self->closed)
                read_next (self);
}

static void
read_next (CorralMcpTransport *self)
{
        g_input_stream_read_bytes_async (self->input, READ_CHUNK, G_PRIORITY_DEFAULT,
                                         self->cancellable, read_cb, g_object_ref (self));
}

void
corral_mcp_transport_set_half_close (CorralMcpTransport *self, gboolean half_close)
{
        self->half_close = half_close;
}

void
corral_mcp_transport_start (CorralMcpTransport *self)
{
        g_return_if_fail (CORRAL_IS_MCP_TRANSPORT (self));
        if (self->started || self->closed)
                return;
        self->started = TRUE;
        read_next (self);
}

static void
write_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralMcpTransport) self = user_data;
        g_autoptr (GError) error = NULL;

        self->writing = FALSE;
        if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), result, NULL, &error)) {
                if (!self->closed)
                        corral_mcp_transport_close (self, error);
                return;
        }
        write_next (self);
}

static void
write_next (CorralMcpTransport *self)
{
        g_autoptr (GBytes) bytes = NULL;
        gsize len;
        const void *data;

        if (self->writing || self->closed)
                return;
        bytes = g_queue_pop_head (&self->out);
        if (!bytes) {
                finish_flushes (self);
                return;
        }
        self->queued -= g_bytes_get_size (bytes);
        self->writing = TRUE;
        data = g_bytes_get_data (bytes, &len);
        /* The GBytes rides along as task data of nothing: keep it alive through the write. */
        g_object_set_data_full (G_OBJECT (self), "corral-mcp-writing", g_bytes_ref (bytes),
                                (GDestroyNotify) g_bytes_unref);
        g_output_stream_write_all_async (self->output, data, len, G_PRIORITY_DEFAULT,
                                         self->cancellable, write_cb, g_object_ref (self));
}

void
corral_mcp_transport_send (CorralMcpTransport *self, cJSON *msg)
{
        g_autoptr (cJSON) owned = msg;
        char *text;
        char *line;

        g_return_if_fail (CORRAL_IS_MCP_TRANSPORT (self));
        if (self->closed)
                return;
        text = cJSON_PrintUnformatted (owned);
        g_return_if_fail (text != NULL);
        line = g_strconcat (text, "\n", NULL);
        cJSON_free (text);
        self->queued += strlen (line);
        g_queue_push_tail (&self->out, g_bytes_new_take (line, strlen (line)));
        if (self->queued > MAX_QUEUED) {
                g_autoptr (GError) error =
                        g_error_new_literal (CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TOO_LARGE,
                                             _ ("the MCP peer does not read what is sent to it"));
                corral_mcp_transport_close (self, error);
                return;
        }
        write_next (self);
}

void
corral_mcp_transport_flush_async (CorralMcpTransport *self,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        GTask *task = g_task_new (self, NULL, callback, user_data);

        g_task_set_source_tag (task, corral_mcp_transport_flush_async);
        if (self->closed || (!self->writing && g_queue_is_empty (&self->out))) {
                g_task_return_boolean (task, TRUE);
                g_object_unref (task);
                return;
        }
        g_ptr_array_add (self->flush_tasks, task);
}

gboolean
corral_mcp_transport_flush_finish (CorralMcpTransport *self, GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

static void
corral_mcp_transport_dispose (GObject *object)
{
        CorralMcpTransport *self = CORRAL_MCP_TRANSPORT (object);

        g_cancellable_cancel (self->cancellable);
        g_queue_clear_full (&self->out, (GDestroyNotify) g_bytes_unref);
        g_clear_object (&self->input);
        g_clear_object (&self->output);
        G_OBJECT_CLASS (corral_mcp_transport_parent_class)->dispose (object);
}

static void
corral_mcp_transport_finalize (GObject *object)
{
        CorralMcpTransport *self = CORRAL_MCP_TRANSPORT (object);

        g_clear_object (&self->cancellable);
        g_byte_array_unref (self->line);
        g_ptr_array_unref (self->flush_tasks);
        G_OBJECT_CLASS (corral_mcp_transport_parent_class)->finalize (object);
}

static void
corral_mcp_transport_class_init (CorralMcpTransportClass *klass)
{
        /* A server that exits while a line is on its way to its stdin would otherwise kill this
         * whole process (the app, corralctl) with SIGPIPE: the write is to a pipe, which has
         * no MSG_NOSIGNAL. Ignored, the write fails with EPIPE and the transport closes with
         * that error. Only the default disposition is changed; a program's own handler stays.
         * Programs the host starts get SIGPIPE back: GSubprocess resets it for the child. */
        struct sigaction old;

        if (sigaction (SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
                signal (SIGPIPE, SIG_IGN);

        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_mcp_transport_dispose;
        object_class->finalize = corral_mcp_transport_finalize;
        signals[SIGNAL_MESSAGE] =
                g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
        signals[SIGNAL_INVALID] =
                g_signal_new ("invalid", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 3, G_TYPE_INT, G_TYPE_POINTER, G_TYPE_ERROR);
        signals[SIGNAL_CLOSED] =
                g_signal_new ("closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
        signals[SIGNAL_INPUT_CLOSED] =
                g_signal_new ("input-closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_mcp_transport_init (CorralMcpTransport *self)
{
        self->cancellable = g_cancellable_new ();
        self->line = g_byte_array_new ();
        self->flush_tasks = g_ptr_array_new_with_free_func (g_object_unref);
        g_queue_init (&self->out);
}

CorralMcpTransport *
corral_mcp_transport_new (GInputStream *input, GOutputStream *output)
{
        CorralMcpTransport *self = g_object_new (CORRAL_TYPE_MCP_TRANSPORT, NULL);

        self->input = g_object_ref (input);
        self->output = g_object_ref (output);
        return self;
}
