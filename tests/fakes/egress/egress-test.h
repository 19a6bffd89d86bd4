/* egress-test.h — loopback peers for the egress proxy's tests and benchmark (not installed).
 *
 * EgressTestServer: an HTTP/1.1 origin server on 127.0.0.1 (thread per connection, blocking),
 * optionally TLS (GIO TLS with a given certificate). It counts connections and keeps the last
 * request head. Paths:
 *   GET  /blob?n=BYTES   BYTES of a deterministic pattern (egress_test_pattern)
 *   GET  /zeros?n=BYTES  BYTES of zeros (cheap, for benchmarks)
 *   POST /discard        reads a Content-Length body, 204 (for benchmarks)
 *   POST /upload         reads the body (Content-Length or chunked), replies its sha256 in hex
 *   GET  /redirect?to=U  302 with Location: U
 *   GET  /slow?ms=N      204 after N milliseconds
 *   GET  /echo           the request head as the body
 *   GET  /reflect?form=F[&pad=N]  the request head reflected as a careless or hostile origin
 *                        might: F is plain, base64 or base64url (after N = 0..2 bytes of
 *                        padding), hex, HEX, reversed, json (PHP-style escapes), html (numeric
 *                        entities), gzip (Content-Encoding: gzip whatever was asked), location
 *                        (a 302 whose Location holds it percent-encoded), chunked (in chunks
 *                        of 5 bytes, and the first 200 bytes again in a trailer), range (a 206
 *                        of the asked Range, when there is one), partial (a 206 always)
 *   anything else        204
 * In raw mode it only counts connections and bytes and never answers.
 *
 * EgressTestResolver: a GResolver answering from a table; each name may have several answers
 * that are handed out in turn (to show that the proxy resolves once); counts lookups.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _EgressTestServer EgressTestServer;

/* tls_cert: (nullable) serve TLS with this certificate. raw: count only, never answer. */
EgressTestServer *egress_test_server_new (GTlsCertificate *tls_cert, gboolean raw);
/* On a given loopback address and port (0: any). */
EgressTestServer *egress_test_server_new_full (const char *address,
                                               guint16 port,
                                               GTlsCertificate *tls_cert,
                                               gboolean raw);
void egress_test_server_free (EgressTestServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EgressTestServer, egress_test_server_free)
guint16 egress_test_server_get_port (EgressTestServer *server);
guint egress_test_server_get_connections (EgressTestServer *server);
guint64 egress_test_server_get_bytes (EgressTestServer *server);
/* (transfer full) every request head received so far, concatenated. */
char *egress_test_server_dup_heads (EgressTestServer *server);

/* Fills buf with the pattern at stream offset off. */
void egress_test_pattern (guint8 *buf, gsize len, guint64 off);

#define EGRESS_TYPE_TEST_RESOLVER (egress_test_resolver_get_type ())
G_DECLARE_FINAL_TYPE (EgressTestResolver, egress_test_resolver, EGRESS, TEST_RESOLVER, GResolver)

EgressTestResolver *egress_test_resolver_new (void);
/* Adds one answer (a comma-separated address list) for name. */
void egress_test_resolver_add (EgressTestResolver *self, const char *name, const char *addresses);
guint egress_test_resolver_get_lookups (EgressTestResolver *self);

G_END_DECLS

G_BEGIN_DECLS

/* Sends data to 127.0.0.1:port and reads until EOF (30 s socket timeout); (transfer full). */
GString *egress_test_request (guint16 port, const char *data, gssize len);
/* The status code of a response, 0 if none. */
guint egress_test_status (const char *response);
/* (transfer full) (nullable) a header's value in a response head. */
char *egress_test_header (const char *response, const char *name);
/* A connected client socket to 127.0.0.1:port (transfer full). */
GSocket *egress_test_connect (guint16 port);

/* Tests that need the keychain run in a private D-Bus session with an unlocked gnome-keyring,
 * its data in a temporary directory (named by EGRESS_TEST_KEYRING_ENV, removed afterwards), so
 * they never touch the person's own keychain. main() calls egress_test_keyring_reexec(argv)
 * when egress_test_keyring_dir() is NULL (it prints a TAP skip when the tools are missing). */
#define EGRESS_TEST_KEYRING_ENV "CORRAL_KEYCHAIN_TEST_DIR"
const char *egress_test_keyring_dir (void);
int egress_test_keyring_reexec (char **argv);

/* The tests' certificates (tests/fakes/egress/make-test-certs.sh): a CA and one leaf per
 * name, in a new temporary directory (transfer full). */
char *egress_test_make_certs (const char *const *names);

G_END_DECLS
