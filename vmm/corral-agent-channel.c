/* corral-agent-channel.c — logical channels: DATA routing and credit in both directions.
 *
 * Receiving: the agent may send `window` bytes per channel; more is a protocol violation. Bytes
 * are credited back once the owner reports them consumed, in batches of window/4 so that CREDIT
 * frames stay rare. Sending: writes are cut into DATA frames no larger than the credit the agent
 * granted, one frame at a time (see flush_out() in corral-agent-io.c).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>

/* Caps the credit a guest can grant, so the counter cannot overflow. */
#define MAX_SEND_CREDIT ((guint64) 1 << 40)
/* Smaller frames interleave better with other channels' traffic. */
#define MAX_DATA_FRAME (256u * 1024)

typedef struct {
        GBytes *bytes; /* (nullable) */
        gsize off;
        gboolean eof;
        GTask *task; /* (nullable) */
} WriteOp;

struct _CorralChannel {
        guint ref;
        guint32 id;
        guint64 session;
        CorralAgentClient *client; /* (owned) */
        const CorralChannelFuncs *funcs;
        gpointer owner; /* (unowned) */
        gboolean open;
        gboolean peer_closed;
        guint64 recv_credit;
        guint64 unacked;
        guint64 send_credit;
        GQueue writes; /* WriteOp */
        gboolean in_senders;
};

static void
write_op_free (WriteOp *op, const GError *error)
{
        if (op->task && error)
                g_task_return_error (op->task, g_error_copy (error));
        g_clear_object (&op->task);
        g_clear_pointer (&op->bytes, g_bytes_unref);
        g_free (op);
}

static void
fail_writes (CorralChannel *ch, const GError *error)
{
        WriteOp *op;

        while ((op = g_queue_pop_head (&ch->writes)))
                write_op_free (op, error);
}

CorralChannel *
corral_channel_ref (CorralChannel *ch)
{
        ch->ref++;
        return ch;
}

void
corral_channel_unref (CorralChannel *ch)
{
        if (!ch || --ch->ref > 0)
                return;
        g_assert (!ch->open);
        g_object_unref (ch->client);
        g_free (ch);
}

CorralChannel *
corral_channel_open (CorralAgentClient *client,
                     const CorralChannelFuncs *funcs,
                     gpointer owner,
                     GError **error)
{
        CorralChannel *ch;

        if (!client->connected) {
                g_set_error_literal (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                     _ ("Not connected to the guest agent"));
                return NULL;
        }
        ch = g_new0 (CorralChannel, 1);
        ch->ref = 2; /* the owner's and the table's */
        while (g_hash_table_contains (client->channels, GUINT_TO_POINTER (client->next_channel)))
                client->next_channel = client->next_channel % PROTO_MAX_CHANNEL + 1;
        ch->id = client->next_channel;
        client->next_channel = client->next_channel % PROTO_MAX_CHANNEL + 1;
        ch->session = client->session;
        ch->client = g_object_ref (client);
        ch->funcs = funcs;
        ch->owner = owner;
        ch->open = TRUE;
        ch->recv_credit = client->window;
        ch->send_credit = client->window;
        g_hash_table_insert (client->channels, GUINT_TO_POINTER (ch->id), ch);
        return ch;
}

guint32
corral_channel_get_id (CorralChannel *ch)
{
        return ch->id;
}

CorralAgentClient *
corral_channel_get_client (CorralChannel *ch)
{
        return ch->client;
}

gboolean
corral_channel_is_open (CorralChannel *ch)
{
        return ch->open;
}

static gboolean
in_session (CorralChannel *ch)
{
        return ch->open && ch->client->connected && ch->client->session == ch->session;
}

static void
send_channel_frame (CorralChannel *ch, guint8 type, const void *payload, gsize len)
{
        guint8 *buf;
        gsize buf_len;

        if (proto_frame_build (type, 0, ch->id, payload, len, &buf, &buf_len) == 0)
                _corral_client_queue_frame (ch->client, buf, buf_len, NULL);
}

