/* egress-http.h — a strict parser for the head of a proxy request from the guest.
 *
 * Accepted: "METHOD SP absolute-form SP HTTP/1.x" for http:// targets and
 * "CONNECT SP host:port SP HTTP/1.x"; CRLF line ends only; at most max_headers header lines
 * of token ":" OWS value; no obs-fold, no NUL/CR/LF in values, no whitespace before the colon.
 * Refused as ambiguous: a second Host, a Host that differs from the target's authority, both
 * Content-Length and Transfer-Encoding, two Content-Lengths, a Transfer-Encoding other than
 * "chunked", userinfo in the target, https:// in absolute form, origin-form targets.
 * Also: origin response heads and chunked framing, for the places the proxy looks inside.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "egress-addr.h"

G_BEGIN_DECLS

#define CORRAL_HTTP_MAX_HEAD (16 * 1024)
#define CORRAL_HTTP_MAX_HEADERS 100

typedef struct {
        char *name; /* as sent */
        char *value; /* OWS trimmed */
} CorralHttpHeader;

typedef struct {
        char *method;
        gboolean is_connect;
        int version_minor; /* 0 or 1 */
        char *host; /* canonical (egress-addr.h) */
        CorralHostKind kind;
        guint16 port;
        char *path; /* origin-form for forwarding ("/" when empty); NULL for CONNECT */
        GPtrArray *headers; /* of CorralHttpHeader */
        gint64 content_length; /* -1: none */
        gboolean chunked;
        guint16 default_port; /* for the Host header: 80, or 443 inside a TLS tunnel */
} CorralHttpRequest;

void corral_http_request_free (CorralHttpRequest *req);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralHttpRequest, corral_http_request_free)

/* Length of the head (through the blank line) when buf holds a complete one, 0 when more bytes
 * are needed, -1 when the head is longer than max_head. */
gssize corral_http_head_length (const char *buf, gsize len, gsize max_head);

/* Parses exactly one head (as measured by corral_http_head_length). */
CorralHttpRequest *
corral_http_request_parse (const char *head, gsize len, guint max_headers, GError **error);

/* A request inside an intercepted TLS tunnel to host:port: origin-form target ("/path"), and
 * a Host header, when present, naming that same host (port 443 by default). CONNECT refused. */
CorralHttpRequest *corral_http_request_parse_origin (const char *head,
                                                     gsize len,
                                                     guint max_headers,
                                                     const char *host,
                                                     CorralHostKind kind,
                                                     guint16 port,
                                                     GError **error);

/* (nullable) (transfer none) the value of the only header with this name (case-insensitive). */
const char *corral_http_request_get_header (const CorralHttpRequest *req, const char *name);

/* Serialises the request for the origin server: origin-form target, hop-by-hop and proxy
 * headers removed, "Connection: close" added. */
GString *corral_http_request_to_origin (const CorralHttpRequest *req);

/* A response head from an origin (egress-intercept.c reads them where it must look inside).
 * "HTTP/1.x NNN reason", CRLF lines, header lines as for requests; Content-Length and
 * Transfer-Encoding as for requests (only "chunked", never both, never twice). */
typedef struct {
        int version_minor;
        guint status;
        GPtrArray *headers; /* of CorralHttpHeader */
        gint64 content_length; /* -1: none */
        gboolean chunked;
} CorralHttpResponse;

void corral_http_response_free (CorralHttpResponse *resp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralHttpResponse, corral_http_response_free)

CorralHttpResponse *
corral_http_response_parse (const char *head, gsize len, guint max_headers, GError **error);
/* How many headers have this name (case-insensitive); ret_value: (nullable) the last one's. */
guint corral_http_response_count_header (const CorralHttpResponse *resp,
                                         const char *name,
                                         const char **ret_value);

/* Chunked framing, followed byte by byte across reads (zero-initialised to start). */
typedef struct {
        guint state;
        guint64 size;
        guint digits;
        gsize line; /* bytes of the current extension or trailer line */
} CorralHttpChunked;

/* Follows the framing over buf: returns how many bytes of buf belong to the body (up to the end
 * of the last chunk's trailers), -1 on a framing error. ret_data (nullable): the chunk data
 * among them is moved to the start of buf (in place) and its length set here. */
gssize corral_http_chunked_scan (CorralHttpChunked *c, guint8 *buf, gsize len, gsize *ret_data);
gboolean corral_http_chunked_done (const CorralHttpChunked *c);
/* Appends len bytes of data as one chunk (nothing when len is 0), then with last the final
 * chunk and the end of the body. */
void corral_http_append_chunk (GByteArray *out, const guint8 *data, gsize len, gboolean last);

G_END_DECLS
