/* egress-conn.c — one client connection of the egress proxy, on its own thread.
 *
 * read head -> parse -> policy -> resolve once -> check every address -> (CONNECT: 200, read
 * the ClientHello, SNI == host) -> connect to a checked address -> relay. Every exit path leaves
 * conn->allowed/rule/reason/status set for the audit record.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-hello.h"
#include "egress-proxy-private.h"

#include <glib/gi18n.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

void
_egress_conn_free (EgressConn *conn)
{
        if (conn->upstream)
                g_io_stream_close (G_IO_STREAM (conn->upstream), NULL, NULL);
        g_io_stream_close (conn->client, NULL, NULL);
        g_clear_object (&conn->upstream);
        g_clear_object (&conn->client);
        g_clear_object (&conn->cancellable);
        g_clear_object (&conn->address);
        g_free (conn->method);
        g_free (conn->host);
        g_free (conn->rule);
        g_free (conn->reason);
        g_free (conn->credential);
        g_clear_pointer (&conn->creds, corral_egress_credentials_unref);
        g_free (conn->buf);
        g_free (conn);
}

/* Client I/O ---------------------------------------------------------------------------------- */

/* Bytes the head reader read past the head come first. */
gssize
_egress_client_read (EgressConn *conn, void *buf, gsize size, GError **error)
{
        gssize n;

        if (conn->buf_len > 0) {
                n = (gssize) MIN (size, conn->buf_len);
                memcpy (buf, conn->buf + conn->buf_start, (gsize) n);
                conn->buf_start += (gsize) n;
                conn->buf_len -= (gsize) n;
                return n;
        }
        n = g_input_stream_read (g_io_stream_get_input_stream (conn->client), buf, size,
                                 conn->cancellable, error);
        if (n > 0)
                _egress_touch (conn);
        return n;
}

gboolean
_egress_write_all (GIOStream *stream, const void *data, gsize len, EgressConn *conn, GError **error)
{
        gboolean ok = g_output_stream_write_all (g_io_stream_get_output_stream (stream), data, len,
                                                 NULL, conn->cancellable, error);

        if (ok)
                _egress_touch (conn);
        return ok;
}

static void
set_reason (EgressConn *conn, const char *reason)
{
        g_mutex_lock (&conn->proxy->lock);
        if (!conn->reason)
                conn->reason = g_strdup (reason);
        g_mutex_unlock (&conn->proxy->lock);
}

/* Refusals ------------------------------------------------------------------------------------ */

