/* egress-proxy-private.h — state shared by egress-proxy.c (object, listener, watchdog) and
 * egress-conn.c (one connection).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-audit-log.h"
#include "egress-ca.h"
#include "egress-cred-private.h"
#include "egress-http.h"
#include "egress-mask.h"
#include "egress-proxy.h"

#define EGRESS_BUF (64 * 1024)

typedef struct _EgressConn EgressConn;

struct _EgressConn {
        CorralEgressProxy *proxy; /* borrowed: the proxy waits for every connection */
        guint64 id;
        GIOStream *client;
        GSocketConnection *upstream;
        GCancellable *cancellable;
        gint64 started; /* monotonic µs */
        gint64 last_activity; /* under proxy->lock */
        gboolean head_done; /* the idle timeout applies from here on */
        /* What the request was, for the audit record and policy re-checks (under proxy->lock
         * once head_done). */
        char *method;
        char *host;
        CorralHostKind kind;
        guint16 port;
        GInetAddress *address;
        char *rule;
        char *reason;
        char *credential; /* name of the credential used, for the audit */
        CorralEgressCredentials *creds; /* (nullable) the session's, when the request began */
        gboolean allowed;
        gboolean closed_by_policy;
        gboolean http_mode; /* one request: the response's end ends the connection */
        gboolean replied; /* the client got "200 Connection established": no HTTP refusal now */
        guint status;
        guint64 bytes_up; /* client -> upstream */
        guint64 bytes_down;
        /* client input already read past the head */
        guint8 *buf;
        gsize buf_start, buf_len;
        /* (nullable) sends refusals where the client can read them (inside an intercepted
         * tunnel: over its TLS); without it they go on the client stream until "replied" */
        void (*send_refusal) (EgressConn *conn, const GString *response);
        gpointer send_refusal_data;
};

struct _CorralEgressProxy {
        GObject parent_instance;
        GMutex lock;
        GCond cond;
        CorralEgressPolicy *policy;
        GResolver *resolver;
        CorralEgressLimits limits;
        CorralAuditLog *audit; /* (nullable) bounded: rotates, folds repeated denials */
        GHashTable *conns; /* EgressConn* set */
        guint active;
        guint64 next_id;
        GThreadPool *pool; /* connection threads */
        GThread *watchdog;
        GThread *acceptor;
        GSocket *listener;
        GCancellable *stopping;
        gboolean stop;
        /* credential injection */
        CorralEgressCredentials *creds;
        EgressCa *ca;
        char *upstream_ca_file;
        gnutls_certificate_credentials_t upstream_tls;
        GPtrArray *retired_tls; /* replaced upstream credentials, freed at finalize */
        GPtrArray *streams; /* of EgressStreamServer: guest streams being served */
        char *guest_session; /* nullable: the egress.hello result (JSON) */
        /* (nullable) set when the guest sent a credential's real value: the name of that
         * credential; every request is refused from then on */
        char *ended;
};

typedef struct _EgressStreamServer EgressStreamServer;

typedef struct {
        gssize (*read) (EgressConn *conn, gpointer ctx, void *buf, gsize n);
        gboolean (*write) (EgressConn *conn, gpointer ctx, const void *buf, gsize n);
        gpointer ctx;
} EgressEndpoint;

/* egress-conn.c */
void _egress_conn_run (EgressConn *conn);
void _egress_conn_free (EgressConn *conn);
/* The head (and inside an intercepted tunnel the inner head) is complete: from here on the
 * idle timeout applies instead of the head timeout. */
void _egress_conn_head_done (EgressConn *conn);
/* Connects to the first checked address that answers; the request is allowed from then on,
 * unless the policy changed meanwhile and no longer allows it. FALSE: refused (and sent). */
gboolean _egress_conn_open_upstream (EgressConn *conn,
                                     CorralEgressPolicy *policy,
                                     GList *addrs,
                                     guint timeout_s);
/* A head that could not be read: refused when it was malformed or too large, recorded as
 * "incomplete-request" when the client went away or took too long. */
void _egress_head_failed (EgressConn *conn, GError *error);
/* Records a refusal and sends it where the client reads it (send_refusal, or the client stream
 * until it was "replied"). */
void _egress_refuse (EgressConn *conn, guint status, const char *rule, const char *detail);
/* TRUE when data (bytes the guest sent) holds no bound secret in any form (egress-mask.h);
 * otherwise the request is refused and the session ended (_egress_end_session). */
gboolean _egress_check_guest_bytes (EgressConn *conn, const void *data, gsize len);
/* Refuses the request for the secret of binding index and ends the session. */
void _egress_secret_from_guest (EgressConn *conn, gint64 index);
gssize _egress_client_read (EgressConn *conn, void *buf, gsize size, GError **error);
gboolean _egress_write_all (
        GIOStream *stream, const void *data, gsize len, EgressConn *conn, GError **error);
/* Records a refusal; returns the response to send (transfer full). */
GString *_egress_refusal (EgressConn *conn, guint status, const char *rule, const char *detail);
/* detect (nullable): the body is checked for these secrets as _egress_check_guest_bytes does,
 * before it is passed on (a chunked body then goes on in chunks of the proxy's own). */
gboolean _egress_forward_body (EgressConn *conn,
                               const CorralHttpRequest *req,
                               const EgressEndpoint *from,
                               const EgressEndpoint *to,
                               EgressMask *detect);

/* egress-intercept.c: TLS to a host with a bound credential, the secret swapped in; connects
 * to one of addrs only once the inner request head is complete. */
void _egress_intercept (EgressConn *conn,
                        CorralEgressPolicy *policy,
                        GList *addrs,
                        const CorralEgressLimits *limits);
/* egress-reply.c: the reply to a request that had a secret swapped in, from upstream to the
 * client, with that secret (mask) masked; refused ("response-unmaskable") before anything
 * reaches the client when it is encoded or partial. FALSE when refused or broken off. */
gboolean _egress_relay_masked_reply (EgressConn *conn,
                                     const CorralHttpRequest *req,
                                     EgressMask *mask,
                                     const EgressEndpoint *from,
                                     const EgressEndpoint *to);
/* TRUE (and a refusal sent) when a plain request carries a placeholder. */
gboolean _egress_refuse_plain_placeholder (EgressConn *conn, const CorralHttpRequest *req);

/* egress-stream.c */
void _egress_stream_server_free (EgressStreamServer *s);

/* egress-proxy.c */
void _egress_touch (EgressConn *conn);
/* Would policy still allow this open connection? Call with proxy->lock held. */
gboolean _egress_still_allowed (CorralEgressPolicy *policy, EgressConn *conn);
void _egress_audit (CorralEgressProxy *self, EgressConn *conn);
/* The guest sent the real value of credential name: every other connection is closed, the
 * secrets are wiped, every later request is refused ("session-ended") and "session-ended" is
 * emitted (once). */
void _egress_end_session (EgressConn *conn, const char *name);
