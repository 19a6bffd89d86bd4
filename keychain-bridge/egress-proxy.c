/* egress-proxy.c — the proxy object: connections and their threads, the listener, the
 * watchdog that enforces timeouts, policy swaps and the audit log. One connection's logic is in
 * egress-conn.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-private.h"
#include "egress-proxy-private.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <unistd.h>

#define WATCHDOG_TICK_US (100 * 1000)

G_DEFINE_FINAL_TYPE (CorralEgressProxy, corral_egress_proxy, G_TYPE_OBJECT)

enum {
        SESSION_ENDED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

static const CorralEgressLimits default_limits = {
        .max_connections = 256,
        .max_head = 16 * 1024,
        .max_headers = 100,
        .header_timeout_ms = 10 * 1000,
        .idle_timeout_ms = 120 * 1000,
        .connect_timeout_s = 10,
};

static void
corral_egress_proxy_dispose (GObject *object)
{
        CorralEgressProxy *self = CORRAL_EGRESS_PROXY (object);

        corral_egress_proxy_shutdown (self);
        g_clear_object (&self->resolver);
        G_OBJECT_CLASS (corral_egress_proxy_parent_class)->dispose (object);
}

static void
corral_egress_proxy_finalize (GObject *object)
{
        CorralEgressProxy *self = CORRAL_EGRESS_PROXY (object);

        if (self->pool)
                g_thread_pool_free (self->pool, TRUE, TRUE);
        g_clear_pointer (&self->policy, corral_egress_policy_unref);
        g_clear_pointer (&self->creds, corral_egress_credentials_unref);
        g_clear_pointer (&self->ca, egress_ca_free);
        g_clear_pointer (&self->retired_tls, g_ptr_array_unref);
        if (self->upstream_tls)
                gnutls_certificate_free_credentials (self->upstream_tls);
        g_free (self->upstream_ca_file);
        g_free (self->guest_session);
        g_free (self->ended);
        g_hash_table_unref (self->conns);
        g_ptr_array_unref (self->streams);
        g_clear_object (&self->stopping);
        g_clear_pointer (&self->audit, corral_audit_log_close);
        g_mutex_clear (&self->lock);
        g_cond_clear (&self->cond);
        G_OBJECT_CLASS (corral_egress_proxy_parent_class)->finalize (object);
}

static void
corral_egress_proxy_class_init (CorralEgressProxyClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_egress_proxy_dispose;
        object_class->finalize = corral_egress_proxy_finalize;
        signals[SESSION_ENDED] =
                g_signal_new ("session-ended", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
}

static void
corral_egress_proxy_init (CorralEgressProxy *self)
{
        g_mutex_init (&self->lock);
        g_cond_init (&self->cond);
        self->limits = default_limits;
        self->conns = g_hash_table_new (NULL, NULL);
        self->stopping = g_cancellable_new ();
        self->streams = g_ptr_array_new ();
        self->retired_tls = g_ptr_array_new_with_free_func (
                (GDestroyNotify) gnutls_certificate_free_credentials);
}

static gpointer watchdog_main (gpointer data);
static void conn_thread (gpointer data, gpointer user_data);

CorralEgressProxy *
corral_egress_proxy_new (CorralEgressPolicy *policy)
{
        CorralEgressProxy *self = g_object_new (CORRAL_TYPE_EGRESS_PROXY, NULL);

        self->policy = corral_egress_policy_ref (policy);
        self->resolver = g_resolver_get_default ();
        self->pool = g_thread_pool_new (conn_thread, self, (gint) self->limits.max_connections,
                                        FALSE, NULL);
        self->watchdog = g_thread_new ("egress-watchdog", watchdog_main, self);
        return self;
}

CorralEgressPolicy *
corral_egress_proxy_dup_policy (CorralEgressProxy *self)
{
        CorralEgressPolicy *p;

        g_mutex_lock (&self->lock);
        p = corral_egress_policy_ref (self->policy);
        g_mutex_unlock (&self->lock);
        return p;
}

/* An open connection stays open only while the new policy would still allow it. */
gboolean
_egress_still_allowed (CorralEgressPolicy *policy, EgressConn *conn)
{
        g_autofree char *rule = NULL;

        if (!corral_egress_policy_check (policy, conn->host, conn->kind, conn->port, &rule))
                return FALSE;
        return !conn->address || !corral_egress_addr_classify (conn->address) ||
               corral_egress_policy_allows_address (policy, conn->address, conn->port);
}