static char *
explain (EgressConn *conn, const char *rule, const char *detail)
{
        const char *host = conn->host ? conn->host : _ ("this request");

        if (g_str_has_prefix (rule, "deny:"))
                return g_strdup_printf (_ ("blocked by sandbox: %s matches the denied host rule "
                                           "“%s”; ask the user to change it in Settings → Network"),
                                        host, rule + 5);
        /* The organisation's rules: the person cannot change them in Settings. */
        if (g_str_equal (rule, "managed-deny"))
                return g_strdup_printf (_ ("blocked by sandbox: connections to %s are blocked by "
                                           "the user's organisation (its managed policy); the "
                                           "user cannot allow them"),
                                        host);
        if (g_str_equal (rule, "managed-preset"))
                return g_strdup_printf (_ ("blocked by sandbox: the user's organisation allows "
                                           "no wider network access than this (its managed "
                                           "policy), so %s cannot be reached; ask the user to "
                                           "allow it in Settings → Network if the organisation "
                                           "lets them"),
                                        host);
        if (g_str_equal (rule, "managed-no-approvals"))
                return g_strdup_printf (_ ("blocked by sandbox: the user allowed %s, but their "
                                           "organisation does not let them allow hosts (its "
                                           "managed policy); only hosts it allows can be "
                                           "reached"),
                                        host);
        if (g_str_equal (rule, "preset:none"))
                return g_strdup_printf (_ ("blocked by sandbox: internet access is off for this "
                                           "session; ask the user to allow %s in Settings → "
                                           "Network"),
                                        host);
        if (g_str_equal (rule, "default-deny"))
                return g_strdup_printf (
                        _ ("blocked by sandbox: %s is not in the allowed hosts; ask "
                           "the user to allow it in Settings → Network"),
                        host);
        if (g_str_equal (rule, "private-address"))
                return g_strdup_printf (_ ("blocked by sandbox: %s resolves to a non-public "
                                           "address (%s); only a rule naming that exact address "
                                           "and port can allow it, in Settings → Network"),
                                        host, detail);
        if (g_str_equal (rule, "host-alias-needs-port"))
                return g_strdup_printf (_ ("blocked by sandbox: %s is the user's own computer; "
                                           "only a rule naming it with this port (%s) can allow "
                                           "it, in Settings → Network"),
                                        host, detail);
        if (g_str_equal (rule, "unknown-placeholder"))
                return g_strdup_printf (_ ("blocked by sandbox: the credential token sent to %s is "
                                           "not one of this session's (tokens end with their "
                                           "session); use the token from the environment as it "
                                           "is now"),
                                        host);
        if (g_str_equal (rule, "credential-misplaced"))
                return g_strdup_printf (_ ("blocked by sandbox: a credential token may only be "
                                           "sent as %s"),
                                        detail);
        if (g_str_equal (rule, "credential-not-for-host"))
                return g_strdup_printf (_ ("blocked by sandbox: the credential %s is not allowed "
                                           "for %s; ask the user to bind it to this host in "
                                           "Settings → Credentials"),
                                        detail, host);
        if (g_str_equal (rule, "credential-needs-tls"))
                return g_strdup_printf (_ ("blocked by sandbox: credentials are only sent over "
                                           "HTTPS; use https:// for %s"),
                                        host);
        if (g_str_equal (rule, "upstream-certificate"))
                return g_strdup_printf (_ ("blocked by sandbox: the certificate of %s could not "
                                           "be verified (%s)"),
                                        host, detail);
        if (g_str_equal (rule, "secret-from-guest"))
                return g_strdup_printf (_ ("blocked by sandbox: a program in this VM sent the real "
                                           "value of the credential %s, which only the user's "
                                           "computer may hold; the VM's network is now off until "
                                           "the user restarts the VM. Tell the user at once what "
                                           "you were doing; do not retry"),
                                        detail);
        if (g_str_equal (rule, "session-ended"))
                return g_strdup (_ ("blocked by sandbox: this VM's network is off because a "
                                    "program in it sent the real value of a credential; only "
                                    "the user can turn it on again, by restarting the VM"));
        if (g_str_equal (rule, "response-unmaskable"))
                return g_strdup_printf (_ ("blocked by sandbox: the reply of %s to a request "
                                           "carrying a credential could not be checked for that "
                                           "credential (%s); ask for it whole and uncompressed"),
                                        host, detail);
        if (g_str_equal (rule, "bad-request"))
                return g_strdup_printf (_ ("blocked by sandbox: the proxy request was refused "
                                           "(%s); send a well-formed HTTP/1.1 proxy request"),
                                        detail);
        return g_strdup_printf (_ ("blocked by sandbox: %s could not be reached (%s)"), host,
                                detail);
}

static const char *
status_text (guint status)
{
        switch (status) {
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 431:
                return "Request Header Fields Too Large";
        default:
                return "Bad Gateway";
        }
}