void
corral_channel_consumed (CorralChannel *ch, gsize n)
{
        guint8 payload[4];

        if (!in_session (ch))
                return;
        ch->unacked += n;
        if (ch->unacked < MAX (ch->client->window / 4, 1))
                return;
        proto_put_u32 (payload, (guint32) ch->unacked);
        send_channel_frame (ch, PROTO_FRAME_CREDIT, payload, sizeof payload);
        ch->recv_credit += ch->unacked;
        ch->unacked = 0;
}

static void
remove_sender (CorralChannel *ch)
{
        if (ch->in_senders)
                g_queue_remove (&ch->client->senders, ch);
        ch->in_senders = FALSE;
}

void
corral_channel_close (CorralChannel *ch, gboolean send_close)
{
        g_autoptr (GError) error = NULL;
        CorralAgentClient *client = ch->client;

        if (!ch->open)
                return;
        if (send_close && in_session (ch))
                send_channel_frame (ch, PROTO_FRAME_CLOSE, NULL, 0);
        ch->open = FALSE;
        remove_sender (ch);
        if (g_hash_table_lookup (client->channels, GUINT_TO_POINTER (ch->id)) == ch) {
                g_hash_table_remove (client->channels, GUINT_TO_POINTER (ch->id));
                ch->ref--; /* the table's; the caller still holds one */
        }
        error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                     _ ("The channel was closed"));
        fail_writes (ch, error);
}

static void
add_sender (CorralChannel *ch)
{
        if (ch->in_senders || g_queue_is_empty (&ch->writes))
                return;
        g_queue_push_tail (&ch->client->senders, ch);
        ch->in_senders = TRUE;
        _corral_client_want_write (ch->client);
}

void
corral_channel_write_async (CorralChannel *ch,
                            gpointer source_object,
                            GBytes *data,
                            gboolean eof,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (source_object, cancellable, callback, user_data);
        WriteOp *op;

        g_task_set_source_tag (task, corral_channel_write_async);
        if (g_task_return_error_if_cancelled (task))
                return;
        if (!in_session (ch) || ch->peer_closed) {
                g_task_return_new_error (task, G_IO_ERROR,
                                         ch->peer_closed ? G_IO_ERROR_BROKEN_PIPE
                                                         : G_IO_ERROR_CLOSED,
                                         _ ("The stream to the guest is closed"));
                return;
        }
        if (!eof && (!data || g_bytes_get_size (data) == 0)) {
                g_task_return_boolean (task, TRUE);
                return;
        }
        op = g_new0 (WriteOp, 1);
        op->bytes = data ? g_bytes_ref (data) : NULL;
        op->eof = eof;
        op->task = g_steal_pointer (&task);
        g_queue_push_tail (&ch->writes, op);
        add_sender (ch);
}

gboolean
corral_channel_write_finish (GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean (G_TASK (result), error);
}

/* Cuts the next frame off the head write of ch; FALSE when it has no credit left. */
static gboolean
cut_frame (CorralChannel *ch, guint8 **ret_buf, gsize *ret_len, GTask **ret_done)
{
        WriteOp *op = g_queue_peek_head (&ch->writes);
        gsize size = op->bytes ? g_bytes_get_size (op->bytes) : 0;
        const guint8 *data = op->bytes ? g_bytes_get_data (op->bytes, NULL) : NULL;
        gsize chunk = MIN (size - op->off, MIN (ch->client->max_payload, MAX_DATA_FRAME));
        gboolean last;
        guint8 flags;

        chunk = (gsize) MIN ((guint64) chunk, ch->send_credit);
        if (chunk == 0 && size > op->off)
                return FALSE;
        last = op->off + chunk == size;
        flags = PROTO_STREAM_STDIN | (last && op->eof ? PROTO_DATA_EOF : 0);
        if (proto_frame_build (PROTO_FRAME_DATA, flags, ch->id, data ? data + op->off : NULL, chunk,
                               ret_buf, ret_len) < 0)
                g_error ("could not build a DATA frame");
        op->off += chunk;
        ch->send_credit -= chunk;
        *ret_done = NULL;
        if (last) {
                g_queue_pop_head (&ch->writes);
                *ret_done = g_steal_pointer (&op->task);
                write_op_free (op, NULL);
        }
        return TRUE;
}

