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
parse_header (CorralHttpRequest *req, const char *line, gsize len, GError **error)
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
        g_ptr_array_add (req->headers, h);
        return TRUE;
}

static guint
count_header (const CorralHttpRequest *req, const char *name, const CorralHttpHeader **ret)
{
        guint n = 0;

        for (guint i = 0; i < req->headers->len; i++) {
                const CorralHttpHeader *h = g_ptr_array_index (req->headers, i);

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

        return count_header (req, name, &h) == 1 ? h->value : NULL;
}

static gboolean
check_host_header (CorralHttpRequest *req, GError **error)
{
        const CorralHttpHeader *h = NULL;
        guint n = count_header (req, "Host", &h);
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

static gboolean
check_framing (CorralHttpRequest *req, GError **error)
{
        const CorralHttpHeader *cl = NULL, *te = NULL;
        guint ncl = count_header (req, "Content-Length", &cl);
        guint nte = count_header (req, "Transfer-Encoding", &te);
        guint64 v = 0;

        if (ncl > 1 || nte > 1 || (ncl && nte))
                return bad (error, _ ("ambiguous request body length"));
        if (nte) {
                if (g_ascii_strcasecmp (te->value, "chunked") != 0)
                        return bad (error, _ ("unsupported Transfer-Encoding"));
                req->chunked = TRUE;
        }
        if (ncl) {
                if (!*cl->value || strlen (cl->value) > 15)
                        return bad (error, _ ("invalid Content-Length"));
                for (const char *p = cl->value; *p; p++) {
                        if (!g_ascii_isdigit (*p))
                                return bad (error, _ ("invalid Content-Length"));
                        v = v * 10 + (guint64) (*p - '0');
                }
                req->content_length = (gint64) v;
        }
        if (req->is_connect && (ncl || nte))
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
                          : !parse_header (req, line, llen, error))
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