/* Records a refusal and returns the response that explains it. rule must be header-safe. */
GString *
_egress_refusal (EgressConn *conn, guint status, const char *rule, const char *detail)
{
        g_autofree char *msg = explain (conn, rule, detail);
        g_autofree char *body = g_strconcat (msg, "\r\n", NULL);
        GString *resp = g_string_new (NULL);

        g_string_append_printf (resp,
                                "HTTP/1.1 %u %s\r\nX-Corral-Blocked: %s\r\n"
                                "Content-Type: text/plain; charset=utf-8\r\n"
                                "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                status, status_text (status), rule, strlen (body), body);
        g_mutex_lock (&conn->proxy->lock);
        conn->allowed = FALSE;
        g_free (conn->rule);
        conn->rule = g_strdup (rule);
        if (!conn->reason && detail)
                conn->reason = g_strdup (detail);
        conn->status = status;
        g_mutex_unlock (&conn->proxy->lock);
        return resp;
}

static void
send_refusal (EgressConn *conn, const GString *resp)
{
        if (conn->send_refusal)
                conn->send_refusal (conn, resp);
        else if (!conn->replied)
                _egress_write_all (conn->client, resp->str, resp->len, conn, NULL);
}

void
_egress_refuse (EgressConn *conn, guint status, const char *rule, const char *detail)
{
        g_autoptr (GString) resp = _egress_refusal (conn, status, rule, detail);

        send_refusal (conn, resp);
}

void
_egress_secret_from_guest (EgressConn *conn, gint64 index)
{
        g_autofree char *name = _egress_credentials_dup_name (conn->creds, (guint) index);
        g_autoptr (GString) resp =
                _egress_refusal (conn, 403, "secret-from-guest", name ? name : _ ("a credential"));

        /* Ended before the guest hears of it: its next request already finds it so. */
        _egress_end_session (conn, name ? name : "");
        send_refusal (conn, resp);
}

gboolean
_egress_check_guest_bytes (EgressConn *conn, const void *data, gsize len)
{
        g_autoptr (EgressMask) mask = NULL;
        gint64 found;

        if (!conn->creds)
                return TRUE;
        mask = _egress_credentials_dup_mask (conn->creds);
        /* Only reads: the bytes are not masked, the scan stops at the first form found. */
        found = egress_mask_scan (mask, (guint8 *) data, len, FALSE);
        if (found < 0)
                return TRUE;
        _egress_secret_from_guest (conn, found);
        return FALSE;
}

/* Head ---------------------------------------------------------------------------------------- */

/* Reads until a complete head; the rest of what was read stays in conn->buf. */
static CorralHttpRequest *
read_head (EgressConn *conn, const CorralEgressLimits *limits, GError **error)
{
        gsize len = 0;
        gssize head = 0;

        while (head == 0) {
                gssize n = g_input_stream_read (g_io_stream_get_input_stream (conn->client),
                                                conn->buf + len, EGRESS_BUF - len,
                                                conn->cancellable, error);
                if (n < 0)
                        return NULL;
                if (n == 0) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED,
                                             "closed before a complete request head");
                        return NULL;
                }
                len += (gsize) n;
                head = corral_http_head_length ((const char *) conn->buf, len, limits->max_head);
        }
        if (head < 0) {
                conn->buf_start = len; /* still checked for secrets */
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_TOO_LARGE,
                                     "request head too large");
                return NULL;
        }
        conn->buf_start = (gsize) head;
        conn->buf_len = len - (gsize) head;
        return corral_http_request_parse ((const char *) conn->buf, (gsize) head,
                                          limits->max_headers, error);
}

/* Resolution ---------------------------------------------------------------------------------- */

/* Resolves once and checks every address; returns the list to connect to, in order. A name
 * that resolves to any non-public address not allowed by an exact rule is refused as a whole:
 * a rebinding answer mixing public and private addresses gets nothing. */
static GList *
resolve_checked (EgressConn *conn, CorralEgressPolicy *policy, GResolver *resolver)
{
        g_autoptr (GError) error = NULL;
        GList *addrs;

        if (conn->kind == CORRAL_HOST_NAME && g_str_equal (conn->host, CORRAL_EGRESS_HOST_ALIAS)) {
                g_autofree char *rule = NULL;

                /* Never from DNS, never opened by a preset or a wildcard. */
                if (!corral_egress_policy_allows_host_alias (policy, conn->port)) {
                        rule = g_strdup_printf ("%s:%u", CORRAL_EGRESS_HOST_ALIAS, conn->port);
                        _egress_refuse (conn, 403, "host-alias-needs-port", rule);
                        return NULL;
                }
                return g_list_prepend (NULL, g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4));
        }
        if (conn->kind == CORRAL_HOST_NAME)
                addrs = g_resolver_lookup_by_name (resolver, conn->host, conn->cancellable, &error);
        else
                addrs = g_list_prepend (NULL, g_inet_address_new_from_string (conn->host));
        if (!addrs) {
                _egress_refuse (conn, 502, "resolve-failed", error ? error->message : "no address");
                return NULL;
        }
        for (GList *l = addrs; l; l = l->next) {
                const char *why = corral_egress_addr_classify (l->data);

                if (why && !corral_egress_policy_allows_address (policy, l->data, conn->port)) {
                        g_autofree char *a = g_inet_address_to_string (l->data);
                        g_autofree char *detail = g_strdup_printf ("%s, %s", a, why);

                        _egress_refuse (conn, 403, "private-address", detail);
                        g_resolver_free_addresses (addrs);
                        return NULL;
                }
        }
        return addrs;
}

