/* corral-agent-io.c — reading and dispatching frames, the outgoing queue, requests.
 *
 * Reading is zero-copy into the decoder's fixed buffer. Writing happens only from the fd source,
 * so queueing a frame never re-enters user code. Control frames go first; DATA frames are made
 * one at a time from channels that have credit, so the queue holds at most one of them.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include <errno.h>
#include <glib/gi18n-lib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests fail with BUSY above the soft limit; above the hard limit the agent is not reading
 * and the connection is closed. */
#define OUTQ_SOFT_LIMIT (4u * 1024 * 1024)
#define OUTQ_HARD_LIMIT (16u * 1024 * 1024)
/* Per dispatch, so that a flood in one direction cannot starve the main loop. */
#define READS_PER_DISPATCH 16
#define WRITE_BYTES_PER_DISPATCH (4u * 1024 * 1024)

typedef gboolean (*IoFunc) (CorralAgentClient *self, GIOCondition cond);

static gboolean
io_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
        CorralAgentClient *self = user_data;
        GIOCondition cond = g_source_query_unix_fd (source, self->io_tag);

        return ((IoFunc) (void (*) (void)) callback) (self, cond);
}

static GSourceFuncs io_source_funcs = { NULL, NULL, io_dispatch, NULL, NULL, NULL };

static void
out_frame_free (CorralOutFrame *of, const GError *error)
{
        if (of->done)
                g_task_return_error (of->done, g_error_copy (error));
        g_clear_object (&of->done);
        free (of->buf);
        g_free (of);
}

void
_corral_client_flush_outq_failed (CorralAgentClient *self, const GError *error)
{
        CorralOutFrame *of;

        while ((of = g_queue_pop_head (&self->outq)))
                out_frame_free (of, error);
        self->outq_bytes = 0;
}

static void
set_want_out (CorralAgentClient *self, gboolean want)
{
        if (self->io_source)
                g_source_modify_unix_fd (self->io_source, self->io_tag,
                                         G_IO_IN | G_IO_HUP | G_IO_ERR | (want ? G_IO_OUT : 0));
}

void
_corral_client_queue_frame (CorralAgentClient *self, guint8 *buf, gsize len, GTask *done)
{
        CorralOutFrame *of = g_new0 (CorralOutFrame, 1);

        of->buf = buf;
        of->len = len;
        of->done = done;
        g_queue_push_tail (&self->outq, of);
        self->outq_bytes += len;
        set_want_out (self, TRUE);
        if (self->outq_bytes > OUTQ_HARD_LIMIT)
                _corral_client_lose_later (
                        self,
                        g_error_new_literal (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                             _ ("The guest agent stopped reading")));
}

void
_corral_client_want_write (CorralAgentClient *self)
{
        if (self->connected)
                set_want_out (self, TRUE);
}

