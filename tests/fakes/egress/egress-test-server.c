/* egress-test-server.c — a small HTTP(S) origin server on loopback (see egress-test.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-test.h"

#include <stdlib.h>
#include <string.h>

#define BUF (64 * 1024)

struct _EgressTestServer {
        GSocket *listener;
        GThread *acceptor;
        GCancellable *cancel;
        GTlsCertificate *cert;
        gboolean raw;
        guint16 port;
        GMutex lock;
        guint connections;
        guint64 bytes;
        GString *heads;
        guint running;
        GCond cond;
        /* peers that have ended, to join: a thread still unwinding when the test process
         * exits trips LeakSanitizer's stop-the-world ("Tracer caught signal 11") */
        GPtrArray *ended;
};

typedef struct {
        EgressTestServer *server;
        GIOStream *stream;
        guint8 buf[BUF];
        gsize start, len;
} Peer;

void
egress_test_pattern (guint8 *buf, gsize len, guint64 off)
{
        for (gsize i = 0; i < len; i++) {
                guint64 x = off + i;
                buf[i] = (guint8) ((x * 2654435761u) >> 13 ^ x);
        }
}

static gssize
peer_fill (Peer *p)
{
        gssize n;

        if (p->start > 0) {
                memmove (p->buf, p->buf + p->start, p->len);
                p->start = 0;
        }
        if (p->len == BUF)
                return -1;
        n = g_input_stream_read (g_io_stream_get_input_stream (p->stream), p->buf + p->len,
                                 BUF - p->len, p->server->cancel, NULL);
        if (n > 0) {
                p->len += (gsize) n;
                g_mutex_lock (&p->server->lock);
                p->server->bytes += (guint64) n;
                g_mutex_unlock (&p->server->lock);
        }
        return n;
}

/* A line without its CRLF, or NULL. */
static char *
peer_line (Peer *p)
{
        for (;;) {
                guint8 *nl = memchr (p->buf + p->start, '\n', p->len);

                if (nl) {
                        gsize n = (gsize) (nl - (p->buf + p->start));
                        char *line = g_strndup ((char *) p->buf + p->start,
                                                n > 0 && nl[-1] == '\r' ? n - 1 : n);
                        p->start += n + 1;
                        p->len -= n + 1;
                        return line;
                }
                if (peer_fill (p) <= 0)
                        return NULL;
        }
}

/* sum: (nullable) */
static gboolean
peer_body (Peer *p, guint64 n, GChecksum *sum)
{
        while (n > 0) {
                gsize take;

                if (p->len == 0 && peer_fill (p) <= 0)
                        return FALSE;
                take = (gsize) MIN ((guint64) p->len, n);
                if (sum)
                        g_checksum_update (sum, p->buf + p->start, take);
                p->start += take;
                p->len -= take;
                n -= take;
        }
        return TRUE;
}

static gboolean
peer_chunked (Peer *p, GChecksum *sum)
{
        for (;;) {
                g_autofree char *line = peer_line (p);
                g_autofree char *crlf = NULL;
                guint64 n;

                if (!line)
                        return FALSE;
                n = g_ascii_strtoull (line, NULL, 16);
                if (n == 0)
                        break;
                if (!peer_body (p, n, sum) || !(crlf = peer_line (p)))
                        return FALSE;
        }
        for (;;) { /* trailers */
                g_autofree char *line = peer_line (p);

                if (!line)
                        return FALSE;
                if (!*line)
                        return TRUE;
        }
}

static void
reply (Peer *p, const char *status, const char *extra, const void *body, gsize len)
{
        g_autofree char *head = g_strdup_printf ("HTTP/1.1 %s\r\n%sContent-Length: %zu\r\n"
                                                 "Connection: close\r\n\r\n",
                                                 status, extra ? extra : "", len);
        GOutputStream *out = g_io_stream_get_output_stream (p->stream);

        if (g_output_stream_write_all (out, head, strlen (head), NULL, p->server->cancel, NULL) &&
            len > 0)
                g_output_stream_write_all (out, body, len, NULL, p->server->cancel, NULL);
}

static void
send_blob (Peer *p, guint64 n, gboolean zeros)
{
        g_autofree char *head =
                g_strdup_printf ("HTTP/1.1 200 OK\r\nContent-Length: %" G_GUINT64_FORMAT
                                 "\r\nConnection: close\r\n\r\n",
                                 n);
        g_autofree guint8 *buf = g_malloc0 (BUF);
        GOutputStream *out = g_io_stream_get_output_stream (p->stream);
        guint64 off = 0;

        if (!g_output_stream_write_all (out, head, strlen (head), NULL, p->server->cancel, NULL))
                return;
        while (off < n) {
                gsize chunk = (gsize) MIN ((guint64) BUF, n - off);

                if (!zeros)
                        egress_test_pattern (buf, chunk, off);
                if (!g_output_stream_write_all (out, buf, chunk, NULL, p->server->cancel, NULL))
                        return;
                off += chunk;
        }
}

