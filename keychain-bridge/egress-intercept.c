/* egress-intercept.c — CONNECT to a host and port with a bound credential: TLS is terminated
 * with a leaf of the session CA and the one request inside is read (within the head timeout)
 * and checked: bytes holding a bound secret end the session; a placeholder is swapped for its
 * secret in the binding's header only. Only then is the upstream connection made, over TLS
 * whose certificate is verified (system trust + the configured extra CA). A request that had a
 * secret swapped in asks for the reply whole and uncompressed (Accept-Encoding: identity, no
 * Range), the reply must be so (no Content-Encoding, no 206), and it goes back with that secret
 * masked in every form egress-mask.h finds, across chunk boundaries (egress-reply.c). Other
 * replies go back as they are. One request per tunnel (Connection: close both ways).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy-private.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <string.h>

typedef struct {
        EgressConn *conn;
        gnutls_session_t client; /* we are the server */
        gnutls_session_t upstream; /* we are the client */
        guint8 *head; /* the inner request head as the guest sent it */
        gsize head_len;
        guint8 *pending; /* decrypted client bytes read past the head */
        gsize pending_len, pending_size;
        EgressMask *reply_mask; /* (nullable) what was swapped in: masked in the reply */
} Intercept;

/* GnuTLS transport over the connection's streams ------------------------------------------------ */

static ssize_t
pull_client (gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
        Intercept *ic = ptr;
        gssize r = _egress_client_read (ic->conn, buf, n, NULL);

        if (r < 0)
                gnutls_transport_set_errno (ic->client, EIO);
        return r;
}

static ssize_t
push_client (gnutls_transport_ptr_t ptr, const void *buf, size_t n)
{
        Intercept *ic = ptr;

        if (!_egress_write_all (ic->conn->client, buf, n, ic->conn, NULL)) {
                gnutls_transport_set_errno (ic->client, EIO);
                return -1;
        }
        return (ssize_t) n;
}

static ssize_t
pull_upstream (gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
        Intercept *ic = ptr;
        gssize r = g_input_stream_read (
                g_io_stream_get_input_stream (G_IO_STREAM (ic->conn->upstream)), buf, n,
                ic->conn->cancellable, NULL);

        if (r < 0)
                gnutls_transport_set_errno (ic->upstream, EIO);
        else if (r > 0)
                _egress_touch (ic->conn);
        return r;
}

static ssize_t
push_upstream (gnutls_transport_ptr_t ptr, const void *buf, size_t n)
{
        Intercept *ic = ptr;

        if (!_egress_write_all (G_IO_STREAM (ic->conn->upstream), buf, n, ic->conn, NULL)) {
                gnutls_transport_set_errno (ic->upstream, EIO);
                return -1;
        }
        return (ssize_t) n;
}

/* Reads block in pull; the watchdog's cancellation ends them. */
static int
pull_timeout (gnutls_transport_ptr_t ptr, unsigned int ms)
{
        return 1;
}

static int
session_new (Intercept *ic,
             gnutls_session_t *ret,
             unsigned flags,
             gnutls_certificate_credentials_t cred,
             gnutls_pull_func pull,
             gnutls_push_func push)
{
        int r;

        if ((r = gnutls_init (ret, flags)) < 0 || (r = gnutls_set_default_priority (*ret)) < 0 ||
            (r = gnutls_credentials_set (*ret, GNUTLS_CRD_CERTIFICATE, cred)) < 0)
                return r;
        gnutls_transport_set_ptr (*ret, ic);
        gnutls_transport_set_pull_function (*ret, pull);
        gnutls_transport_set_push_function (*ret, push);
        gnutls_transport_set_pull_timeout_function (*ret, pull_timeout);
        gnutls_handshake_set_timeout (*ret, 0);
        return 0;
}

static int
handshake (gnutls_session_t s)
{
        int r;

        do
                r = gnutls_handshake (s);
        while (r < 0 && !gnutls_error_is_fatal (r));
        return r;
}

static gssize
tls_read (gnutls_session_t s, void *buf, gsize n)
{
        ssize_t r;

        do
                r = gnutls_record_recv (s, buf, n);
        while (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED);
        if (r == GNUTLS_E_PREMATURE_TERMINATION)
                return 0;
        return r < 0 ? -1 : r;
}