static gssize
write_some (CorralAgentClient *self, const guint8 *buf, gsize len)
{
        if (self->fd_is_socket)
                return send (self->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        return write (self->fd, buf, len);
}

/* FALSE when the connection was closed (or replaced) meanwhile. */
static gboolean
flush_out (CorralAgentClient *self)
{
        guint64 session = self->session;
        gsize budget = WRITE_BYTES_PER_DISPATCH;

        while (budget > 0) {
                CorralOutFrame *of = g_queue_peek_head (&self->outq);
                gssize n;

                if (!of) {
                        guint8 *buf;
                        gsize len;
                        GTask *done;

                        if (!_corral_client_next_data_frame (self, &buf, &len, &done))
                                break;
                        _corral_client_queue_frame (self, buf, len, done);
                        continue;
                }
                n = write_some (self, of->buf + of->off, of->len - of->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return TRUE;
                if (n < 0) {
                        int errsv = errno;

                        _corral_client_lose (
                                self,
                                g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                             _ ("Writing to the guest agent failed: %s"),
                                             g_strerror (errsv)));
                        return FALSE;
                }
                of->off += (gsize) n;
                budget -= MIN (budget, (gsize) n);
                if (of->off < of->len)
                        continue;
                g_queue_pop_head (&self->outq);
                self->outq_bytes -= of->len;
                if (of->done)
                        g_task_return_boolean (of->done, TRUE);
                g_clear_object (&of->done);
                out_frame_free (of, NULL);
                if (self->session != session)
                        return FALSE;
        }
        if (budget > 0)
                set_want_out (self, FALSE);
        return TRUE;
}

/* Requests and responses --------------------------------------------------------------------- */

void
_corral_pending_free (CorralPending *p)
{
        if (p->cancel_handler)
                g_cancellable_disconnect (p->cancellable, p->cancel_handler);
        g_clear_object (&p->cancellable);
        g_clear_object (&p->task);
        g_free (p);
}

static void
pending_cancelled (gpointer object, guint64 id)
{
        CorralAgentClient *self = object;
        CorralPending *p = g_hash_table_lookup (self->pending, &id);
        g_autoptr (GTask) task = NULL;

        if (!p)
                return;
        g_debug ("request %" G_GUINT64_FORMAT " cancelled; its reply will be ignored", id);
        task = g_object_ref (p->task);
        g_hash_table_remove (self->pending, &id);
        g_task_return_error_if_cancelled (task);
}

void
corral_agent_client_call_async (CorralAgentClient *self,
                                const char *method,
                                cJSON *params,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data)
{
        g_autoptr (cJSON) owned_params = params;
        g_autoptr (cJSON) request = NULL;
        g_autoptr (GTask) task = NULL;
        CorralPending *p;
        guint8 *buf;
        gsize len;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (method != NULL);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_call_async);
        if (g_task_return_error_if_cancelled (task))
                return;
        if (!self->connected) {
                g_task_return_new_error (task, CORRAL_AGENT_ERROR,
                                         CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                         _ ("Not connected to the guest agent"));
                return;
        }
        if (self->outq_bytes > OUTQ_SOFT_LIMIT) {
                g_task_return_new_error (task, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_BUSY,
                                         _ ("Too many requests are waiting to be sent"));
                return;
        }
        request = proto_request_new (++self->next_id, method, g_steal_pointer (&owned_params));
        if (!request || proto_frame_build_json (PROTO_FRAME_REQUEST, request, &buf, &len) < 0) {
                g_task_return_new_error (task, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TOO_LARGE,
                                         _ ("The request is too large"));
                return;
        }
        /* cJSON copies bytes as they are; the agent would refuse the whole request. */
        if (!proto_utf8_valid (buf + PROTO_HEADER_SIZE, len - PROTO_HEADER_SIZE)) {
                free (buf);
                g_task_return_new_error (task, CORRAL_AGENT_ERROR,
                                         CORRAL_AGENT_ERROR_INVALID_REQUEST,
                                         _ ("The request contains text that is not UTF-8"));
                return;
        }
        p = g_new0 (CorralPending, 1);
        p->id = self->next_id;
        p->task = g_steal_pointer (&task);
        g_hash_table_insert (self->pending, &p->id, p);
        _corral_client_queue_frame (self, buf, len, NULL);
        if (cancellable) {
                p->cancellable = g_object_ref (cancellable);
                p->cancel_handler =
                        _corral_cancel_connect (cancellable, self, p->id, pending_cancelled);
        }
}

