/* egress-hello.h — reads the server name (SNI) from the first bytes of a TLS connection.
 *
 * A CONNECT tunnel is only opened when the client's ClientHello names the host it asked for.
 * The parser is bounded (the ClientHello may span records, up to CORRAL_HELLO_MAX bytes in all)
 * and strict: every length must agree with its container, duplicate extensions and more than one
 * server name are refused.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define CORRAL_HELLO_MAX (16 * 1024 + 5)

typedef enum {
        CORRAL_HELLO_NEED_MORE = 0,
        CORRAL_HELLO_OK = 1,
        CORRAL_HELLO_INVALID = -1,
} CorralHelloResult;

/* On CORRAL_HELLO_OK, *ret_sni is the host name (transfer full), or NULL when the ClientHello
 * has no server_name extension. ret_why (nullable) gets a static reason on INVALID. */
CorralHelloResult
corral_tls_hello_parse (const guint8 *data, gsize len, char **ret_sni, const char **ret_why);

G_END_DECLS