/* The reflecting origin of the echo tests ------------------------------------------------------ */

static GBytes *
gzip_bytes (const char *data, gsize len)
{
        g_autoptr (GZlibCompressor) z = g_zlib_compressor_new (G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
        g_autoptr (GInputStream) in =
                g_memory_input_stream_new_from_data (g_memdup2 (data, len), (gssize) len, g_free);
        g_autoptr (GInputStream) conv = g_converter_input_stream_new (in, G_CONVERTER (z));
        g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();

        g_output_stream_splice (out, conv, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, NULL);
        return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

/* text in the form asked for (see egress-test.h). */
static GString *
reflect_form (const char *form, const char *text, guint pad)
{
        GString *out = g_string_new (NULL);
        gsize len = strlen (text);

        if (g_str_equal (form, "base64") || g_str_equal (form, "base64url")) {
                g_autofree char *padded = g_strdup_printf ("%.*s%s", (int) pad, "xyz", text);
                g_autofree char *b = g_base64_encode ((const guchar *) padded, strlen (padded));

                for (char *c = b; *c && form[6]; c++)
                        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
                g_string_append (out, b);
        } else if (g_str_equal (form, "hex") || g_str_equal (form, "HEX")) {
                for (gsize i = 0; i < len; i++)
                        g_string_append_printf (out, form[0] == 'h' ? "%02x" : "%02X",
                                                (guchar) text[i]);
        } else if (g_str_equal (form, "reversed")) {
                for (gsize i = len; i-- > 0;)
                        g_string_append_c (out, text[i]);
        } else if (g_str_equal (form, "json")) {
                /* As PHP's json_encode: "/" escaped, other ASCII punctuation as \u00XX. */
                g_string_append (out, "{\"head\":\"");
                for (gsize i = 0; i < len; i++) {
                        if (text[i] == '/')
                                g_string_append (out, "\\/");
                        else if (g_ascii_isalnum (text[i]) || text[i] == ' ')
                                g_string_append_c (out, text[i]);
                        else
                                g_string_append_printf (out, "\\u%04x", (guchar) text[i]);
                }
                g_string_append (out, "\"}");
        } else if (g_str_equal (form, "html")) {
                for (gsize i = 0; i < len; i++)
                        g_string_append_printf (out, i % 2 ? "&#%u;" : "&#x%x;", (guchar) text[i]);
        } else {
                g_string_append (out, text);
        }
        return out;
}

/* "form=F&pad=N" */
static void
reflect_params (const char *query, char **ret_form, guint *ret_pad)
{
        g_auto (GStrv) params = g_strsplit (query ? query : "", "&", 8);

        *ret_form = g_strdup ("plain");
        *ret_pad = 0;
        for (char **q = params; *q; q++) {
                if (g_str_has_prefix (*q, "form=")) {
                        g_free (*ret_form);
                        *ret_form = g_strdup (*q + 5);
                } else if (g_str_has_prefix (*q, "pad=")) {
                        *ret_pad = MIN ((guint) g_ascii_strtoull (*q + 4, NULL, 10), 3);
                }
        }
}

/* "bytes=A-B" of a body of len bytes; FALSE when there is none or it is unusable. */
static gboolean
parse_range (const char *head, gsize len, gsize *ret_from, gsize *ret_to)
{
        const char *r = strstr (head, "\r\nRange: bytes=");
        char *end = NULL;
        guint64 a, b;

        if (!r)
                return FALSE;
        a = g_ascii_strtoull (r + 15, &end, 10);
        if (*end != '-')
                return FALSE;
        b = g_ascii_strtoull (end + 1, NULL, 10);
        if (a > b || b >= len)
                return FALSE;
        *ret_from = (gsize) a;
        *ret_to = (gsize) b;
        return TRUE;
}

static void
send_chunked (Peer *p, const char *body, gsize len, gsize piece)
{
        g_autoptr (GString) s = g_string_new ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                              "Connection: close\r\n\r\n");

        for (gsize off = 0; off < len; off += piece) {
                gsize n = MIN (piece, len - off);

                g_string_append_printf (s, "%zx\r\n", n);
                g_string_append_len (s, body + off, (gssize) n);
                g_string_append (s, "\r\n");
        }
        g_string_append (s, "0\r\nX-Trailer: ");
        g_string_append_len (s, body, (gssize) MIN (len, 200));
        g_string_append (s, "\r\n\r\n");
        g_output_stream_write_all (g_io_stream_get_output_stream (p->stream), s->str, s->len, NULL,
                                   p->server->cancel, NULL);
}

static void
serve_reflect (Peer *p, const char *query, const char *head)
{
        g_autofree char *form = NULL;
        g_autoptr (GString) body = NULL;
        gsize from, to;
        guint pad;

        reflect_params (query, &form, &pad);
        body = reflect_form (form, head, pad);
        if (g_str_equal (form, "gzip")) {
                g_autoptr (GBytes) z = gzip_bytes (body->str, body->len);

                reply (p, "200 OK", "Content-Encoding: gzip\r\n", g_bytes_get_data (z, NULL),
                       g_bytes_get_size (z));
        } else if (g_str_equal (form, "location")) {
                g_autofree char *esc = g_uri_escape_string (head, NULL, FALSE);
                g_autofree char *loc = g_strdup_printf ("Location: /next?head=%s\r\n", esc);

                reply (p, "302 Found", loc, NULL, 0);
        } else if (g_str_equal (form, "chunked")) {
                send_chunked (p, body->str, body->len, 5);
        } else if (g_str_equal (form, "partial")) {
                g_autofree char *cr =
                        g_strdup_printf ("Content-Range: bytes 0-%zu/*\r\n", body->len - 1);

                reply (p, "206 Partial Content", cr, body->str, body->len);
        } else if (g_str_equal (form, "range") && parse_range (head, body->len, &from, &to)) {
                g_autofree char *cr = g_strdup_printf ("Content-Range: bytes %zu-%zu/%zu\r\n", from,
                                                       to, body->len);

                reply (p, "206 Partial Content", cr, body->str + from, to - from + 1);
        } else {
                reply (p, "200 OK", NULL, body->str, body->len);
        }
}

static void
serve_request (Peer *p)
{
        g_autofree char *request = peer_line (p);
        g_autoptr (GString) head = g_string_new (NULL);
        g_auto (GStrv) parts = NULL;
        guint64 content_length = 0;
        gboolean chunked = FALSE;

        if (!request)
                return;
        g_string_append_printf (head, "%s\r\n", request);
        for (;;) {
                g_autofree char *line = peer_line (p);

                if (!line)
                        return;
                g_string_append_printf (head, "%s\r\n", line);
                if (!*line)
                        break;
                if (g_ascii_strncasecmp (line, "Content-Length:", 15) == 0)
                        content_length = g_ascii_strtoull (line + 15, NULL, 10);
                if (g_ascii_strncasecmp (line, "Transfer-Encoding:", 18) == 0)
                        chunked = TRUE;
        }
        g_mutex_lock (&p->server->lock);
        g_string_append (p->server->heads, head->str);
        g_mutex_unlock (&p->server->lock);
        parts = g_strsplit (request, " ", 3);
        if (g_strv_length (parts) < 2)
                return;
        if (g_str_has_prefix (parts[1], "/blob?n=")) {
                send_blob (p, g_ascii_strtoull (parts[1] + 8, NULL, 10), FALSE);
        } else if (g_str_has_prefix (parts[1], "/zeros?n=")) {
                send_blob (p, g_ascii_strtoull (parts[1] + 9, NULL, 10), TRUE);
        } else if (g_str_equal (parts[1], "/discard")) {
                if (peer_body (p, content_length, NULL))
                        reply (p, "204 No Content", NULL, NULL, 0);
        } else if (g_str_equal (parts[1], "/upload")) {
                g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
                const char *hex;

                if (chunked ? !peer_chunked (p, sum) : !peer_body (p, content_length, sum))
                        return;
                hex = g_checksum_get_string (sum);
                reply (p, "200 OK", NULL, hex, strlen (hex));
        } else if (g_str_has_prefix (parts[1], "/redirect?to=")) {
                g_autofree char *loc = g_strdup_printf ("Location: %s\r\n", parts[1] + 13);
                reply (p, "302 Found", loc, NULL, 0);
        } else if (g_str_has_prefix (parts[1], "/slow?ms=")) {
                g_usleep (g_ascii_strtoull (parts[1] + 9, NULL, 10) * 1000);
                reply (p, "204 No Content", NULL, NULL, 0);
        } else if (g_str_equal (parts[1], "/echo")) {
                reply (p, "200 OK", NULL, head->str, head->len);
        } else if (g_str_has_prefix (parts[1], "/reflect")) {
                const char *q = strchr (parts[1], '?');

                serve_reflect (p, q ? q + 1 : NULL, head->str);
        } else {
                reply (p, "204 No Content", NULL, NULL, 0);
        }
}

static gpointer
peer_main (gpointer data)
{
        Peer *p = data;
        EgressTestServer *server = p->server;

        if (G_IS_TLS_CONNECTION (p->stream) &&
            !g_tls_connection_handshake (G_TLS_CONNECTION (p->stream), server->cancel, NULL))
                goto out;
        if (server->raw) {
                while (peer_fill (p) > 0)
                        p->len = 0;
        } else {
                serve_request (p);
        }
out:
        g_io_stream_close (p->stream, NULL, NULL);
        g_object_unref (p->stream);
        g_free (p);
        g_mutex_lock (&server->lock);
        g_ptr_array_add (server->ended, g_thread_self ());
        server->running--;
        g_cond_broadcast (&server->cond);
        g_mutex_unlock (&server->lock);
        return NULL;
}

/* Joins the peers that have ended (each GThread's ref from g_thread_new goes with it). */
static void
join_ended (EgressTestServer *server)
{
        g_autoptr (GPtrArray) ended = NULL;

        g_mutex_lock (&server->lock);
        ended = g_steal_pointer (&server->ended);
        server->ended = g_ptr_array_new ();
        g_mutex_unlock (&server->lock);
        for (guint i = 0; i < ended->len; i++)
                g_thread_join (ended->pdata[i]);
}

static gpointer
accept_main (gpointer data)
{
        EgressTestServer *server = data;

        for (;;) {
                g_autoptr (GSocket) sock = g_socket_accept (server->listener, server->cancel, NULL);
                g_autoptr (GSocketConnection) conn = NULL;
                Peer *p;

                if (!sock)
                        return NULL;
                join_ended (server);
                conn = g_socket_connection_factory_create_connection (sock);
                p = g_new0 (Peer, 1);
                p->server = server;
                if (server->cert)
                        p->stream = g_tls_server_connection_new (G_IO_STREAM (conn), server->cert,
                                                                 NULL);
                else
                        p->stream = G_IO_STREAM (g_object_ref (conn));
                g_mutex_lock (&server->lock);
                server->connections++;
                server->running++;
                g_mutex_unlock (&server->lock);
                g_thread_new ("test-peer", peer_main, p); /* joined by join_ended */
        }
}

EgressTestServer *
egress_test_server_new (GTlsCertificate *tls_cert, gboolean raw)
{
        return egress_test_server_new_full ("127.0.0.1", 0, tls_cert, raw);
}

EgressTestServer *
egress_test_server_new_full (const char *address,
                             guint16 port,
                             GTlsCertificate *tls_cert,
                             gboolean raw)
{
        EgressTestServer *server = g_new0 (EgressTestServer, 1);
        g_autoptr (GInetAddress) lo = g_inet_address_new_from_string (address);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, port);
        g_autoptr (GSocketAddress) bound = NULL;

        g_mutex_init (&server->lock);
        g_cond_init (&server->cond);
        server->heads = g_string_new (NULL);
        server->ended = g_ptr_array_new ();
        server->cancel = g_cancellable_new ();
        server->cert = tls_cert ? g_object_ref (tls_cert) : NULL;
        server->raw = raw;
        g_assert (g_inet_address_get_is_loopback (lo));
        server->listener = g_socket_new (g_inet_address_get_family (lo), G_SOCKET_TYPE_STREAM,
                                         G_SOCKET_PROTOCOL_DEFAULT, NULL);
        if (!server->listener || !g_socket_bind (server->listener, addr, TRUE, NULL) ||
            !g_socket_listen (server->listener, NULL))
                g_error ("test server: cannot listen on %s port %u", address, port);
        bound = g_socket_get_local_address (server->listener, NULL);
        server->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
        server->acceptor = g_thread_new ("test-accept", accept_main, server);
        return server;
}