/* Connects to the checked addresses only (never to a name: no second resolution). */
static gboolean
connect_upstream (EgressConn *conn, GList *addrs, guint timeout_s)
{
        g_autoptr (GSocketClient) client = g_socket_client_new ();
        g_autoptr (GError) error = NULL;

        g_socket_client_set_enable_proxy (client, FALSE);
        g_socket_client_set_timeout (client, timeout_s);
        for (GList *l = addrs; l; l = l->next) {
                g_autoptr (GSocketAddress) sa = g_inet_socket_address_new (l->data, conn->port);

                g_clear_error (&error);
                conn->upstream = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (sa),
                                                          conn->cancellable, &error);
                if (conn->upstream) {
                        g_mutex_lock (&conn->proxy->lock);
                        conn->address = g_object_ref (l->data);
                        g_mutex_unlock (&conn->proxy->lock);
                        GSocket *sock = g_socket_connection_get_socket (conn->upstream);

                        /* GSocketClient's timeout stays on the socket as an I/O timeout: a
                         * server that thinks for longer than it would be cut off. Idle time is
                         * the watchdog's business. */
                        g_socket_set_timeout (sock, 0);
                        g_socket_set_option (sock, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
                        return TRUE;
                }
        }
        _egress_refuse (conn, 502, "connect-failed", error->message);
        return FALSE;
}

gboolean
_egress_conn_open_upstream (EgressConn *conn,
                            CorralEgressPolicy *policy,
                            GList *addrs,
                            guint timeout_s)
{
        CorralEgressProxy *proxy = conn->proxy;

        if (!connect_upstream (conn, addrs, timeout_s))
                return FALSE;
        g_mutex_lock (&proxy->lock);
        conn->allowed = TRUE;
        /* The policy changed while this request was being checked: judge it again now that
         * set_policy () can see it. */
        if (proxy->policy != policy && !_egress_still_allowed (proxy->policy, conn)) {
                conn->reason =
                        conn->reason ? conn->reason : g_strdup ("closed: the policy changed");
                g_cancellable_cancel (conn->cancellable);
        }
        g_mutex_unlock (&proxy->lock);
        return TRUE;
}

void
_egress_conn_head_done (EgressConn *conn)
{
        g_mutex_lock (&conn->proxy->lock);
        conn->head_done = TRUE;
        conn->last_activity = g_get_monotonic_time ();
        g_mutex_unlock (&conn->proxy->lock);
}

/* Request bodies ------------------------------------------------------------------------------ */

static gssize
plain_client_read (EgressConn *conn, gpointer ctx, void *buf, gsize n)
{
        return _egress_client_read (conn, buf, n, NULL);
}

static gboolean
plain_upstream_write (EgressConn *conn, gpointer ctx, const void *buf, gsize n)
{
        return _egress_write_all (G_IO_STREAM (conn->upstream), buf, n, conn, NULL);
}

/* Body bytes (chunk data when chunked) through the check: what may go on now is written, as a
 * chunk of its own when chunked (the check sees the data without the guest's chunk framing,
 * so a secret split across chunks is found too). */
