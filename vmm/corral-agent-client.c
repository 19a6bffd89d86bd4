/* corral-agent-client.c — connection lifecycle: connect, HELLO, heartbeats, disconnect.
 *
 * Frame I/O lives in corral-agent-io.c, channels and credit in corral-agent-channel.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include "corral-glib-compat.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gi18n-lib.h>
#include <sys/socket.h>

/* A window outside these bounds is refused: a huge one would let the guest make us hold that
 * much output per process before the spawn callback runs. */
#define MIN_WINDOW 4096u
#define MAX_WINDOW (16u * 1024 * 1024)
/* How many heartbeat timeouts the handshake may take, stale frames included. */
#define HANDSHAKE_TIMEOUTS 4

enum { PROP_0, PROP_CONNECTED, N_PROPS };
enum { SIGNAL_DISCONNECTED, SIGNAL_WATCH_EVENT, N_SIGNALS };

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (CorralAgentClient, corral_agent_client, G_TYPE_OBJECT)

static void
corral_agent_client_init (CorralAgentClient *self)
{
        self->fd = -1;
        self->hb_interval_ms = 1000;
        self->hb_max_missed = 3;
        self->pending = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
                                               (GDestroyNotify) _corral_pending_free);
        self->channels = g_hash_table_new (g_direct_hash, g_direct_equal);
        self->next_channel = 1;
        self->window = PROTO_DEFAULT_WINDOW;
        self->max_payload = PROTO_MAX_PAYLOAD;
}

static void
teardown (CorralAgentClient *self)
{
        _corral_client_io_stop (self);
        if (self->ping_source) {
                g_source_destroy (self->ping_source);
                g_clear_pointer (&self->ping_source, g_source_unref);
        }
        if (self->fd >= 0) {
                g_close (self->fd, NULL);
                self->fd = -1;
        }
        g_clear_pointer (&self->context, g_main_context_unref);
        self->session++;
        self->connected = FALSE;
}

static void lose_full (CorralAgentClient *self, GError *error, gboolean emit);

static void
corral_agent_client_dispose (GObject *object)
{
        CorralAgentClient *self = CORRAL_AGENT_CLIENT (object);

        /* Pending work holds a reference, so nothing is waiting on us here; handlers of
         * ::disconnected may point to freed data by now, so it is not emitted. */
        if (self->fd >= 0)
                lose_full (self,
                           g_error_new_literal (CORRAL_AGENT_ERROR,
                                                CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                                _ ("The client was destroyed")),
                           FALSE);
        if (self->lose_source) {
                g_source_destroy (self->lose_source);
                g_clear_pointer (&self->lose_source, g_source_unref);
        }
        g_clear_error (&self->lose_error);
        G_OBJECT_CLASS (corral_agent_client_parent_class)->dispose (object);
}

static void
corral_agent_client_finalize (GObject *object)
{
        CorralAgentClient *self = CORRAL_AGENT_CLIENT (object);

        g_hash_table_unref (self->pending);
        g_hash_table_unref (self->channels);
        proto_decoder_clear (&self->dec);
        g_free (self->agent_version);
        g_free (self->boot_id);
        g_strfreev (self->features);
        G_OBJECT_CLASS (corral_agent_client_parent_class)->finalize (object);
}

static void
corral_agent_client_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
        CorralAgentClient *self = CORRAL_AGENT_CLIENT (object);

        switch (id) {
        case PROP_CONNECTED:
                g_value_set_boolean (value, self->connected);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
        }
}

