/* corral-agent-private.h — pieces shared by the files of the agent client; not installed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-exec-spec.h"
#include "proto.h"

G_BEGIN_DECLS

/* Error text from the guest: at most this many bytes, control characters removed. */
#define CORRAL_AGENT_MAX_MESSAGE 256

/* A logical channel (one exec, attach or file transfer). */
typedef struct _CorralChannel CorralChannel;

typedef struct {
        /* A DATA frame on stream 1 or 2 (eof set on the stream's last frame; len may be 0). The
         * owner reports delivered bytes with corral_channel_consumed(), now or later. */
        void (*data) (gpointer owner,
                      CorralChannel *ch,
                      guint stream,
                      gboolean eof,
                      const guint8 *data,
                      gsize len);
        /* An event naming this channel (exec.exit). */
        void (*event) (gpointer owner, CorralChannel *ch, const char *name, const cJSON *params);
        /* The connection is gone; the channel is already closed. */
        void (*lost) (gpointer owner, CorralChannel *ch, const GError *error);
} CorralChannelFuncs;

/* Registers a channel with a fresh id; the returned reference belongs to the owner. The owner's
 * callbacks run until corral_channel_close() or the connection is lost. */
CorralChannel *corral_channel_open (CorralAgentClient *client,
                                    const CorralChannelFuncs *funcs,
                                    gpointer owner,
                                    GError **error);
guint32 corral_channel_get_id (CorralChannel *ch);
CorralAgentClient *corral_channel_get_client (CorralChannel *ch);
gboolean corral_channel_is_open (CorralChannel *ch);
void corral_channel_consumed (CorralChannel *ch, gsize n);
/* Queues data (may be empty) for stream 0, then EOF if eof. Completes when the last frame has
 * been written to the connection. */
void corral_channel_write_async (CorralChannel *ch,
                                 gpointer source_object,
                                 GBytes *data,
                                 gboolean eof,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data);
gboolean corral_channel_write_finish (GAsyncResult *result, GError **error);
/* Unregisters; queued writes fail with G_IO_ERROR_CANCELLED. send_close tells the agent too. */
void corral_channel_close (CorralChannel *ch, gboolean send_close);
CorralChannel *corral_channel_ref (CorralChannel *ch);
void corral_channel_unref (CorralChannel *ch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralChannel, corral_channel_unref)

/* corral-agent-channel.c, used by the client core */
void _corral_client_channels_fail (CorralAgentClient *self, const GError *error);
void _corral_client_handle_channel_frame (CorralAgentClient *self, const ProtoFrame *f);
void _corral_client_route_channel_event (CorralAgentClient *self,
                                         const char *name,
                                         guint32 channel,
                                         const cJSON *params);
/* Produces the next DATA frame from a channel with data and credit; FALSE when there is none. */
gboolean _corral_client_next_data_frame (CorralAgentClient *self,
                                         guint8 **ret_buf,
                                         gsize *ret_len,
                                         GTask **ret_done);

/* The client's state, shared by corral-agent-client.c (lifecycle), corral-agent-io.c (frames)
 * and corral-agent-channel.c (channels and credit). */
typedef struct {
        guint8 *buf;
        gsize len;
        gsize off;
        GTask *done; /* (nullable) returned once the frame is fully written */
} CorralOutFrame;

struct _CorralAgentClient {
        GObject parent_instance;

        int fd; /* -1 when disconnected */
        gboolean fd_is_socket;
        GMainContext *context;
        GSource *io_source;
        gpointer io_tag;
        GSource *ping_source;
        GSource *lose_source; /* deferred close, see _corral_client_lose_later() */
        GError *lose_error;
        ProtoDecoder dec;
        gboolean dec_ready;

        GQueue outq; /* CorralOutFrame; control frames plus at most one DATA frame */
        gsize outq_bytes;

        guint64 session; /* bumped on every connect and disconnect */
        gboolean connected;
        GTask *connect_task;
        gulong connect_cancel;
        gint64 handshake_deadline_us;
        char nonce[PROTO_NONCE_HEX_LEN + 1];

        guint64 next_id;
        GHashTable *pending; /* guint64 id -> CorralPending */

        GHashTable *channels; /* guint32 id -> CorralChannel (ref) */
        GQueue senders; /* CorralChannel with queued writes and credit (unowned) */
        guint32 next_channel;

        guint hb_interval_ms;
        guint hb_max_missed;
        gboolean read_since_tick;
        gboolean hb_paused; /* corral_agent_client_set_heartbeat_paused() */
        guint missed;
        guint64 ping_seq;

        char *agent_version;
        char *boot_id;
        guint32 window;
        guint32 max_payload;
        GStrv features;
};

typedef struct {
        guint64 id;
        GTask *task;
        GCancellable *cancellable;
        gulong cancel_handler;
} CorralPending;

/* corral-agent-client.c */
/* Closes the connection now: fails everything, emits ::disconnected. Takes error. */
void _corral_client_lose (CorralAgentClient *self, GError *error);
/* The same from an idle callback, for callers that must not re-enter user code. */
void _corral_client_lose_later (CorralAgentClient *self, GError *error);
/* Closes the connection with CORRAL_AGENT_ERROR_PROTOCOL. */
void _corral_client_protocol_error (CorralAgentClient *self, const char *what);
void _corral_client_handle_hello (CorralAgentClient *self, const ProtoFrame *f);
void _corral_client_emit_watch_event (CorralAgentClient *self,
                                      guint watch,
                                      const char *path,
                                      const char *kind);

/* corral-agent-io.c */
void _corral_client_io_start (CorralAgentClient *self);
void _corral_client_io_stop (CorralAgentClient *self);
/* Queues a frame; takes buf. done (transfer full, nullable) is returned when it is written. */
void _corral_client_queue_frame (CorralAgentClient *self, guint8 *buf, gsize len, GTask *done);
/* Wakes the writer after a channel got data or credit. */
void _corral_client_want_write (CorralAgentClient *self);
void _corral_client_flush_outq_failed (CorralAgentClient *self, const GError *error);
void _corral_pending_free (CorralPending *p);

/* Runs func (object, key) from the current thread-default main context after cancellable fires
 * (in any thread). The caller disconnects the returned handler when the work completes first;
 * func must cope with a key that is gone. Returns 0 when cancellable is NULL. */
typedef void (*CorralCancelFunc) (gpointer object, guint64 key);
gulong _corral_cancel_connect (GCancellable *cancellable,
                               gpointer object,
                               guint64 key,
                               CorralCancelFunc func);

/* corral-agent-error.c */
GError *_corral_agent_error_from_json (const cJSON *error);
char *_corral_agent_sanitize (const char *text, gsize max_bytes);
/* Fire-and-forget request; errors are logged at debug level. method: a static string. */
void _corral_agent_call_ignore (CorralAgentClient *client, const char *method, cJSON *params);

/* corral-exec-spec.c: NULL with an error when the spec is unfit to send. */
cJSON *_corral_exec_spec_to_json (const CorralExecSpec *spec, guint32 channel, GError **error);

G_END_DECLS
