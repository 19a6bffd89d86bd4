/* egress-http.c — strict proxy request heads (see egress-http.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-http.h"

#include <glib/gi18n.h>
#include <string.h>

#define MAX_METHOD 16
#define MAX_TARGET 8192

static gboolean
bad (GError **error, const char *message)
{
        g_set_error_literal (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID, message);
        return FALSE;
}

static void
header_free (gpointer p)
{
        CorralHttpHeader *h = p;

        g_free (h->name);
        g_free (h->value);
        g_free (h);
}

void
corral_http_request_free (CorralHttpRequest *req)
{
        if (!req)
                return;
        g_free (req->method);
        g_free (req->host);
        g_free (req->path);
        g_clear_pointer (&req->headers, g_ptr_array_unref);
        g_free (req);
}

gssize
corral_http_head_length (const char *buf, gsize len, gsize max_head)
{
        gsize n = MIN (len, max_head);

        for (gsize i = 3; i < n; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
                    buf[i - 3] == '\r')
                        return (gssize) (i + 1);
        return len >= max_head ? -1 : 0;
}

/* RFC 9110 tchar */
static gboolean
is_tchar (char c)
{
        return g_ascii_isalnum (c) || (c && strchr ("!#$%&'*+-.^_`|~", c));
}

static gboolean
parse_target (CorralHttpRequest *req, const char *t, gsize len, GError **error)
{
        const char *auth, *end;
        gsize i;

        if (req->is_connect && req->host)
                return bad (error, _ ("CONNECT inside a tunnel"));
        if (req->is_connect)
                return corral_egress_parse_authority (t, (gssize) len, 0, &req->kind, &req->host,
                                                      &req->port, error);
        if (req->host) { /* inside an intercepted tunnel: origin-form only */
                if (t[0] != '/' || memchr (t, '#', len))
                        return bad (error, _ ("malformed request target"));
                req->path = g_strndup (t, len);
                return TRUE;
        }
        if (len < 7 || g_ascii_strncasecmp (t, "http://", 7) != 0) {
                if (len >= 8 && g_ascii_strncasecmp (t, "https://", 8) == 0)
                        return bad (error, _ ("https:// targets must use CONNECT"));
                return bad (error, _ ("not a proxy request (the target must be http://host/...)"));
        }
        auth = t + 7;
        for (end = auth; end < t + len && *end != '/' && *end != '?'; end++)
                if (*end == '@')
                        return bad (error, _ ("user names in the target are not allowed"));
        if (!corral_egress_parse_authority (auth, end - auth, 80, &req->kind, &req->host,
                                            &req->port, error))
                return FALSE;
        for (i = (gsize) (end - t); i < len; i++)
                if (t[i] == '#')
                        return bad (error, _ ("fragments are not allowed in the target"));
        if (end == t + len)
                req->path = g_strdup ("/");
        else if (*end == '?')
                req->path = g_strdup_printf ("/%.*s", (int) (len - (gsize) (end - t)), end);
        else
                req->path = g_strndup (end, len - (gsize) (end - t));
        return TRUE;
}

static gboolean
parse_request_line (CorralHttpRequest *req, const char *line, gsize len, GError **error)
{
        const char *sp1 = memchr (line, ' ', len), *sp2;
        gsize mlen, tlen;

        if (!sp1 || (sp2 = memchr (sp1 + 1, ' ', len - (gsize) (sp1 + 1 - line))) == NULL)
                return bad (error, _ ("malformed request line"));
        mlen = (gsize) (sp1 - line);
        tlen = (gsize) (sp2 - sp1 - 1);
        if (mlen == 0 || mlen > MAX_METHOD || tlen == 0 || tlen > MAX_TARGET)
                return bad (error, _ ("malformed request line"));
        for (gsize i = 0; i < mlen; i++)
                if (!g_ascii_isupper (line[i]))
                        return bad (error, _ ("malformed method"));
        for (gsize i = 0; i < tlen; i++)
                if (sp1[1 + i] <= 0x20 || sp1[1 + i] >= 0x7f)
                        return bad (error, _ ("malformed request target"));
        if (len - (gsize) (sp2 + 1 - line) != 8 || strncmp (sp2 + 1, "HTTP/1.", 7) != 0 ||
            (sp2[8] != '0' && sp2[8] != '1'))
                return bad (error, _ ("unsupported HTTP version"));
        req->version_minor = sp2[8] - '0';
        req->method = g_strndup (line, mlen);
        req->is_connect = g_str_equal (req->method, "CONNECT");
        return parse_target (req, sp1 + 1, tlen, error);
}