static void
corral_agent_client_class_init (CorralAgentClientClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_agent_client_dispose;
        object_class->finalize = corral_agent_client_finalize;
        object_class->get_property = corral_agent_client_get_property;

        properties[PROP_CONNECTED] = g_param_spec_boolean (
                "connected", NULL, NULL, FALSE,
                G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties (object_class, N_PROPS, properties);

        /* ::disconnected (GError *why): CONNECTION_LOST or PROTOCOL. */
        signals[SIGNAL_DISCONNECTED] =
                g_signal_new ("disconnected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
        /* ::watch-event (guint watch, const char *path, const char *kind) */
        signals[SIGNAL_WATCH_EVENT] = g_signal_new (
                "watch-event", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                G_TYPE_NONE, 3, G_TYPE_UINT, G_TYPE_STRING, G_TYPE_STRING);
}

CorralAgentClient *
corral_agent_client_new (void)
{
        return g_object_new (CORRAL_TYPE_AGENT_CLIENT, NULL);
}

void
_corral_client_emit_watch_event (CorralAgentClient *self,
                                 guint watch,
                                 const char *path,
                                 const char *kind)
{
        g_signal_emit (self, signals[SIGNAL_WATCH_EVENT], 0, watch, path, kind);
}

static void
lose_full (CorralAgentClient *self, GError *error, gboolean emit)
{
        G_GNUC_UNUSED g_autoptr (CorralAgentClient) keep = g_object_ref (self);
        g_autoptr (GError) why = error;
        g_autoptr (GError) lost = NULL;
        g_autoptr (GHashTable) pending = NULL;
        g_autoptr (GTask) connect_task = g_steal_pointer (&self->connect_task);
        gboolean was_connected = self->connected;
        GHashTableIter iter;
        gpointer value;

        if (self->fd < 0)
                return;
        g_debug ("agent connection closed: %s", why->message);
        if (self->connect_cancel)
                g_cancellable_disconnect (g_task_get_cancellable (connect_task),
                                          self->connect_cancel);
        self->connect_cancel = 0;
        pending = g_steal_pointer (&self->pending);
        self->pending = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
                                               (GDestroyNotify) _corral_pending_free);
        teardown (self);

        /* State is consistent from here on: callbacks may re-enter (even reconnect). */
        if (why->domain == CORRAL_AGENT_ERROR && why->code == CORRAL_AGENT_ERROR_CONNECTION_LOST)
                lost = g_error_copy (why);
        else
                lost = g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                    _ ("Connection to the guest agent lost: %s"), why->message);
        _corral_client_flush_outq_failed (self, lost);
        if (connect_task)
                g_task_return_error (connect_task, g_error_copy (why));
        g_hash_table_iter_init (&iter, pending);
        while (g_hash_table_iter_next (&iter, NULL, &value)) {
                CorralPending *p = value;

                g_task_return_error (p->task, g_error_copy (lost));
        }
        _corral_client_channels_fail (self, lost);
        if (was_connected && emit) {
                g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CONNECTED]);
                g_signal_emit (self, signals[SIGNAL_DISCONNECTED], 0, why);
        }
}

void
_corral_client_lose (CorralAgentClient *self, GError *error)
{
        lose_full (self, error, TRUE);
}

static gboolean
lose_later_cb (gpointer user_data)
{
        CorralAgentClient *self = user_data;
        GError *error = g_steal_pointer (&self->lose_error);

        g_clear_pointer (&self->lose_source, g_source_unref);
        if (error)
                _corral_client_lose (self, error);
        return G_SOURCE_REMOVE;
}

void
_corral_client_lose_later (CorralAgentClient *self, GError *error)
{
        if (self->lose_error || !self->context) {
                g_error_free (error);
                return;
        }
        self->lose_error = error;
        self->lose_source = g_idle_source_new ();
        g_source_set_callback (self->lose_source, lose_later_cb, self, NULL);
        g_source_attach (self->lose_source, self->context);
}

void
_corral_client_protocol_error (CorralAgentClient *self, const char *what)
{
        _corral_client_lose (self,
                             g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                          _ ("The guest agent broke the protocol: %s"), what));
}

void
corral_agent_client_close (CorralAgentClient *self)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        _corral_client_lose (self, g_error_new_literal (CORRAL_AGENT_ERROR,
                                                        CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                                        _ ("The connection was closed")));
}

/* Heartbeats ---------------------------------------------------------------------------------- */

/* Counts ticks without a frame rather than wall time since the last one, so that a host main
 * loop that stalled (a slow ::output handler, a suspended laptop) is not taken for a dead agent. */
static gboolean
heartbeat_cb (gpointer user_data)
{
        CorralAgentClient *self = user_data;
        guint8 payload[8];
        guint8 *buf;
        gsize len;

        if (self->hb_paused) {
                /* The guest is paused on purpose: silence is expected, and pings would only
                 * pile up in the socket. */
                self->missed = 0;
                self->read_since_tick = FALSE;
                return G_SOURCE_CONTINUE;
        }
        self->missed = self->read_since_tick ? 0 : self->missed + 1;
        self->read_since_tick = FALSE;
        if (self->missed >= self->hb_max_missed) {
                _corral_client_lose (
                        self, g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST,
                                           _ ("The guest agent did not answer for %u ms"),
                                           self->missed * self->hb_interval_ms));
                return G_SOURCE_REMOVE;
        }
        if (!self->connected && g_get_monotonic_time () > self->handshake_deadline_us) {
                _corral_client_lose (
                        self,
                        g_error_new_literal (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TIMEOUT,
                                             _ ("The guest agent did not answer the greeting")));
                return G_SOURCE_REMOVE;
        }
        proto_put_u32 (payload, (guint32) (self->ping_seq >> 32));
        proto_put_u32 (payload + 4, (guint32) self->ping_seq);
        self->ping_seq++;
        if (proto_frame_build (PROTO_FRAME_PING, 0, 0, payload, sizeof payload, &buf, &len) == 0)
                _corral_client_queue_frame (self, buf, len, NULL);
        return G_SOURCE_CONTINUE;
}