void
corral_egress_proxy_set_policy (CorralEgressProxy *self, CorralEgressPolicy *policy)
{
        GHashTableIter iter;
        gpointer key;

        g_return_if_fail (CORRAL_IS_EGRESS_PROXY (self));
        g_mutex_lock (&self->lock);
        g_clear_pointer (&self->policy, corral_egress_policy_unref);
        self->policy = corral_egress_policy_ref (policy);
        g_hash_table_iter_init (&iter, self->conns);
        while (g_hash_table_iter_next (&iter, &key, NULL)) {
                EgressConn *conn = key;

                if (conn->allowed && conn->host && !_egress_still_allowed (policy, conn)) {
                        conn->closed_by_policy = TRUE;
                        if (!conn->reason)
                                conn->reason = g_strdup ("closed: the policy changed");
                        g_cancellable_cancel (conn->cancellable);
                }
        }
        g_mutex_unlock (&self->lock);
}

void
corral_egress_proxy_set_resolver (CorralEgressProxy *self, GResolver *resolver)
{
        g_mutex_lock (&self->lock);
        g_set_object (&self->resolver, resolver);
        g_mutex_unlock (&self->lock);
}

void
corral_egress_proxy_set_limits (CorralEgressProxy *self, const CorralEgressLimits *limits)
{
        g_mutex_lock (&self->lock);
        self->limits = *limits;
        self->limits.max_head = CLAMP (limits->max_head, 1024, 64 * 1024);
        g_mutex_unlock (&self->lock);
        g_thread_pool_set_max_threads (self->pool, (gint) MAX (limits->max_connections, 1), NULL);
}

void
corral_egress_proxy_get_limits (CorralEgressProxy *self, CorralEgressLimits *ret_limits)
{
        g_mutex_lock (&self->lock);
        *ret_limits = self->limits;
        g_mutex_unlock (&self->lock);
}

gboolean
corral_egress_proxy_set_audit_path (CorralEgressProxy *self, const char *path, GError **error)
{
        CorralAuditLog *log = NULL, *old;

        if (path && !(log = corral_audit_log_open (path, error)))
                return FALSE;
        g_mutex_lock (&self->lock);
        old = g_steal_pointer (&self->audit);
        self->audit = log;
        g_mutex_unlock (&self->lock);
        corral_audit_log_close (old);
        return TRUE;
}

void
corral_egress_proxy_set_audit_journal (CorralEgressProxy *self, gboolean copy)
{
        g_autoptr (GError) error = NULL;

        g_mutex_lock (&self->lock);
        if (self->audit && !corral_audit_log_set_journal (self->audit, copy, &error))
                g_warning ("%s", error->message);
        g_mutex_unlock (&self->lock);
}

void
corral_egress_proxy_set_audit_limits (CorralEgressProxy *self, guint64 max_bytes, guint generations)
{
        g_mutex_lock (&self->lock);
        if (self->audit)
                corral_audit_log_set_limits (self->audit, max_bytes, generations);
        g_mutex_unlock (&self->lock);
}

void
corral_egress_proxy_flush_audit (CorralEgressProxy *self)
{
        g_mutex_lock (&self->lock);
        if (self->audit)
                corral_audit_log_flush (self->audit);
        g_mutex_unlock (&self->lock);
}

/* Credentials ------------------------------------------------------------------------------------ */

static gboolean
ensure_tls (CorralEgressProxy *self, GError **error)
{
        g_autoptr (EgressCa) ca = NULL;
        gnutls_certificate_credentials_t up = NULL;

        g_mutex_lock (&self->lock);
        if (self->ca && self->upstream_tls) {
                g_mutex_unlock (&self->lock);
                return TRUE;
        }
        g_mutex_unlock (&self->lock);
        if (!(ca = egress_ca_new (error)) ||
            !(up = egress_upstream_credentials_new (self->upstream_ca_file, error)))
                return FALSE;
        g_mutex_lock (&self->lock);
        if (!self->ca)
                self->ca = g_steal_pointer (&ca);
        if (!self->upstream_tls)
                self->upstream_tls = g_steal_pointer (&up);
        g_mutex_unlock (&self->lock);
        if (up)
                gnutls_certificate_free_credentials (up);
        return TRUE;
}