static gboolean
tls_write (gnutls_session_t s, const void *buf, gsize n)
{
        const guint8 *p = buf;

        while (n > 0) {
                ssize_t r = gnutls_record_send (s, p, n);

                if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
                        continue;
                if (r <= 0)
                        return FALSE;
                p += r;
                n -= (gsize) r;
        }
        return TRUE;
}

/* Endpoints for _egress_forward_body */
static gssize
client_tls_read (EgressConn *conn, gpointer ctx, void *buf, gsize n)
{
        Intercept *ic = ctx;

        if (ic->pending_len > 0) {
                gsize take = MIN (n, ic->pending_len);

                memcpy (buf, ic->pending, take);
                memmove (ic->pending, ic->pending + take, ic->pending_len - take);
                ic->pending_len -= take;
                return (gssize) take;
        }
        return tls_read (ic->client, buf, n);
}

static gboolean
upstream_tls_write (EgressConn *conn, gpointer ctx, const void *buf, gsize n)
{
        return tls_write (((Intercept *) ctx)->upstream, buf, n);
}

static gssize
upstream_tls_read (EgressConn *conn, gpointer ctx, void *buf, gsize n)
{
        return tls_read (((Intercept *) ctx)->upstream, buf, n);
}

static gboolean
client_tls_write (EgressConn *conn, gpointer ctx, const void *buf, gsize n)
{
        return tls_write (((Intercept *) ctx)->client, buf, n);
}

/* Refusals inside the tunnel go over the client's TLS (EgressConn.send_refusal). */
static void
send_tls_refusal (EgressConn *conn, const GString *response)
{
        Intercept *ic = conn->send_refusal_data;

        tls_write (ic->client, response->str, response->len);
        gnutls_bye (ic->client, GNUTLS_SHUT_WR);
}

/* The request head inside the tunnel: kept as sent (ic->head) and parsed. */
static CorralHttpRequest *
read_inner_head (Intercept *ic, GError **error)
{
        g_autofree guint8 *buf = g_malloc (CORRAL_HTTP_MAX_HEAD + 1);
        gsize len = 0;
        gssize head = 0;

        while (head == 0) {
                gssize n = tls_read (ic->client, buf + len, CORRAL_HTTP_MAX_HEAD + 1 - len);

                if (n <= 0) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED,
                                             "closed before a complete request head");
                        return NULL;
                }
                len += (gsize) n;
                head = corral_http_head_length ((const char *) buf, len, CORRAL_HTTP_MAX_HEAD);
        }
        if (head < 0) {
                /* refused, but still checked for secrets */
                ic->head_len = len;
                ic->head = g_memdup2 (buf, len);
                explicit_bzero (buf, len);
                g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_TOO_LARGE,
                                     "request head too large");
                return NULL;
        }
        ic->head_len = (gsize) head;
        ic->head = g_memdup2 (buf, ic->head_len);
        ic->pending_len = len - (gsize) head;
        ic->pending_size = MAX (ic->pending_len, 1);
        ic->pending = g_memdup2 (buf + head, ic->pending_size);
        explicit_bzero (buf, len);
        return corral_http_request_parse_origin ((const char *) ic->head, ic->head_len,
                                                 CORRAL_HTTP_MAX_HEADERS, ic->conn->host,
                                                 ic->conn->kind, ic->conn->port, error);
}

/* The credential swap ----------------------------------------------------------------------------- */

static void
set_value (CorralHttpHeader *h, char *value)
{
        explicit_bzero (h->value, strlen (h->value));
        g_free (h->value);
        h->value = value;
}

static char *
expand (const char *format, const char *value)
{
        const char *hole = strstr (format, "{}");

        return g_strdup_printf ("%.*s%s%s", (int) (hole - format), format, value, hole + 2);
}

static gboolean
is_basic (const EgressBinding *b)
{
        return g_str_equal (b->info->header, "basic");
}

static char *
describe (const EgressBinding *b)
{
        if (is_basic (b))
                return g_strdup ("the password of “Authorization: Basic”");
        return g_strdup_printf ("“%s: %s”", b->info->header, b->info->format);
}

/* Checks the binding found for a placeholder; NULL when it may be used here. */
static const char *
check_binding (Intercept *ic, const EgressBinding *b, gboolean right_place, char **ret_detail)
{
        if (!b)
                return "unknown-placeholder";
        if (!right_place) {
                *ret_detail = describe (b);
                return "credential-misplaced";
        }
        if (!_egress_binding_for_host (b, ic->conn->host, ic->conn->port)) {
                *ret_detail = g_strdup (b->info->name);
                return "credential-not-for-host";
        }
        return NULL;
}