cJSON *
corral_agent_client_call_finish (CorralAgentClient *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

static void
handle_response (CorralAgentClient *self, const ProtoFrame *f)
{
        g_autoptr (cJSON) msg = NULL;
        g_autoptr (GTask) task = NULL;
        const cJSON *result = NULL, *err = NULL;
        CorralPending *p;
        guint64 id;

        if (proto_json_parse (f->payload, f->length, &msg) < 0 ||
            proto_json_get_id (msg, &id) < 0) {
                _corral_client_protocol_error (self, "malformed RESPONSE");
                return;
        }
        p = g_hash_table_lookup (self->pending, &id);
        if (!p) {
                g_debug ("ignoring a response to request %" G_GUINT64_FORMAT
                         ", which is not outstanding",
                         id);
                return;
        }
        if (proto_json_get_object (msg, "error", &err) != 0 &&
            proto_json_get_object (msg, "result", &result) != 0) {
                _corral_client_protocol_error (self, "RESPONSE without result or error");
                return;
        }
        task = g_object_ref (p->task);
        g_hash_table_remove (self->pending, &id);
        if (err)
                g_task_return_error (task, _corral_agent_error_from_json (err));
        else
                g_task_return_pointer (task, cJSON_DetachItemViaPointer (msg, (cJSON *) result),
                                       (GDestroyNotify) cJSON_Delete);
}

/* Events ---------------------------------------------------------------------------------- */

static const char *const watch_kinds[] = {
        "create", "modify", "delete", "move-from", "move-to", "attrib", "overflow",
};

static void
handle_watch_event (CorralAgentClient *self, const cJSON *params)
{
        const char *path = NULL, *kind = NULL;
        int64_t watch;

        if (proto_json_get_int (params, "watch", 1, G_MAXUINT32, &watch) < 0 ||
            proto_json_get_string (params, "path", 4096, &path) < 0 ||
            proto_json_get_string (params, "kind", 16, &kind) < 0) {
                _corral_client_protocol_error (self, "malformed watch.event");
                return;
        }
        for (gsize i = 0; i < G_N_ELEMENTS (watch_kinds); i++) {
                if (g_str_equal (kind, watch_kinds[i])) {
                        _corral_client_emit_watch_event (self, (guint) watch, path, watch_kinds[i]);
                        return;
                }
        }
        g_debug ("ignoring watch event of unknown kind");
}

static void
handle_event (CorralAgentClient *self, const ProtoFrame *f)
{
        g_autoptr (cJSON) msg = NULL;
        const cJSON *params = NULL;
        const char *name = NULL;
        int64_t channel;

        if (proto_json_parse (f->payload, f->length, &msg) < 0 ||
            proto_json_get_string (msg, "event", 64, &name) < 0 ||
            proto_json_get_object (msg, "params", &params) < 0) {
                _corral_client_protocol_error (self, "malformed EVENT");
                return;
        }
        if (g_str_equal (name, "watch.event")) {
                handle_watch_event (self, params);
        } else if (g_str_equal (name, "exec.exit")) {
                if (proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &channel) < 0) {
                        _corral_client_protocol_error (self, "malformed exec.exit");
                        return;
                }
                _corral_client_route_channel_event (self, name, (guint32) channel, params);
        } else {
                g_debug ("ignoring unknown event");
        }
}

/* Reading ------------------------------------------------------------------------------------- */

static void
dispatch_frame (CorralAgentClient *self, const ProtoFrame *f)
{
        guint8 *buf;
        gsize len;

        if (f->type == PROTO_FRAME_HELLO) {
                _corral_client_handle_hello (self, f);
                return;
        }
        if (!self->connected) {
                g_debug ("dropping a %s frame from before the greeting",
                         proto_frame_type_name (f->type));
                return;
        }
        switch (f->type) {
        case PROTO_FRAME_RESPONSE:
                handle_response (self, f);
                break;
        case PROTO_FRAME_EVENT:
                handle_event (self, f);
                break;
        case PROTO_FRAME_DATA:
        case PROTO_FRAME_CREDIT:
        case PROTO_FRAME_CLOSE:
                _corral_client_handle_channel_frame (self, f);
                break;
        case PROTO_FRAME_PING:
                if (proto_frame_build (PROTO_FRAME_PONG, 0, 0, f->payload, f->length, &buf, &len) ==
                    0)
                        _corral_client_queue_frame (self, buf, len, NULL);
                break;
        case PROTO_FRAME_PONG:
                break;
        default:
                g_debug ("ignoring a %s frame from the agent", proto_frame_type_name (f->type));
        }
}