static gboolean
pass_checked (EgressConn *conn,
              EgressMaskStream *check,
              const EgressEndpoint *to,
              gboolean chunked,
              const guint8 *data,
              gsize n,
              gboolean last,
              GByteArray *out)
{
        const guint8 *ready;
        gsize len;
        gint64 found = egress_mask_stream_feed (check, data, n, last, &ready, &len);

        if (found >= 0) {
                _egress_secret_from_guest (conn, found);
                return FALSE;
        }
        if (!chunked) {
                conn->bytes_up += len;
                return len == 0 || to->write (conn, to->ctx, ready, len);
        }
        g_byte_array_set_size (out, 0);
        corral_http_append_chunk (out, ready, len, last);
        conn->bytes_up += out->len;
        return out->len == 0 || to->write (conn, to->ctx, out->data, out->len);
}

/* Copies exactly the request body (Content-Length or chunked) from one end to the other. Bytes
 * after it (a pipelined second request) are never forwarded: one request per connection. */
gboolean
_egress_forward_body (EgressConn *conn,
                      const CorralHttpRequest *req,
                      const EgressEndpoint *from,
                      const EgressEndpoint *to,
                      EgressMask *detect)
{
        g_autofree guint8 *buf = g_malloc (EGRESS_BUF);
        guint64 left = req->content_length > 0 ? (guint64) req->content_length : 0;
        CorralHttpChunked ch = { 0 };
        g_autoptr (EgressMaskStream) check = NULL;
        g_autoptr (GByteArray) out = NULL;

        if (detect && !egress_mask_is_empty (detect)) {
                check = egress_mask_stream_new (detect, FALSE, EGRESS_BUF);
                out = g_byte_array_sized_new (EGRESS_BUF + 64);
        }
        while (req->chunked ? !corral_http_chunked_done (&ch) : left > 0) {
                gsize want = req->chunked ? EGRESS_BUF : (gsize) MIN (left, EGRESS_BUF);
                gssize n = from->read (conn, from->ctx, buf, want);
                gssize take = n;
                gsize data = (gsize) MAX (n, 0);

                if (n <= 0)
                        return FALSE;
                if (req->chunked && (take = corral_http_chunked_scan (&ch, buf, (gsize) n,
                                                                      check ? &data : NULL)) < 0) {
                        set_reason (conn, "malformed chunked body");
                        return FALSE;
                }
                left -= req->chunked ? 0 : (guint64) take;
                if (check) {
                        gboolean last = req->chunked ? corral_http_chunked_done (&ch) : left == 0;

                        if (!pass_checked (conn, check, to, req->chunked, buf, data, last, out))
                                return FALSE;
                        continue;
                }
                if (!to->write (conn, to->ctx, buf, (gsize) take))
                        return FALSE;
                conn->bytes_up += (guint64) take;
        }
        return TRUE;
}

static gboolean
forward_body (EgressConn *conn, const CorralHttpRequest *req)
{
        const EgressEndpoint from = { plain_client_read, NULL, NULL };
        const EgressEndpoint to = { NULL, plain_upstream_write, NULL };
        g_autoptr (EgressMask) detect =
                conn->creds ? _egress_credentials_dup_mask (conn->creds) : NULL;

        return _egress_forward_body (conn, req, &from, &to, detect);
}

/* Relays ---------------------------------------------------------------------------------------- */

static void
shutdown_write (GIOStream *stream)
{
        if (G_IS_SOCKET_CONNECTION (stream))
                g_socket_shutdown (g_socket_connection_get_socket (G_SOCKET_CONNECTION (stream)),
                                   FALSE, TRUE, NULL);
        else
                g_output_stream_close (g_io_stream_get_output_stream (stream), NULL, NULL);
}

/* upstream -> client, until upstream EOF (responses are relayed as they are: a redirect goes
 * back to the client, which asks the proxy again for the new target). */
