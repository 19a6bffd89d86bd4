/* egress-http.h — a strict parser for the head of a proxy request from the guest.
 *
 * Accepted: "METHOD SP absolute-form SP HTTP/1.x" for http:// targets and
 * "CONNECT SP host:port SP HTTP/1.x"; CRLF line ends only; at most max_headers header lines
 * of token ":" OWS value; no obs-fold, no NUL/CR/LF in values, no whitespace before the colon.
 * Refused as ambiguous: a second Host, a Host that differs from the target's authority, both
 * Content-Length and Transfer-Encoding, two Content-Lengths, a Transfer-Encoding other than
 * "chunked", userinfo in the target, https:// in absolute form, origin-form targets.
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

G_END_DECLS