static gboolean
parse_header (GPtrArray *headers, const char *line, gsize len, GError **error)
{
        const char *colon = memchr (line, ':', len);
        const char *v, *vend;
        CorralHttpHeader *h;

        if (len > 0 && (line[0] == ' ' || line[0] == '\t'))
                return bad (error, _ ("folded header lines are not allowed"));
        if (!colon || colon == line)
                return bad (error, _ ("malformed header line"));
        for (const char *p = line; p < colon; p++)
                if (!is_tchar (*p))
                        return bad (error, _ ("malformed header name"));
        v = colon + 1;
        vend = line + len;
        for (const char *p = v; p < vend; p++)
                if ((guchar) *p < 0x20 && *p != '\t')
                        return bad (error, _ ("control character in a header value"));
                else if (*p == 0x7f)
                        return bad (error, _ ("control character in a header value"));
        while (v < vend && (*v == ' ' || *v == '\t'))
                v++;
        while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
                vend--;
        h = g_new0 (CorralHttpHeader, 1);
        h->name = g_strndup (line, (gsize) (colon - line));
        h->value = g_strndup (v, (gsize) (vend - v));
        g_ptr_array_add (headers, h);
        return TRUE;
}

static guint
count_header (GPtrArray *headers, const char *name, const CorralHttpHeader **ret)
{
        guint n = 0;

        for (guint i = 0; i < headers->len; i++) {
                const CorralHttpHeader *h = g_ptr_array_index (headers, i);

                if (g_ascii_strcasecmp (h->name, name) == 0) {
                        *ret = h;
                        n++;
                }
        }
        return n;
}

const char *
corral_http_request_get_header (const CorralHttpRequest *req, const char *name)
{
        const CorralHttpHeader *h = NULL;

        return count_header (req->headers, name, &h) == 1 ? h->value : NULL;
}

static gboolean
check_host_header (CorralHttpRequest *req, GError **error)
{
        const CorralHttpHeader *h = NULL;
        guint n = count_header (req->headers, "Host", &h);
        g_autofree char *host = NULL;
        CorralHostKind kind;
        guint16 port;

        if (n > 1)
                return bad (error, _ ("more than one Host header"));
        if (n == 0)
                return req->version_minor == 0 || req->is_connect
                               ? TRUE
                               : bad (error, _ ("missing Host header"));
        if (!corral_egress_parse_authority (h->value, -1,
                                            req->is_connect ? req->port : req->default_port, &kind,
                                            &host, &port, NULL) ||
            kind != req->kind || port != req->port || !g_str_equal (host, req->host))
                return bad (error, _ ("the Host header does not match the request target"));
        return TRUE;
}