gboolean
corral_egress_proxy_set_credentials (CorralEgressProxy *self,
                                     CorralEgressCredentials *creds,
                                     GError **error)
{
        g_return_val_if_fail (CORRAL_IS_EGRESS_PROXY (self), FALSE);
        if (creds && !ensure_tls (self, error))
                return FALSE;
        g_mutex_lock (&self->lock);
        g_clear_pointer (&self->creds, corral_egress_credentials_unref);
        self->creds = creds ? corral_egress_credentials_ref (creds) : NULL;
        g_mutex_unlock (&self->lock);
        return TRUE;
}

gboolean
corral_egress_proxy_set_upstream_ca_file (CorralEgressProxy *self, const char *path, GError **error)
{
        gnutls_certificate_credentials_t up = egress_upstream_credentials_new (path, error);

        if (!up)
                return FALSE;
        g_mutex_lock (&self->lock);
        g_free (self->upstream_ca_file);
        self->upstream_ca_file = g_strdup (path);
        /* Connections may still use the old ones: they are kept until finalize. */
        if (self->upstream_tls)
                g_ptr_array_add (self->retired_tls, self->upstream_tls);
        self->upstream_tls = up;
        g_mutex_unlock (&self->lock);
        return TRUE;
}

char *
corral_egress_proxy_dup_ca_pem (CorralEgressProxy *self, GError **error)
{
        char *pem;

        if (!ensure_tls (self, error))
                return NULL;
        g_mutex_lock (&self->lock);
        pem = g_strdup (egress_ca_get_pem (self->ca));
        g_mutex_unlock (&self->lock);
        return pem;
}

char *
corral_egress_proxy_dup_ended (CorralEgressProxy *self)
{
        char *name;

        g_mutex_lock (&self->lock);
        name = g_strdup (self->ended);
        g_mutex_unlock (&self->lock);
        return name;
}

void
_egress_end_session (EgressConn *conn, const char *name)
{
        CorralEgressProxy *self = conn->proxy;
        CorralEgressCredentials *creds = NULL;
        GHashTableIter iter;
        gpointer key;
        gboolean first;

        g_mutex_lock (&self->lock);
        first = self->ended == NULL;
        if (first)
                self->ended = g_strdup (name);
        if (self->creds)
                creds = corral_egress_credentials_ref (self->creds);
        g_hash_table_iter_init (&iter, self->conns);
        while (g_hash_table_iter_next (&iter, &key, NULL)) {
                EgressConn *other = key;

                if (other == conn)
                        continue;
                if (!other->reason)
                        other->reason = g_strdup ("closed: the session ended");
                g_cancellable_cancel (other->cancellable);
        }
        g_mutex_unlock (&self->lock);
        /* Nothing this session held is swapped in again: the placeholders mean nothing now. */
        if (creds) {
                corral_egress_credentials_revoke (creds);
                corral_egress_credentials_unref (creds);
        }
        if (first)
                g_signal_emit (self, signals[SESSION_ENDED], 0, name, conn->host);
}

guint
corral_egress_proxy_get_active (CorralEgressProxy *self)
{
        guint n;

        g_mutex_lock (&self->lock);
        n = self->active;
        g_mutex_unlock (&self->lock);
        return n;
}

/* Connections -------------------------------------------------------------------------------- */

void
_egress_touch (EgressConn *conn)
{
        g_mutex_lock (&conn->proxy->lock);
        conn->last_activity = g_get_monotonic_time ();
        g_mutex_unlock (&conn->proxy->lock);
}

static void
conn_thread (gpointer data, gpointer user_data)
{
        EgressConn *conn = data;
        CorralEgressProxy *self = conn->proxy;

        _egress_conn_run (conn);
        _egress_audit (self, conn);
        g_mutex_lock (&self->lock);
        g_hash_table_remove (self->conns, conn);
        g_mutex_unlock (&self->lock);
        _egress_conn_free (conn);
        g_mutex_lock (&self->lock);
        self->active--;
        g_cond_broadcast (&self->cond);
        g_mutex_unlock (&self->lock);
}

static void
refuse_busy (GIOStream *client)
{
        static const char busy[] =
                "HTTP/1.1 503 Service Unavailable\r\n"
                "X-Corral-Blocked: connection-limit\r\n"
                "Content-Type: text/plain; charset=utf-8\r\n"
                "Content-Length: 64\r\nConnection: close\r\n\r\n"
                "blocked by sandbox: too many open connections; try again later\r\n";
        GOutputStream *out = g_io_stream_get_output_stream (client);
        GSocket *sock = G_IS_SOCKET_CONNECTION (client)
                                ? g_socket_connection_get_socket (G_SOCKET_CONNECTION (client))
                                : NULL;

        /* Never block the caller on a peer that does not read. */
        if (sock)
                g_socket_set_blocking (sock, FALSE);
        g_output_stream_write (out, busy, sizeof busy - 1, NULL, NULL);
        g_io_stream_close (client, NULL, NULL);
}