gboolean
_corral_client_next_data_frame (CorralAgentClient *self,
                                guint8 **ret_buf,
                                gsize *ret_len,
                                GTask **ret_done)
{
        CorralChannel *ch;

        while ((ch = g_queue_pop_head (&self->senders))) {
                ch->in_senders = FALSE;
                if (!ch->open || g_queue_is_empty (&ch->writes))
                        continue;
                if (!cut_frame (ch, ret_buf, ret_len, ret_done))
                        continue; /* back in the queue on CREDIT */
                add_sender (ch); /* round robin */
                return TRUE;
        }
        return FALSE;
}

/* Receiving -------------------------------------------------------------------------------- */

static void
handle_data (CorralAgentClient *self, CorralChannel *ch, const ProtoFrame *f)
{
        guint stream = f->flags & PROTO_DATA_STREAM_MASK;

        if (stream == PROTO_STREAM_STDIN) {
                _corral_client_protocol_error (self, "DATA on the input stream");
                return;
        }
        if (f->length > ch->recv_credit) {
                _corral_client_protocol_error (self, "DATA beyond the granted credit");
                return;
        }
        ch->recv_credit -= f->length;
        ch->funcs->data (ch->owner, ch, stream, (f->flags & PROTO_DATA_EOF) != 0, f->payload,
                         f->length);
}

void
_corral_client_handle_channel_frame (CorralAgentClient *self, const ProtoFrame *f)
{
        g_autoptr (CorralChannel) ch =
                g_hash_table_lookup (self->channels, GUINT_TO_POINTER (f->channel));

        if (!ch) {
                g_debug ("dropping a %s frame for unknown channel %u",
                         proto_frame_type_name (f->type), f->channel);
                return;
        }
        corral_channel_ref (ch); /* callbacks may close it */
        switch (f->type) {
        case PROTO_FRAME_DATA:
                handle_data (self, ch, f);
                break;
        case PROTO_FRAME_CREDIT:
                ch->send_credit =
                        MIN (ch->send_credit + proto_get_u32 (f->payload), MAX_SEND_CREDIT);
                add_sender (ch);
                break;
        case PROTO_FRAME_CLOSE: {
                g_autoptr (GError) error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE,
                                                                _ ("The guest closed the stream"));

                ch->peer_closed = TRUE;
                remove_sender (ch);
                fail_writes (ch, error);
                break;
        }
        default:
                g_assert_not_reached ();
        }
}

void
_corral_client_route_channel_event (CorralAgentClient *self,
                                    const char *name,
                                    guint32 channel,
                                    const cJSON *params)
{
        g_autoptr (CorralChannel) ch =
                g_hash_table_lookup (self->channels, GUINT_TO_POINTER (channel));

        if (!ch) {
                g_debug ("dropping %s for unknown channel %u", name, channel);
                return;
        }
        corral_channel_ref (ch);
        ch->funcs->event (ch->owner, ch, name, params);
}

void
_corral_client_channels_fail (CorralAgentClient *self, const GError *error)
{
        g_autoptr (GHashTable) table = g_steal_pointer (&self->channels);
        GHashTableIter iter;
        gpointer value;

        self->channels = g_hash_table_new (g_direct_hash, g_direct_equal);
        g_queue_clear (&self->senders);
        g_hash_table_iter_init (&iter, table);
        while (g_hash_table_iter_next (&iter, NULL, &value)) {
                CorralChannel *ch = value;

                ch->open = FALSE;
                ch->in_senders = FALSE;
                fail_writes (ch, error);
                ch->funcs->lost (ch->owner, ch, error);
                corral_channel_unref (ch); /* the table's */
        }
}