void
corral_agent_client_set_heartbeat (CorralAgentClient *self, guint interval_ms, guint max_missed)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        self->hb_interval_ms = interval_ms;
        self->hb_max_missed = MAX (max_missed, 1);
}

void
corral_agent_client_set_heartbeat_paused (CorralAgentClient *self, gboolean paused)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        self->hb_paused = paused;
        /* A fresh start on resume: the first tick after it counts as answered. */
        self->missed = 0;
        self->read_since_tick = TRUE;
}

static void
start_heartbeat (CorralAgentClient *self)
{
        if (self->hb_interval_ms == 0)
                return;
        self->handshake_deadline_us = g_get_monotonic_time () + (gint64) self->hb_interval_ms *
                                                                        self->hb_max_missed *
                                                                        HANDSHAKE_TIMEOUTS * 1000;
        self->ping_source = g_timeout_source_new (self->hb_interval_ms);
        g_source_set_callback (self->ping_source, heartbeat_cb, self, NULL);
        g_source_attach (self->ping_source, self->context);
}

/* Connect and HELLO ------------------------------------------------------------------------- */

static void
connect_cancelled (gpointer object, guint64 session)
{
        CorralAgentClient *self = object;

        if (self->connect_task && self->session == session)
                _corral_client_lose (self, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                                _ ("Operation was cancelled")));
}

static gboolean
send_hello (CorralAgentClient *self, GError **error)
{
        g_autoptr (cJSON) hello = cJSON_CreateObject ();
        guint8 *buf;
        gsize len;
        int r;

        r = proto_random_hex (self->nonce, PROTO_NONCE_HEX_LEN / 2);
        if (r < 0) {
                g_set_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INTERNAL,
                             _ ("Could not generate a nonce: %s"), g_strerror (-r));
                return FALSE;
        }
        cJSON_AddNumberToObject (hello, "version", PROTO_VERSION);
        cJSON_AddNumberToObject (hello, "min_version", PROTO_MIN_VERSION);
        cJSON_AddStringToObject (hello, "role", "host");
        cJSON_AddStringToObject (hello, "nonce", self->nonce);
        if (proto_frame_build_json (PROTO_FRAME_HELLO, hello, &buf, &len) < 0) {
                g_set_error_literal (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INTERNAL,
                                     _ ("Could not build the greeting"));
                return FALSE;
        }
        _corral_client_queue_frame (self, buf, len, NULL);
        return TRUE;
}

static gboolean
prepare_fd (int fd, gboolean *ret_is_socket, GError **error)
{
        int type;
        socklen_t type_len = sizeof type;

        if (fcntl (fd, F_SETFD, FD_CLOEXEC) < 0 || !g_unix_set_fd_nonblocking (fd, TRUE, NULL)) {
                int errsv = errno;

                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Unusable connection: %s"), g_strerror (errsv));
                return FALSE;
        }
        *ret_is_socket = getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0;
        return TRUE;
}