void
egress_test_server_free (EgressTestServer *server)
{
        if (!server)
                return;
        g_cancellable_cancel (server->cancel);
        g_thread_join (server->acceptor);
        g_mutex_lock (&server->lock);
        while (server->running > 0)
                g_cond_wait (&server->cond, &server->lock);
        g_mutex_unlock (&server->lock);
        join_ended (server);
        g_ptr_array_unref (server->ended);
        g_object_unref (server->listener);
        g_object_unref (server->cancel);
        g_clear_object (&server->cert);
        g_string_free (server->heads, TRUE);
        g_mutex_clear (&server->lock);
        g_cond_clear (&server->cond);
        g_free (server);
}

guint16
egress_test_server_get_port (EgressTestServer *server)
{
        return server->port;
}

guint
egress_test_server_get_connections (EgressTestServer *server)
{
        guint n;

        g_mutex_lock (&server->lock);
        n = server->connections;
        g_mutex_unlock (&server->lock);
        return n;
}

guint64
egress_test_server_get_bytes (EgressTestServer *server)
{
        guint64 n;

        g_mutex_lock (&server->lock);
        n = server->bytes;
        g_mutex_unlock (&server->lock);
        return n;
}

char *
egress_test_server_dup_heads (EgressTestServer *server)
{
        char *s;

        g_mutex_lock (&server->lock);
        s = g_strdup (server->heads->str);
        g_mutex_unlock (&server->lock);
        return s;
}