void
corral_egress_proxy_handle (CorralEgressProxy *self, GIOStream *client)
{
        EgressConn *conn;

        g_return_if_fail (CORRAL_IS_EGRESS_PROXY (self));
        g_return_if_fail (G_IS_IO_STREAM (client));
        g_mutex_lock (&self->lock);
        if (self->stop || self->active >= self->limits.max_connections) {
                g_mutex_unlock (&self->lock);
                refuse_busy (client);
                return;
        }
        conn = g_new0 (EgressConn, 1);
        conn->proxy = self;
        conn->id = ++self->next_id;
        conn->client = g_object_ref (client);
        conn->cancellable = g_cancellable_new ();
        conn->started = conn->last_activity = g_get_monotonic_time ();
        conn->buf = g_malloc (EGRESS_BUF);
        self->active++;
        g_hash_table_add (self->conns, conn);
        g_mutex_unlock (&self->lock);
        /* Pooled threads: no thread start per request (latency). The pool's limit is
         * max_connections, which handle () enforces first, so nothing ever queues. */
        if (g_thread_pool_push (self->pool, conn, NULL))
                return;
        g_mutex_lock (&self->lock);
        g_hash_table_remove (self->conns, conn);
        self->active--;
        g_mutex_unlock (&self->lock);
        _egress_conn_free (conn);
        refuse_busy (client);
}

/* Watchdog: a slow or silent peer is cut off by time, whatever it does. */
static gpointer
watchdog_main (gpointer data)
{
        CorralEgressProxy *self = data;

        g_mutex_lock (&self->lock);
        while (!self->stop) {
                gint64 now = g_get_monotonic_time ();
                GHashTableIter iter;
                gpointer key;

                g_hash_table_iter_init (&iter, self->conns);
                while (g_hash_table_iter_next (&iter, &key, NULL)) {
                        EgressConn *conn = key;
                        gint64 deadline =
                                conn->head_done
                                        ? conn->last_activity +
                                                  (gint64) self->limits.idle_timeout_ms * 1000
                                        : conn->started +
                                                  (gint64) self->limits.header_timeout_ms * 1000;

                        if (now > deadline && !g_cancellable_is_cancelled (conn->cancellable)) {
                                if (!conn->reason)
                                        conn->reason =
                                                g_strdup (conn->head_done ? "idle timeout"
                                                                          : "header timeout");
                                g_cancellable_cancel (conn->cancellable);
                        }
                }
                /* Denials folded into a count reach the log within a tick of their time. */
                if (self->audit)
                        corral_audit_log_flush_due (self->audit);
                g_cond_wait_until (&self->cond, &self->lock, now + WATCHDOG_TICK_US);
        }
        g_mutex_unlock (&self->lock);
        return NULL;
}

/* Listener ----------------------------------------------------------------------------------- */