static gpointer
down_main (gpointer data)
{
        EgressConn *conn = data;
        g_autofree guint8 *buf = g_malloc (EGRESS_BUF);
        GInputStream *in = g_io_stream_get_input_stream (G_IO_STREAM (conn->upstream));
        gssize n;

        while ((n = g_input_stream_read (in, buf, EGRESS_BUF, conn->cancellable, NULL)) > 0) {
                if (!_egress_write_all (conn->client, buf, (gsize) n, conn, NULL))
                        break;
                conn->bytes_down += (guint64) n;
        }
        if (n == 0 && !conn->http_mode)
                shutdown_write (conn->client);
        else
                g_cancellable_cancel (conn->cancellable);
        return NULL;
}

/* client -> upstream for a tunnel, until client EOF; then waits for the other direction. */
static void
tunnel (EgressConn *conn)
{
        g_autofree guint8 *buf = g_malloc (EGRESS_BUF);
        GThread *down = g_thread_new ("egress-down", down_main, conn);
        gssize n;

        while ((n = _egress_client_read (conn, buf, EGRESS_BUF, NULL)) > 0) {
                if (!_egress_write_all (G_IO_STREAM (conn->upstream), buf, (gsize) n, conn, NULL))
                        break;
                conn->bytes_up += (guint64) n;
        }
        if (n == 0)
                shutdown_write (G_IO_STREAM (conn->upstream));
        else
                g_cancellable_cancel (conn->cancellable);
        g_thread_join (down);
}

static void
forward_http (EgressConn *conn, const CorralHttpRequest *req)
{
        g_autoptr (GString) head = corral_http_request_to_origin (req);
        GThread *down;

        if (!_egress_write_all (G_IO_STREAM (conn->upstream), head->str, head->len, conn, NULL))
                return;
        conn->bytes_up += head->len;
        conn->http_mode = TRUE;
        if (req->content_length <= 0 && !req->chunked) {
                /* No body: no second thread to start and join for the response. */
                down_main (conn);
                return;
        }
        down = g_thread_new ("egress-down", down_main, conn);
        if (!forward_body (conn, req))
                g_cancellable_cancel (conn->cancellable);
        g_thread_join (down);
}

/* CONNECT --------------------------------------------------------------------------------------- */

/* Reads the ClientHello into conn->buf (it is forwarded first later) and checks its SNI. */
static gboolean
check_client_hello (EgressConn *conn)
{
        static const guint8 alert[] = { 0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x70 };
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        g_autofree char *sni = NULL, *canon = NULL;
        CorralHostKind kind;
        const char *why = "no TLS ClientHello";
        CorralHelloResult r = CORRAL_HELLO_NEED_MORE;

        if (!_egress_write_all (conn->client, ok, sizeof ok - 1, conn, NULL))
                return FALSE;
        conn->replied = TRUE;
        memmove (conn->buf, conn->buf + conn->buf_start, conn->buf_len);
        conn->buf_start = 0;
        while ((r = corral_tls_hello_parse (conn->buf, conn->buf_len, &sni, &why)) ==
               CORRAL_HELLO_NEED_MORE) {
                gssize n = g_input_stream_read (
                        g_io_stream_get_input_stream (conn->client), conn->buf + conn->buf_len,
                        EGRESS_BUF - conn->buf_len, conn->cancellable, NULL);
                if (n <= 0)
                        break;
                conn->buf_len += (gsize) n;
        }
        if (r == CORRAL_HELLO_OK && conn->kind == CORRAL_HOST_NAME && sni &&
            corral_egress_parse_host (sni, -1, FALSE, &kind, &canon, NULL) &&
            g_str_equal (canon, conn->host))
                return TRUE;
        if (r == CORRAL_HELLO_OK && conn->kind != CORRAL_HOST_NAME && !sni)
                return TRUE;
        if (r == CORRAL_HELLO_OK)
                why = sni ? "TLS server name does not match the CONNECT host"
                          : "TLS server name missing";
        _egress_refuse (conn, 403, r == CORRAL_HELLO_OK ? "sni-mismatch" : "not-tls", why);
        g_output_stream_write (g_io_stream_get_output_stream (conn->client), alert, sizeof alert,
                               conn->cancellable, NULL);
        return FALSE;
}

/* Run ------------------------------------------------------------------------------------------- */