void
corral_agent_client_connect_fd_async (CorralAgentClient *self,
                                      int fd,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        g_autoptr (GError) error = NULL;
        g_autofd int owned_fd = fd;
        int r;

        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (self));
        g_return_if_fail (fd >= 0);

        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_agent_client_connect_fd_async);
        if (self->fd >= 0) {
                g_task_return_new_error (task, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_BUSY,
                                         _ ("Already connected to the guest agent"));
                return;
        }
        if (!self->dec_ready) {
                r = proto_decoder_init (&self->dec, PROTO_MAX_PAYLOAD);
                if (r < 0) {
                        g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s",
                                                 g_strerror (-r));
                        return;
                }
                self->dec_ready = TRUE;
        }
        if (!prepare_fd (owned_fd, &self->fd_is_socket, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        proto_decoder_reset (&self->dec);
        self->fd = g_steal_fd (&owned_fd);
        self->session++;
        self->context = g_main_context_ref_thread_default ();
        self->missed = 0;
        self->read_since_tick = FALSE;
        self->connect_task = g_steal_pointer (&task);
        _corral_client_io_start (self);
        start_heartbeat (self);
        if (!send_hello (self, &error)) {
                _corral_client_lose (self, g_steal_pointer (&error));
                return;
        }
        self->connect_cancel =
                _corral_cancel_connect (cancellable, self, self->session, connect_cancelled);
}

gboolean
corral_agent_client_connect_fd_finish (CorralAgentClient *self,
                                       GAsyncResult *result,
                                       GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        return g_task_propagate_boolean (G_TASK (result), error);
}

static char *
hello_string (const cJSON *hello, const char *key)
{
        const char *s = NULL;

        if (proto_json_get_string (hello, key, 128, &s) < 0)
                return NULL;
        return _corral_agent_sanitize (s, 64);
}

/* Reads the agent's limits; FALSE when they are out of range. */
static gboolean
hello_limits (CorralAgentClient *self, const cJSON *hello)
{
        int64_t window = PROTO_DEFAULT_WINDOW, max_payload = PROTO_MAX_PAYLOAD;
        const cJSON *features = NULL, *item;
        g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();

        if (proto_json_get_int (hello, "window", MIN_WINDOW, MAX_WINDOW, &window) == -EINVAL ||
            proto_json_get_int (hello, "max_payload", 1, PROTO_MAX_PAYLOAD, &max_payload) ==
                    -EINVAL ||
            proto_json_get_array (hello, "features", 64, &features) == -EINVAL)
                return FALSE;
        self->window = (guint32) window;
        self->max_payload = (guint32) max_payload;
        cJSON_ArrayForEach (item, features) {
                if (cJSON_IsString (item) && strlen (item->valuestring) <= 32)
                        g_strv_builder_add (builder, item->valuestring);
        }
        g_strfreev (self->features);
        self->features = g_strv_builder_end (builder);
        g_free (self->agent_version);
        self->agent_version = hello_string (hello, "agent_version");
        g_free (self->boot_id);
        self->boot_id = hello_string (hello, "boot_id");
        return TRUE;
}

static GError *
check_hello (CorralAgentClient *self, const cJSON *hello)
{
        const cJSON *err = NULL;
        const char *role = NULL;
        int64_t version = 0;

        if (proto_json_get_object (hello, "error", &err) == 0)
                return _corral_agent_error_from_json (err);
        if (proto_json_get_string (hello, "role", 16, &role) < 0 || !g_str_equal (role, "agent"))
                return g_error_new_literal (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                            _ ("The peer is not a guest agent"));
        if (proto_json_get_int (hello, "version", 0, G_MAXINT32, &version) < 0 ||
            version < PROTO_MIN_VERSION || version > PROTO_VERSION)
                return g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_UNSUPPORTED_VERSION,
                                    _ ("The guest agent speaks protocol version %d, this host %d"),
                                    (int) version, PROTO_VERSION);
        if (!hello_limits (self, hello))
                return g_error_new_literal (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                            _ ("The guest agent announced invalid limits"));
        return NULL;
}

void
_corral_client_handle_hello (CorralAgentClient *self, const ProtoFrame *f)
{
        g_autoptr (cJSON) hello = NULL;
        g_autoptr (GTask) task = NULL;
        const char *nonce = NULL;
        GError *error;

        if (self->connected || !self->connect_task) {
                g_debug ("ignoring an unexpected HELLO from the agent");
                return;
        }
        /* Anything but our nonce is a leftover of an earlier session. */
        if (proto_json_parse (f->payload, f->length, &hello) < 0 ||
            proto_json_get_string (hello, "nonce", PROTO_NONCE_HEX_LEN, &nonce) < 0 ||
            !g_str_equal (nonce, self->nonce)) {
                g_debug ("dropping a HELLO that does not answer this connection");
                return;
        }
        error = check_hello (self, hello);
        if (error) {
                _corral_client_lose (self, error);
                return;
        }
        if (self->connect_cancel)
                g_cancellable_disconnect (g_task_get_cancellable (self->connect_task),
                                          self->connect_cancel);
        self->connect_cancel = 0;
        self->connected = TRUE;
        task = g_steal_pointer (&self->connect_task);
        g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CONNECTED]);
        g_task_return_boolean (task, TRUE);
}

/* Getters -------------------------------------------------------------------------------------- */

gboolean
corral_agent_client_get_connected (CorralAgentClient *self)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), FALSE);
        return self->connected;
}

const char *
corral_agent_client_get_agent_version (CorralAgentClient *self)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), NULL);
        return self->agent_version;
}

const char *
corral_agent_client_get_boot_id (CorralAgentClient *self)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), NULL);
        return self->boot_id;
}

guint32
corral_agent_client_get_window (CorralAgentClient *self)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), 0);
        return self->window;
}

guint32
corral_agent_client_get_max_payload (CorralAgentClient *self)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), 0);
        return self->max_payload;
}

gboolean
corral_agent_client_has_feature (CorralAgentClient *self, const char *feature)
{
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (self), FALSE);
        return self->features && g_strv_contains ((const char *const *) self->features, feature);
}
