/* egress-reply.c — the reply to a request that had a secret swapped in, on its way back to the
 * guest. It must be readable whole: a reply with a content coding (gzip...), a partial reply
 * (206, Content-Range) or a switch to another protocol is refused before any of it reaches the
 * guest. The secret is masked in every form egress-mask.h finds, in the head and in the body; a
 * chunked body is de-chunked first (no chunk boundary can split a form) and goes on in chunks
 * of the proxy's own, trailers dropped.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy-private.h"

#include <string.h>

#define MAX_REPLY_HEAD EGRESS_BUF
#define MAX_INTERIM 8 /* 1xx heads before the final one */

typedef struct {
        EgressConn *conn;
        const EgressEndpoint *from, *to;
        EgressMask *mask;
        guint8 *buf; /* MAX_REPLY_HEAD (= EGRESS_BUF) bytes */
        gsize len; /* upstream bytes in buf not handled yet */
} Reply;

static gboolean
send_on (Reply *r, const void *data, gsize n)
{
        if (n == 0)
                return TRUE;
        if (!r->to->write (r->conn, r->to->ctx, data, n))
                return FALSE;
        r->conn->bytes_down += n;
        return TRUE;
}

static void
note_reason (EgressConn *conn, const char *reason)
{
        g_mutex_lock (&conn->proxy->lock);
        if (!conn->reason)
                conn->reason = g_strdup (reason);
        g_mutex_unlock (&conn->proxy->lock);
}

/* Reads until buf starts with a complete head: its length; 0 when upstream ended first, -1
 * when the head is too large. */
static gssize
read_head (Reply *r)
{
        for (;;) {
                gssize head =
                        corral_http_head_length ((const char *) r->buf, r->len, MAX_REPLY_HEAD);
                gssize n;

                if (head != 0)
                        return head;
                n = r->from->read (r->conn, r->from->ctx, r->buf + r->len, MAX_REPLY_HEAD - r->len);
                if (n <= 0)
                        return 0;
                r->len += (gsize) n;
        }
}

/* Why this reply cannot go back masked, or NULL. */
static const char *
unmaskable (const CorralHttpResponse *resp)
{
        const char *coding = NULL;
        guint codings = corral_http_response_count_header (resp, "Content-Encoding", &coding);

        if (resp->status == 206 || corral_http_response_count_header (resp, "Content-Range", NULL))
                return "a partial reply";
        if (resp->status == 101)
                return "a switch to another protocol";
        if (codings > 1 || (codings == 1 && g_ascii_strcasecmp (coding, "identity") != 0))
                return "a compressed or otherwise encoded reply";
        return NULL;
}

static gboolean
has_body (const CorralHttpRequest *req, guint status)
{
        return !g_str_equal (req->method, "HEAD") && status >= 200 && status != 204 &&
               status != 304;
}

/* Content-Length (or until upstream ends) through the mask. */
static gboolean
relay_plain (Reply *r, gint64 content_length)
{
        g_autoptr (EgressMaskStream) s = egress_mask_stream_new (r->mask, TRUE, EGRESS_BUF);
        guint64 left = content_length >= 0 ? (guint64) content_length : G_MAXUINT64;
        const guint8 *out;
        gsize n = (gsize) MIN ((guint64) r->len, left), out_len;

        for (;;) {
                gssize got;

                left -= n;
                egress_mask_stream_feed (s, r->buf, n, left == 0, &out, &out_len);
                if (!send_on (r, out, out_len))
                        return FALSE;
                if (left == 0)
                        return TRUE;
                got = r->from->read (r->conn, r->from->ctx, r->buf,
                                     (gsize) MIN ((guint64) EGRESS_BUF, left));
                if (got < 0)
                        return FALSE;
                if (got == 0) {
                        egress_mask_stream_feed (s, NULL, 0, TRUE, &out, &out_len);
                        return send_on (r, out, out_len);
                }
                n = (gsize) got;
        }
}

/* A chunked body: de-chunked, masked, chunked again. */
static gboolean
relay_dechunked (Reply *r)
{
        g_autoptr (EgressMaskStream) s = egress_mask_stream_new (r->mask, TRUE, EGRESS_BUF);
        g_autoptr (GByteArray) out = g_byte_array_sized_new (EGRESS_BUF + 64);
        CorralHttpChunked ch = { 0 };
        gsize n = r->len;

        for (;;) {
                gsize data = 0, ready_len;
                const guint8 *ready;
                gboolean done;
                gssize got;

                if (corral_http_chunked_scan (&ch, r->buf, n, &data) < 0) {
                        note_reason (r->conn, "malformed chunked reply");
                        return FALSE;
                }
                done = corral_http_chunked_done (&ch);
                egress_mask_stream_feed (s, r->buf, data, done, &ready, &ready_len);
                g_byte_array_set_size (out, 0);
                corral_http_append_chunk (out, ready, ready_len, done);
                if (!send_on (r, out->data, out->len))
                        return FALSE;
                if (done)
                        return TRUE;
                if ((got = r->from->read (r->conn, r->from->ctx, r->buf, EGRESS_BUF)) <= 0)
                        return FALSE;
                n = (gsize) got;
        }
}

/* The final head (after any 1xx): checked, masked, sent. NULL when refused or broken off. */
static CorralHttpResponse *
relay_head (Reply *r)
{
        for (guint interim = 0; interim <= MAX_INTERIM; interim++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralHttpResponse) resp = NULL;
                gssize head = read_head (r);
                const char *why = NULL;

                if (head == 0) {
                        note_reason (r->conn, "no complete reply");
                        return NULL;
                }
                if (head < 0)
                        why = "a reply head over 64 KiB";
                else if (!(resp = corral_http_response_parse ((const char *) r->buf, (gsize) head,
                                                              CORRAL_HTTP_MAX_HEADERS, &error)))
                        why = error->message;
                else
                        why = unmaskable (resp);
                if (why) {
                        _egress_refuse (r->conn, 502, "response-unmaskable", why);
                        return NULL;
                }
                egress_mask_scan (r->mask, r->buf, (gsize) head, TRUE);
                if (!send_on (r, r->buf, (gsize) head))
                        return NULL;
                memmove (r->buf, r->buf + head, r->len - (gsize) head);
                r->len -= (gsize) head;
                if (resp->status >= 200)
                        return g_steal_pointer (&resp);
        }
        note_reason (r->conn, "too many interim replies");
        return NULL;
}

gboolean
_egress_relay_masked_reply (EgressConn *conn,
                            const CorralHttpRequest *req,
                            EgressMask *mask,
                            const EgressEndpoint *from,
                            const EgressEndpoint *to)
{
        g_autofree guint8 *buf = g_malloc (MAX_REPLY_HEAD);
        Reply r = { conn, from, to, mask, buf, 0 };
        g_autoptr (CorralHttpResponse) resp = relay_head (&r);
        gboolean ok;

        if (!resp)
                ok = FALSE;
        else if (!has_body (req, resp->status))
                ok = TRUE;
        else
                ok = resp->chunked ? relay_dechunked (&r) : relay_plain (&r, resp->content_length);
        explicit_bzero (buf, MAX_REPLY_HEAD);
        return ok;
}