/* The binding's secret went into this request: the audit names it, the reply is masked. */
static void
note_swapped (Intercept *ic, const EgressBinding *b, const char *made)
{
        EgressConn *conn = ic->conn;

        g_mutex_lock (&conn->proxy->lock);
        g_free (conn->credential);
        conn->credential = g_strdup (b->info->name);
        g_mutex_unlock (&conn->proxy->lock);
        if (!ic->reply_mask)
                ic->reply_mask = egress_mask_new ();
        egress_mask_add_secret (ic->reply_mask, b->secret, 0);
        if (made)
                egress_mask_add_literal (ic->reply_mask, made, 0);
}

/* Authorization: Basic base64(user:placeholder) */
static const char *
swap_basic (Intercept *ic, CorralHttpHeader *h, char **ret_detail)
{
        gsize len = 0;
        g_autofree guchar *raw = g_base64_decode (h->value + 6, &len);
        g_autofree char *text = g_strndup ((const char *) raw, len);
        g_autoptr (EgressBinding) b = NULL;
        const char *colon = strchr (text, ':');
        const char *rule;
        g_autofree char *user = NULL, *plain = NULL, *encoded = NULL;

        explicit_bzero (raw, len);
        if (!strstr (text, CORRAL_PLACEHOLDER_PREFIX))
                return NULL;
        if (colon)
                b = _egress_credentials_find (ic->conn->creds, colon + 1, strlen (colon + 1));
        if (!b && colon && strstr (colon + 1, CORRAL_PLACEHOLDER_PREFIX) != colon + 1)
                return "credential-misplaced";
        rule = check_binding (ic, b, b && is_basic (b), ret_detail);
        if (rule)
                return rule;
        user = g_strndup (text, (gsize) (colon - text));
        plain = g_strdup_printf ("%s:%s", user, b->secret);
        encoded = g_base64_encode ((const guchar *) plain, strlen (plain));
        set_value (h, g_strconcat ("Basic ", encoded, NULL));
        explicit_bzero (plain, strlen (plain));
        explicit_bzero (text, strlen (text));
        note_swapped (ic, b, encoded);
        explicit_bzero (encoded, strlen (encoded));
        return NULL;
}

static const char *
swap_header (Intercept *ic, CorralHttpHeader *h, char **ret_detail)
{
        const char *ph = strstr (h->value, CORRAL_PLACEHOLDER_PREFIX);
        g_autoptr (EgressBinding) b = NULL;
        g_autofree char *expected = NULL;
        const char *rule;

        if (g_ascii_strcasecmp (h->name, "Authorization") == 0 &&
            g_ascii_strncasecmp (h->value, "Basic ", 6) == 0)
                return swap_basic (ic, h, ret_detail);
        if (!ph)
                return NULL;
        if (strlen (ph) >= CORRAL_PLACEHOLDER_LEN)
                b = _egress_credentials_find (ic->conn->creds, ph, CORRAL_PLACEHOLDER_LEN);
        if (b)
                expected = expand (b->info->format, b->placeholder);
        /* A basic binding fills only the password of Authorization: Basic (above), never a
         * header that happens to be called "Basic". */
        rule = check_binding (ic, b,
                              b && !is_basic (b) &&
                                      g_ascii_strcasecmp (h->name, b->info->header) == 0 &&
                                      g_str_equal (h->value, expected),
                              ret_detail);
        if (rule)
                return rule;
        set_value (h, expand (b->info->format, b->secret));
        note_swapped (ic, b, NULL);
        return NULL;
}

/* NULL when every placeholder in the request may be swapped (and was); else the rule. */
static const char *
swap_credentials (Intercept *ic, CorralHttpRequest *req, char **ret_detail)
{
        for (guint i = 0; i < req->headers->len; i++) {
                const char *rule =
                        swap_header (ic, g_ptr_array_index (req->headers, i), ret_detail);

                if (rule)
                        return rule;
        }
        return NULL;
}

/* A request carrying a secret asks for a reply the mask can read whole: no content coding,
 * no ranges (the pieces of an echoed secret would each be too short to find). Connection goes
 * too, so that no header it names can take Accept-Encoding out again. */