/* Content-Length or chunked, never both, never twice; no other transfer coding. */
static gboolean
body_framing (GPtrArray *headers,
              gint64 *ret_length,
              gboolean *ret_chunked,
              gboolean *ret_any,
              GError **error)
{
        const CorralHttpHeader *cl = NULL, *te = NULL;
        guint ncl = count_header (headers, "Content-Length", &cl);
        guint nte = count_header (headers, "Transfer-Encoding", &te);
        guint64 v = 0;

        if (ncl > 1 || nte > 1 || (ncl && nte))
                return bad (error, _ ("ambiguous body length"));
        if (nte) {
                if (g_ascii_strcasecmp (te->value, "chunked") != 0)
                        return bad (error, _ ("unsupported Transfer-Encoding"));
                *ret_chunked = TRUE;
        }
        if (ncl) {
                if (!*cl->value || strlen (cl->value) > 15)
                        return bad (error, _ ("invalid Content-Length"));
                for (const char *p = cl->value; *p; p++) {
                        if (!g_ascii_isdigit (*p))
                                return bad (error, _ ("invalid Content-Length"));
                        v = v * 10 + (guint64) (*p - '0');
                }
                *ret_length = (gint64) v;
        }
        *ret_any = ncl || nte;
        return TRUE;
}

static gboolean
check_framing (CorralHttpRequest *req, GError **error)
{
        gboolean any = FALSE;

        if (!body_framing (req->headers, &req->content_length, &req->chunked, &any, error))
                return FALSE;
        if (req->is_connect && any)
                return bad (error, _ ("CONNECT with a body"));
        return TRUE;
}

static CorralHttpRequest *
parse_full (CorralHttpRequest *pre, const char *head, gsize len, guint max_headers, GError **error)
{
        g_autoptr (CorralHttpRequest) req = pre;
        gsize pos = 0;
        gboolean first = TRUE;

        req->headers = g_ptr_array_new_with_free_func (header_free);
        req->content_length = -1;
        if (len < 4 || memcmp (head + len - 4, "\r\n\r\n", 4) != 0) {
                bad (error, _ ("incomplete request head"));
                return NULL;
        }
        while (pos < len - 2) {
                const char *line = head + pos;
                const char *cr = memchr (line, '\r', len - pos);
                gsize llen = (gsize) (cr - line);

                /* cr exists: the head ends with CRLFCRLF */
                if (cr[1] != '\n' || memchr (line, '\n', llen) || memchr (line, '\0', llen)) {
                        bad (error, _ ("lines must end with CRLF"));
                        return NULL;
                }
                if (first ? !parse_request_line (req, line, llen, error)
                          : !parse_header (req->headers, line, llen, error))
                        return NULL;
                if (!first && req->headers->len > max_headers) {
                        g_set_error_literal (error, CORRAL_EGRESS_ERROR,
                                             CORRAL_EGRESS_ERROR_TOO_LARGE,
                                             _ ("too many header lines"));
                        return NULL;
                }
                first = FALSE;
                pos += llen + 2;
        }
        if (first || !check_host_header (req, error) || !check_framing (req, error))
                return NULL;
        return g_steal_pointer (&req);
}

CorralHttpRequest *
corral_http_request_parse (const char *head, gsize len, guint max_headers, GError **error)
{
        CorralHttpRequest *req = g_new0 (CorralHttpRequest, 1);

        req->default_port = 80;
        return parse_full (req, head, len, max_headers, error);
}

CorralHttpRequest *
corral_http_request_parse_origin (const char *head,
                                  gsize len,
                                  guint max_headers,
                                  const char *host,
                                  CorralHostKind kind,
                                  guint16 port,
                                  GError **error)
{
        CorralHttpRequest *req = g_new0 (CorralHttpRequest, 1);

        req->host = g_strdup (host);
        req->kind = kind;
        req->port = port;
        req->default_port = 443;
        return parse_full (req, head, len, max_headers, error);
}

static gboolean
is_hop_by_hop (const CorralHttpRequest *req, const char *name)
{
        static const char *const hop[] = { "Connection",
                                           "Proxy-Connection",
                                           "Keep-Alive",
                                           "Proxy-Authorization",
                                           "Proxy-Authenticate",
                                           "TE",
                                           "Trailer",
                                           "Upgrade" };
        const char *conn = corral_http_request_get_header (req, "Connection");

        for (gsize i = 0; i < G_N_ELEMENTS (hop); i++)
                if (g_ascii_strcasecmp (name, hop[i]) == 0)
                        return TRUE;
        if (conn) {
                g_auto (GStrv) tokens = g_strsplit (conn, ",", 32);

                for (char **t = tokens; *t; t++)
                        if (g_ascii_strcasecmp (g_strstrip (*t), name) == 0 &&
                            g_ascii_strcasecmp (name, "Host") != 0)
                                return TRUE;
        }
        return FALSE;
}