/* FALSE when the connection was closed (or replaced) meanwhile. */
static gboolean
process_frames (CorralAgentClient *self)
{
        guint64 session = self->session;
        ProtoFrame f;
        int r;

        for (;;) {
                r = proto_decoder_next (&self->dec, &f);
                if (r == 0)
                        return TRUE;
                if (r < 0 && self->connected) {
                        _corral_client_protocol_error (self, r == -EMSGSIZE ? "oversized frame"
                                                                            : "framing error");
                        return FALSE;
                }
                if (r < 0) {
                        /* Before the greeting, garbage is a leftover of an earlier session. */
                        if (proto_decoder_resync (&self->dec) == 0)
                                return TRUE;
                        continue;
                }
                dispatch_frame (self, &f);
                if (self->session != session)
                        return FALSE;
        }
}

static gboolean
read_in (CorralAgentClient *self)
{
        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                gsize room;
                guint8 *space = proto_decoder_space (&self->dec, &room);
                gssize n = read (self->fd, space, room);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return TRUE;
                if (n <= 0) {
                        const char *why = n == 0 ? _ ("The guest agent closed the connection")
                                                 : g_strerror (errno);

                        _corral_client_lose (
                                self,
                                g_error_new_literal (CORRAL_AGENT_ERROR,
                                                     CORRAL_AGENT_ERROR_CONNECTION_LOST, why));
                        return FALSE;
                }
                proto_decoder_commit (&self->dec, (gsize) n);
                self->read_since_tick = TRUE;
                if (!process_frames (self))
                        return FALSE;
        }
        return TRUE;
}

static gboolean
on_io (CorralAgentClient *self, GIOCondition cond)
{
        G_GNUC_UNUSED g_autoptr (CorralAgentClient) keep = g_object_ref (self);
        guint64 session = self->session;

        if (cond & (G_IO_IN | G_IO_HUP | G_IO_ERR)) {
                if (!read_in (self) || self->session != session)
                        return G_SOURCE_CONTINUE; /* the source is already gone */
        }
        if (cond & G_IO_OUT)
                flush_out (self);
        return G_SOURCE_CONTINUE;
}

void
_corral_client_io_start (CorralAgentClient *self)
{
        self->io_source = g_source_new (&io_source_funcs, sizeof (GSource));
        self->io_tag =
                g_source_add_unix_fd (self->io_source, self->fd, G_IO_IN | G_IO_HUP | G_IO_ERR);
        g_source_set_callback (self->io_source, (GSourceFunc) (void (*) (void)) on_io, self, NULL);
        g_source_attach (self->io_source, self->context);
}

void
_corral_client_io_stop (CorralAgentClient *self)
{
        if (!self->io_source)
                return;
        g_source_destroy (self->io_source);
        g_clear_pointer (&self->io_source, g_source_unref);
        self->io_tag = NULL;
}

/* Cancellation -------------------------------------------------------------------------------- */

typedef struct {
        GMainContext *context;
        GObject *object;
        guint64 key;
        CorralCancelFunc func;
} CancelData;

static void
cancel_data_free (gpointer data)
{
        CancelData *cd = data;

        g_main_context_unref (cd->context);
        g_object_unref (cd->object);
        g_free (cd);
}

static gboolean
cancel_idle (gpointer data)
{
        CancelData *cd = data;

        cd->func (cd->object, cd->key);
        return G_SOURCE_REMOVE;
}

static void
on_cancelled (GCancellable *cancellable, gpointer data)
{
        CancelData *cd = data;
        CancelData *copy = g_new (CancelData, 1);
        g_autoptr (GSource) idle = g_idle_source_new ();

        /* May run in another thread, and inside g_cancellable_connect(): defer. */
        copy->context = g_main_context_ref (cd->context);
        copy->object = g_object_ref (cd->object);
        copy->key = cd->key;
        copy->func = cd->func;
        g_source_set_callback (idle, cancel_idle, copy, cancel_data_free);
        g_source_attach (idle, cd->context);
}

gulong
_corral_cancel_connect (GCancellable *cancellable,
                        gpointer object,
                        guint64 key,
                        CorralCancelFunc func)
{
        CancelData *cd;

        if (!cancellable)
                return 0;
        cd = g_new (CancelData, 1);
        cd->context = g_main_context_ref_thread_default ();
        cd->object = g_object_ref (object);
        cd->key = key;
        cd->func = func;
        return g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled), cd, cancel_data_free);
}