static void
ask_whole_reply (CorralHttpRequest *req)
{
        static const char *const dropped[] = { "Accept-Encoding", "Range",  "If-Range", "TE",
                                               "Connection",      "Upgrade" };
        CorralHttpHeader *h;

        for (guint i = req->headers->len; i-- > 0;) {
                h = g_ptr_array_index (req->headers, i);
                for (gsize k = 0; k < G_N_ELEMENTS (dropped); k++) {
                        if (g_ascii_strcasecmp (h->name, dropped[k]) == 0) {
                                g_ptr_array_remove_index (req->headers, i);
                                break;
                        }
                }
        }
        h = g_new0 (CorralHttpHeader, 1);
        h->name = g_strdup ("Accept-Encoding");
        h->value = g_strdup ("identity");
        g_ptr_array_add (req->headers, h);
}

gboolean
_egress_refuse_plain_placeholder (EgressConn *conn, const CorralHttpRequest *req)
{
        for (guint i = 0; i < req->headers->len; i++) {
                const CorralHttpHeader *h = g_ptr_array_index (req->headers, i);
                gsize len = 0;
                g_autofree guchar *raw = NULL;
                gboolean found = strstr (h->value, CORRAL_PLACEHOLDER_PREFIX) != NULL;

                if (!found && g_ascii_strncasecmp (h->value, "Basic ", 6) == 0) {
                        raw = g_base64_decode (h->value + 6, &len);
                        found = g_strstr_len ((const char *) raw, (gssize) len,
                                              CORRAL_PLACEHOLDER_PREFIX) != NULL;
                }
                if (found) {
                        _egress_refuse (conn, 403, "credential-needs-tls", NULL);
                        return TRUE;
                }
        }
        return FALSE;
}

/* The tunnel ---------------------------------------------------------------------------------------- */

static gboolean
open_upstream_tls (Intercept *ic, gnutls_certificate_credentials_t cred)
{
        const char *host = ic->conn->host;
        int r;

        if (session_new (ic, &ic->upstream, GNUTLS_CLIENT, cred, pull_upstream, push_upstream) <
                    0 ||
            gnutls_server_name_set (ic->upstream, GNUTLS_NAME_DNS, host, strlen (host)) < 0) {
                _egress_refuse (ic->conn, 502, "upstream-tls", "TLS setup failed");
                return FALSE;
        }
        gnutls_session_set_verify_cert (ic->upstream, host, 0);
        if ((r = handshake (ic->upstream)) < 0) {
                _egress_refuse (ic->conn, 502,
                                r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR
                                        ? "upstream-certificate"
                                        : "upstream-tls",
                                gnutls_strerror (r));
                return FALSE;
        }
        return TRUE;
}

/* upstream -> client as it comes (nothing was swapped in: nothing to mask). */
static void
relay_plain (Intercept *ic)
{
        g_autofree guint8 *buf = g_malloc (EGRESS_BUF);
        gssize n;

        while ((n = tls_read (ic->upstream, buf, EGRESS_BUF)) > 0) {
                if (!tls_write (ic->client, buf, (gsize) n))
                        break;
                ic->conn->bytes_down += (guint64) n;
        }
}

static void
exchange (Intercept *ic, CorralHttpRequest *req)
{
        EgressConn *conn = ic->conn;
        const EgressEndpoint client_in = { client_tls_read, NULL, ic };
        const EgressEndpoint up_out = { NULL, upstream_tls_write, ic };
        const EgressEndpoint up_in = { upstream_tls_read, NULL, ic };
        const EgressEndpoint client_out = { NULL, client_tls_write, ic };
        g_autoptr (GString) head = corral_http_request_to_origin (req);
        g_autoptr (EgressMask) detect = _egress_credentials_dup_mask (conn->creds);
        gboolean ok = tls_write (ic->upstream, head->str, head->len);

        conn->bytes_up += head->len;
        explicit_bzero (head->str, head->len);
        if (ok && (req->content_length > 0 || req->chunked))
                ok = _egress_forward_body (conn, req, &client_in, &up_out, detect);
        if (ok && ic->reply_mask)
                _egress_relay_masked_reply (conn, req, ic->reply_mask, &up_in, &client_out);
        else if (ok)
                relay_plain (ic);
        gnutls_bye (ic->client, GNUTLS_SHUT_WR);
}