GString *
corral_http_request_to_origin (const CorralHttpRequest *req)
{
        GString *s = g_string_sized_new (512);

        g_string_append_printf (s, "%s %s HTTP/1.%d\r\n", req->method, req->path,
                                req->version_minor);
        if (!corral_http_request_get_header (req, "Host")) {
                g_autofree char *a =
                        corral_egress_format_authority (req->host, req->kind, req->port);
                g_string_append_printf (s, "Host: %s\r\n", a);
        }
        for (guint i = 0; i < req->headers->len; i++) {
                const CorralHttpHeader *h = g_ptr_array_index (req->headers, i);

                if (!is_hop_by_hop (req, h->name))
                        g_string_append_printf (s, "%s: %s\r\n", h->name, h->value);
        }
        g_string_append (s, "Connection: close\r\n\r\n");
        return s;
}

/* Responses -------------------------------------------------------------------------------------- */

void
corral_http_response_free (CorralHttpResponse *resp)
{
        if (!resp)
                return;
        g_clear_pointer (&resp->headers, g_ptr_array_unref);
        g_free (resp);
}

/* "HTTP/1.x NNN[ reason]" */
static gboolean
parse_status_line (CorralHttpResponse *resp, const char *line, gsize len, GError **error)
{
        if (len < 12 || strncmp (line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') ||
            line[8] != ' ' || !g_ascii_isdigit (line[9]) || !g_ascii_isdigit (line[10]) ||
            !g_ascii_isdigit (line[11]) || (len > 12 && line[12] != ' '))
                return bad (error, _ ("malformed status line"));
        for (gsize i = 12; i < len; i++)
                if (((guchar) line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
                        return bad (error, _ ("control character in the status line"));
        resp->version_minor = line[7] - '0';
        resp->status = (guint) ((line[9] - '0') * 100 + (line[10] - '0') * 10 + line[11] - '0');
        return TRUE;
}

CorralHttpResponse *
corral_http_response_parse (const char *head, gsize len, guint max_headers, GError **error)
{
        g_autoptr (CorralHttpResponse) resp = g_new0 (CorralHttpResponse, 1);
        gboolean any = FALSE;
        gsize pos = 0;

        resp->headers = g_ptr_array_new_with_free_func (header_free);
        resp->content_length = -1;
        if (len < 4 || memcmp (head + len - 4, "\r\n\r\n", 4) != 0) {
                bad (error, _ ("incomplete response head"));
                return NULL;
        }
        while (pos < len - 2) {
                const char *line = head + pos;
                const char *cr = memchr (line, '\r', len - pos);
                gsize llen = (gsize) (cr - line);

                if (cr[1] != '\n' || memchr (line, '\n', llen) || memchr (line, '\0', llen)) {
                        bad (error, _ ("lines must end with CRLF"));
                        return NULL;
                }
                if (pos == 0 ? !parse_status_line (resp, line, llen, error)
                             : !parse_header (resp->headers, line, llen, error))
                        return NULL;
                if (resp->headers->len > max_headers) {
                        g_set_error_literal (error, CORRAL_EGRESS_ERROR,
                                             CORRAL_EGRESS_ERROR_TOO_LARGE,
                                             _ ("too many header lines"));
                        return NULL;
                }
                pos += llen + 2;
        }
        if (!body_framing (resp->headers, &resp->content_length, &resp->chunked, &any, error))
                return NULL;
        return g_steal_pointer (&resp);
}

guint
corral_http_response_count_header (const CorralHttpResponse *resp,
                                   const char *name,
                                   const char **ret_value)
{
        const CorralHttpHeader *h = NULL;
        guint n = count_header (resp->headers, name, &h);

        if (ret_value)
                *ret_value = h ? h->value : NULL;
        return n;
}

/* Chunked bodies --------------------------------------------------------------------------------- */

#define MAX_CHUNK_LINE 1024

typedef enum {
        CH_SIZE,
        CH_EXT,
        CH_SIZE_LF,
        CH_DATA,
        CH_DATA_CR,
        CH_DATA_LF,
        CH_TRAILER_START,
        CH_TRAILER,
        CH_TRAILER_LF,
        CH_END_LF,
        CH_DONE,
} ChunkState;

/* One framing byte b in state c->state; FALSE on a framing error. */
static gboolean
chunked_step (CorralHttpChunked *c, guint8 b)
{
        switch (c->state) {
        case CH_SIZE:
                if (g_ascii_isxdigit (b) && c->digits < 15) {
                        c->size = c->size * 16 + (guint64) g_ascii_xdigit_value ((char) b);
                        c->digits++;
                } else if (b == ';' && c->digits) {
                        c->state = CH_EXT;
                        c->line = 0;
                } else if (b == '\r' && c->digits) {
                        c->state = CH_SIZE_LF;
                } else {
                        return FALSE;
                }
                return TRUE;
        case CH_EXT:
        case CH_TRAILER:
                if (b == '\r')
                        c->state = c->state == CH_EXT ? CH_SIZE_LF : CH_TRAILER_LF;
                else if (b == '\n' || b == 0 || ++c->line > MAX_CHUNK_LINE)
                        return FALSE;
                return TRUE;
        case CH_SIZE_LF:
                if (b != '\n')
                        return FALSE;
                c->digits = 0;
                c->state = c->size ? CH_DATA : CH_TRAILER_START;
                return TRUE;
        case CH_DATA_CR:
                c->state = CH_DATA_LF;
                return b == '\r';
        case CH_DATA_LF:
                c->state = CH_SIZE;
                return b == '\n';
        case CH_TRAILER_START:
                c->line = 0;
                c->state = b == '\r' ? CH_END_LF : CH_TRAILER;
                return TRUE;
        case CH_TRAILER_LF:
        case CH_END_LF:
                if (b != '\n')
                        return FALSE;
                c->state = c->state == CH_END_LF ? CH_DONE : CH_TRAILER_START;
                return TRUE;
        default:
                return FALSE;
        }
}

gssize
corral_http_chunked_scan (CorralHttpChunked *c, guint8 *buf, gsize len, gsize *ret_data)
{
        gsize i = 0, out = 0;

        while (i < len && c->state != CH_DONE) {
                if (c->state == CH_DATA) {
                        gsize take = (gsize) MIN ((guint64) (len - i), c->size);

                        if (ret_data)
                                memmove (buf + out, buf + i, take);
                        out += take;
                        i += take;
                        c->size -= take;
                        if (c->size == 0)
                                c->state = CH_DATA_CR;
                        continue;
                }
                if (!chunked_step (c, buf[i++]))
                        return -1;
        }
        if (ret_data)
                *ret_data = out;
        return (gssize) i;
}

gboolean
corral_http_chunked_done (const CorralHttpChunked *c)
{
        return c->state == CH_DONE;
}

void
corral_http_append_chunk (GByteArray *out, const guint8 *data, gsize len, gboolean last)
{
        if (len > 0) {
                char size[32];
                int n = g_snprintf (size, sizeof size, "%zx\r\n", len);

                g_byte_array_append (out, (const guint8 *) size, (guint) n);
                g_byte_array_append (out, data, (guint) len);
                g_byte_array_append (out, (const guint8 *) "\r\n", 2);
        }
        if (last)
                g_byte_array_append (out, (const guint8 *) "0\r\n\r\n", 5);
}