static gpointer
accept_main (gpointer data)
{
        CorralEgressProxy *self = data;

        for (;;) {
                g_autoptr (GError) error = NULL;
                g_autoptr (GSocket) sock = g_socket_accept (self->listener, self->stopping, &error);
                g_autoptr (GSocketConnection) conn = NULL;

                if (!sock) {
                        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                                return NULL;
                        g_warning ("egress proxy: accept failed: %s", error->message);
                        g_usleep (100 * 1000);
                        continue;
                }
                if (g_socket_get_family (sock) != G_SOCKET_FAMILY_UNIX)
                        g_socket_set_option (sock, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
                conn = g_socket_connection_factory_create_connection (sock);
                corral_egress_proxy_handle (self, G_IO_STREAM (conn));
        }
}

gboolean
corral_egress_proxy_listen (CorralEgressProxy *self,
                            GSocketAddress *address,
                            GSocketAddress **ret_address,
                            GError **error)
{
        g_autoptr (GSocket) sock = NULL;
        GSocketFamily family = g_socket_address_get_family (address);

        g_return_val_if_fail (self->listener == NULL, FALSE);
        sock = g_socket_new (family, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, error);
        if (!sock)
                return FALSE;
        if (!g_socket_bind (sock, address, TRUE, error) || !g_socket_listen (sock, error))
                return FALSE;
        if (ret_address && !(*ret_address = g_socket_get_local_address (sock, error)))
                return FALSE;
        self->listener = g_steal_pointer (&sock);
        self->acceptor = g_thread_new ("egress-accept", accept_main, self);
        return TRUE;
}

void
corral_egress_proxy_shutdown (CorralEgressProxy *self)
{
        GHashTableIter iter;
        gpointer key;
        GPtrArray *streams;

        g_cancellable_cancel (self->stopping);
        if (self->acceptor)
                g_thread_join (g_steal_pointer (&self->acceptor));
        /* Guest streams stop feeding new connections before the connections are cancelled. */
        g_mutex_lock (&self->lock);
        streams = g_steal_pointer (&self->streams);
        self->streams = g_ptr_array_new ();
        g_mutex_unlock (&self->lock);
        for (guint i = 0; i < streams->len; i++)
                _egress_stream_server_free (g_ptr_array_index (streams, i));
        g_ptr_array_unref (streams);
        g_clear_object (&self->listener);
        g_mutex_lock (&self->lock);
        self->stop = TRUE;
        g_hash_table_iter_init (&iter, self->conns);
        while (g_hash_table_iter_next (&iter, &key, NULL))
                g_cancellable_cancel (((EgressConn *) key)->cancellable);
        while (self->active > 0)
                g_cond_wait (&self->cond, &self->lock);
        g_cond_broadcast (&self->cond);
        g_mutex_unlock (&self->lock);
        if (self->watchdog)
                g_thread_join (g_steal_pointer (&self->watchdog));
}

/* Audit -------------------------------------------------------------------------------------- */

static void
add_key_part (GString *key, const char *value)
{
        /* Length-prefixed: no host or reason the guest picks makes two records look alike. */
        g_string_append_printf (key, "%zu:%s", value ? strlen (value) + 1 : 0, value ? value : "");
}

/* What makes two denials "the same" for folding: all but the time, connection and bytes. */
static char *
fold_key (EgressConn *conn, const char *addr)
{
        GString *key = g_string_new (NULL);

        add_key_part (key, conn->method);
        add_key_part (key, conn->host);
        add_key_part (key, addr);
        add_key_part (key, conn->rule);
        add_key_part (key, conn->reason);
        add_key_part (key, conn->credential);
        g_string_append_printf (key, "%u:%u", conn->port, conn->status);
        return g_string_free (key, FALSE);
}

void
_egress_audit (CorralEgressProxy *self, EgressConn *conn)
{
        cJSON *rec = cJSON_CreateObject ();
        g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
        g_autofree char *ts = g_date_time_format_iso8601 (now);
        g_autofree char *addr = conn->address ? g_inet_address_to_string (conn->address) : NULL;
        g_autofree char *key = NULL;

        cJSON_AddStringToObject (rec, "time", ts);
        cJSON_AddNumberToObject (rec, "connection", (double) conn->id);
        cJSON_AddItemToObject (rec, "method",
                               conn->method ? cJSON_CreateString (conn->method)
                                            : cJSON_CreateNull ());
        cJSON_AddItemToObject (rec, "host",
                               conn->host ? cJSON_CreateString (conn->host) : cJSON_CreateNull ());
        cJSON_AddNumberToObject (rec, "port", conn->port);
        cJSON_AddItemToObject (rec, "address",
                               addr ? cJSON_CreateString (addr) : cJSON_CreateNull ());
        cJSON_AddStringToObject (rec, "decision", conn->allowed ? "allowed" : "denied");
        cJSON_AddItemToObject (rec, "rule",
                               conn->rule ? cJSON_CreateString (conn->rule) : cJSON_CreateNull ());
        if (conn->reason)
                cJSON_AddStringToObject (rec, "reason", conn->reason);
        if (conn->status)
                cJSON_AddNumberToObject (rec, "status", conn->status);
        cJSON_AddNumberToObject (rec, "bytes_up", (double) conn->bytes_up);
        cJSON_AddNumberToObject (rec, "bytes_down", (double) conn->bytes_down);
        cJSON_AddItemToObject (rec, "credential",
                               conn->credential ? cJSON_CreateString (conn->credential)
                                                : cJSON_CreateNull ());
        /* Every allowed connection is its own line; denials may repeat by the thousand. */
        if (!conn->allowed)
                key = fold_key (conn, addr);
        g_mutex_lock (&self->lock);
        /* One write() per record on an O_APPEND fd, under the lock: records never interleave. */
        if (self->audit)
                corral_audit_log_append (self->audit, g_steal_pointer (&rec), key);
        g_mutex_unlock (&self->lock);
        cJSON_Delete (rec);
}