static void
drop_expect (Intercept *ic, CorralHttpRequest *req)
{
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

        for (guint i = 0; i < req->headers->len; i++) {
                CorralHttpHeader *h = g_ptr_array_index (req->headers, i);

                if (g_ascii_strcasecmp (h->name, "Expect") == 0) {
                        g_ptr_array_remove_index (req->headers, i);
                        tls_write (ic->client, cont, sizeof cont - 1);
                        return;
                }
        }
}

static void
wipe_headers (CorralHttpRequest *req)
{
        for (guint i = 0; i < req->headers->len; i++) {
                CorralHttpHeader *h = g_ptr_array_index (req->headers, i);

                explicit_bzero (h->value, strlen (h->value));
        }
}

/* Until the inner head is read, checked and its credentials swapped, nothing goes upstream:
 * there is no upstream connection yet, and the head timeout still runs. */
static CorralHttpRequest *
accept_request (Intercept *ic)
{
        EgressConn *conn = ic->conn;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralHttpRequest) req = read_inner_head (ic, &error);
        g_autofree char *detail = NULL;
        const char *rule;

        if (ic->head && !_egress_check_guest_bytes (conn, ic->head, ic->head_len))
                return NULL;
        if (!req) {
                _egress_head_failed (conn, error);
                return NULL;
        }
        g_mutex_lock (&conn->proxy->lock);
        g_free (conn->method);
        conn->method = g_strdup (req->method);
        g_mutex_unlock (&conn->proxy->lock);
        if ((rule = swap_credentials (ic, req, &detail))) {
                _egress_refuse (conn, 403, rule, detail);
                wipe_headers (req);
                return NULL;
        }
        if (ic->reply_mask)
                ask_whole_reply (req);
        drop_expect (ic, req);
        return g_steal_pointer (&req);
}

static void
serve (Intercept *ic,
       gnutls_certificate_credentials_t leaf,
       gnutls_certificate_credentials_t up,
       CorralEgressPolicy *policy,
       GList *addrs,
       const CorralEgressLimits *limits)
{
        EgressConn *conn = ic->conn;
        g_autoptr (CorralHttpRequest) req = NULL;

        if (session_new (ic, &ic->client, GNUTLS_SERVER, leaf, pull_client, push_client) < 0 ||
            handshake (ic->client) < 0) {
                /* Nothing can be sent over a handshake that failed: only the audit record. */
                g_string_free (_egress_refusal (conn, 502, "tls-intercept",
                                                "TLS handshake with the client failed"),
                               TRUE);
                return;
        }
        conn->send_refusal = send_tls_refusal;
        conn->send_refusal_data = ic;
        if (!(req = accept_request (ic)))
                return;
        _egress_conn_head_done (conn);
        if (_egress_conn_open_upstream (conn, policy, addrs, limits->connect_timeout_s) &&
            open_upstream_tls (ic, up))
                exchange (ic, req);
        wipe_headers (req);
}

static void
intercept_clear (Intercept *ic)
{
        ic->conn->send_refusal = NULL;
        ic->conn->send_refusal_data = NULL;
        if (ic->client)
                gnutls_deinit (ic->client);
        if (ic->upstream)
                gnutls_deinit (ic->upstream);
        g_clear_pointer (&ic->reply_mask, egress_mask_unref);
        if (ic->head) {
                explicit_bzero (ic->head, ic->head_len);
                g_free (ic->head);
        }
        if (ic->pending) {
                explicit_bzero (ic->pending, ic->pending_size);
                g_free (ic->pending);
        }
}

void
_egress_intercept (EgressConn *conn,
                   CorralEgressPolicy *policy,
                   GList *addrs,
                   const CorralEgressLimits *limits)
{
        CorralEgressProxy *proxy = conn->proxy;
        g_autoptr (GError) error = NULL;
        gnutls_certificate_credentials_t leaf = NULL, up;
        Intercept ic = { conn };
        EgressCa *ca;

        /* Both live until the proxy is finalized (replaced ones are kept, see egress-proxy.c). */
        g_mutex_lock (&proxy->lock);
        ca = proxy->ca;
        up = proxy->upstream_tls;
        g_mutex_unlock (&proxy->lock);
        if (ca)
                leaf = egress_ca_leaf (ca, conn->host, &error);
        if (!leaf || !up) {
                g_string_free (
                        _egress_refusal (conn, 502, "tls-intercept",
                                         error ? error->message : "interception is not set up"),
                        TRUE);
                return;
        }
        serve (&ic, leaf, up, policy, addrs, limits);
        intercept_clear (&ic);
}
