/* egress-proxy.h — the host egress proxy: the only way out of a session's VM.
 *
 * Each client connection is a GIOStream (a loopback TCP connection in tests and benchmarks, a
 * channel from the guest later) served on its own thread with blocking I/O, so one slow peer
 * never delays another. Per connection: a strict request head (egress-http.h), the policy's
 * decision, one resolution on the host with every address checked (egress-addr.h), and a
 * connection to exactly a checked address. CONNECT tunnels must be TLS whose SNI names the
 * CONNECT host. Redirects are relayed to the client, never followed. A refusal is a 403 whose
 * body names the rule and what the person can do, with an X-Corral-Blocked: RULE header.
 * Every connection ends with one JSONL line in the audit log.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "egress-cred.h"
#include "egress-policy.h"

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
        guint max_connections; /* beyond it: 503 */
        guint max_head; /* bytes of a request head */
        guint max_headers;
        guint header_timeout_ms; /* the whole head (and ClientHello) must arrive within it */
        guint idle_timeout_ms; /* no byte either way for this long: closed */
        guint connect_timeout_s;
} CorralEgressLimits;

#define CORRAL_TYPE_EGRESS_PROXY (corral_egress_proxy_get_type ())
G_DECLARE_FINAL_TYPE (CorralEgressProxy, corral_egress_proxy, CORRAL, EGRESS_PROXY, GObject)

CorralEgressProxy *corral_egress_proxy_new (CorralEgressPolicy *policy);

/* Applies at once: new requests use it, and open connections it no longer allows are closed. */
void corral_egress_proxy_set_policy (CorralEgressProxy *self, CorralEgressPolicy *policy);
/* (transfer full) */
CorralEgressPolicy *corral_egress_proxy_dup_policy (CorralEgressProxy *self);

/* The resolver for upstream names (default: g_resolver_get_default). Tests inject their own. */
void corral_egress_proxy_set_resolver (CorralEgressProxy *self, GResolver *resolver);
void corral_egress_proxy_set_limits (CorralEgressProxy *self, const CorralEgressLimits *limits);
void corral_egress_proxy_get_limits (CorralEgressProxy *self, CorralEgressLimits *ret_limits);

/* Appends JSONL audit records to path (created 0600, O_APPEND). NULL: no audit file. The
 * guest decides how many there are, so the log is bounded (corral-audit-log.h): it rotates at
 * 8 MiB into path.1 ... path.3, and a denial that repeats an identical one within a second is
 * folded into a later line with "count": N (written by the watchdog, at the latest a minute
 * after, and at shutdown). */
gboolean
corral_egress_proxy_set_audit_path (CorralEgressProxy *self, const char *path, GError **error);
/* The rotation size and the older files kept (tests; defaults above). */
void corral_egress_proxy_set_audit_limits (CorralEgressProxy *self,
                                           guint64 max_bytes,
                                           guint generations);
/* Writes every folded count now. */
void corral_egress_proxy_flush_audit (CorralEgressProxy *self);
/* Every audit line from now on also to the system journal (corral_audit_log_set_journal()). */
void corral_egress_proxy_set_audit_journal (CorralEgressProxy *self, gboolean copy);

/* Serves one client connection on a new thread; takes a reference to client. */
void corral_egress_proxy_handle (CorralEgressProxy *self, GIOStream *client);

/* Accepts connections on address (TCP or unix) on a thread of its own until shutdown.
 * ret_address (nullable, transfer full): the bound address (the port chosen for port 0). */
gboolean corral_egress_proxy_listen (CorralEgressProxy *self,
                                     GSocketAddress *address,
                                     GSocketAddress **ret_address,
                                     GError **error);

/* The session's credential bindings (nullable: none). CONNECT tunnels to a bound host are
 * intercepted with the session CA (made on first use) and the placeholder swapped. */
gboolean corral_egress_proxy_set_credentials (CorralEgressProxy *self,
                                              CorralEgressCredentials *creds,
                                              GError **error);
/* Extra CA certificates (PEM) trusted for upstream servers besides the system store. */
gboolean corral_egress_proxy_set_upstream_ca_file (CorralEgressProxy *self,
                                                   const char *path,
                                                   GError **error);
/* (transfer full) the session CA certificate (PEM) for the guest's trust store. */
char *corral_egress_proxy_dup_ca_pem (CorralEgressProxy *self, GError **error);

/* Serves a guest's byte stream (takes fd): each channel the in-VM proxy opens on it
 * (NET-PROTOCOL.md) is handled as a client connection. Runs on a thread until EOF or shutdown. */
gboolean corral_egress_proxy_serve_stream (CorralEgressProxy *self, int fd, GError **error);

/* The session the guest proxy asks for (egress.hello, NET-PROTOCOL.md "Sessions"): its proxy
 * token, the placeholder environment (NAME=placeholder strings, nullable) and the session CA
 * (PEM, nullable). Streams started afterwards hand it out. */
gboolean corral_egress_proxy_set_guest_session (CorralEgressProxy *self,
                                                const char *token,
                                                const char *const *env_lines,
                                                const char *ca_pem,
                                                GError **error);

/* Serves a VM's network port through QEMU's unix socket at socket_path, reconnecting after a
 * broken stream; when the socket is gone (the VM stopped), on_end runs once in the caller's
 * thread-default main context. */
gboolean corral_egress_proxy_connect_guest (CorralEgressProxy *self,
                                            const char *socket_path,
                                            GSourceFunc on_end,
                                            gpointer user_data,
                                            GError **error);

/* A guest that sends the real value of a bound credential (in any form egress-mask.h finds, in
 * any request the proxy can read) has it, which it never should: that request is refused
 * ("secret-from-guest"), the session ends (every open connection closed, the secrets wiped,
 * every later request refused with "session-ended") and the "session-ended" signal is emitted
 * once, on the connection's thread, with the credential's name and the request's host.
 * (transfer full) (nullable) the credential's name once that happened. */
char *corral_egress_proxy_dup_ended (CorralEgressProxy *self);

guint corral_egress_proxy_get_active (CorralEgressProxy *self);

/* Stops listening, cancels every connection and waits for their threads. Also run by dispose. */
void corral_egress_proxy_shutdown (CorralEgressProxy *self);

G_END_DECLS