void
_egress_head_failed (EgressConn *conn, GError *error)
{
        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
            error->domain != CORRAL_EGRESS_ERROR) {
                set_reason (conn, error->message);
                g_mutex_lock (&conn->proxy->lock);
                /* inside a tunnel the CONNECT's allow rule was there: the request never was */
                g_free (conn->rule);
                conn->rule = g_strdup ("incomplete-request");
                conn->allowed = FALSE;
                g_mutex_unlock (&conn->proxy->lock);
                return;
        }
        _egress_refuse (conn, error->code == CORRAL_EGRESS_ERROR_TOO_LARGE ? 431 : 400,
                        "bad-request", error->message);
}

/* The session is still on, the head holds no bound secret and the policy allows the target. */
static gboolean
decide (EgressConn *conn, CorralHttpRequest *req, CorralEgressPolicy *policy)
{
        g_autofree char *rule = NULL;
        gboolean allowed, ended;

        g_mutex_lock (&conn->proxy->lock);
        conn->method = g_strdup (req->method);
        conn->host = g_strdup (req->host);
        conn->kind = req->kind;
        conn->port = req->port;
        ended = conn->proxy->ended != NULL;
        g_mutex_unlock (&conn->proxy->lock);
        if (ended) {
                _egress_refuse (conn, 403, "session-ended", NULL);
                return FALSE;
        }
        /* The whole head as sent: target, every header, whatever the parser kept or not. */
        if (!_egress_check_guest_bytes (conn, conn->buf, conn->buf_start))
                return FALSE;
        allowed = corral_egress_policy_check (policy, req->host, req->kind, req->port, &rule);
        if (!allowed) {
                _egress_refuse (conn, 403, rule, NULL);
                return FALSE;
        }
        g_mutex_lock (&conn->proxy->lock);
        conn->rule = g_steal_pointer (&rule);
        g_mutex_unlock (&conn->proxy->lock);
        return TRUE;
}

/* A CONNECT to a bound host and port: TLS is intercepted, and the upstream connection is made
 * only once the request inside is complete (egress-intercept.c). */
static gboolean
intercepts (EgressConn *conn, const CorralHttpRequest *req)
{
        return req->is_connect && conn->creds &&
               corral_egress_credentials_binds_host (conn->creds, conn->host, conn->port);
}

void
_egress_conn_run (EgressConn *conn)
{
        CorralEgressProxy *proxy = conn->proxy;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHttpRequest) req = NULL;
        g_autoptr (CorralEgressPolicy) policy = NULL;
        g_autoptr (GResolver) resolver = NULL;
        CorralEgressLimits limits;
        GList *addrs;

        g_mutex_lock (&proxy->lock);
        limits = proxy->limits;
        resolver = g_object_ref (proxy->resolver);
        if (proxy->creds)
                conn->creds = corral_egress_credentials_ref (proxy->creds);
        g_mutex_unlock (&proxy->lock);
        if (!(req = read_head (conn, &limits, &error))) {
                /* A head too large or malformed is refused, but what it holds was still sent. */
                if (_egress_check_guest_bytes (conn, conn->buf, conn->buf_start))
                        _egress_head_failed (conn, error);
                return;
        }
        policy = corral_egress_proxy_dup_policy (proxy);
        if (!decide (conn, req, policy))
                return;
        /* Placeholders are swapped only inside TLS: in plain HTTP they are refused. */
        if (conn->creds && !req->is_connect && _egress_refuse_plain_placeholder (conn, req))
                return;
        if (!(addrs = resolve_checked (conn, policy, resolver)))
                return;
        if (req->is_connect && !check_client_hello (conn)) {
                g_resolver_free_addresses (addrs);
                return;
        }
        if (intercepts (conn, req)) {
                _egress_intercept (conn, policy, addrs, &limits);
        } else {
                _egress_conn_head_done (conn);
                if (_egress_conn_open_upstream (conn, policy, addrs, limits.connect_timeout_s)) {
                        if (req->is_connect)
                                tunnel (conn);
                        else
                                forward_http (conn, req);
                }
        }
        g_resolver_free_addresses (addrs);
}
