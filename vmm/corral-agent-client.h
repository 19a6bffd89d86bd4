/* corral-agent-client.h — host side of the host <-> guest agent channel (proto/PROTOCOL.md).
 *
 * One CorralAgentClient talks to one corral-agent over one byte stream. Everything the agent
 * sends is untrusted: frames are bounded before allocation, JSON is validated, error text from the
 * guest is sanitised, and any protocol violation closes the connection with
 * CORRAL_AGENT_ERROR_PROTOCOL.
 *
 * Threading: a client lives on the thread-default main context that was current when
 * corral_agent_client_connect_fd_async() was called; use it from that thread only.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-cjson.h"

#include <gio/gio.h>

G_BEGIN_DECLS

#define CORRAL_AGENT_ERROR (corral_agent_error_quark ())

/* The protocol's error codes, then errors raised on the host. */
typedef enum {
        CORRAL_AGENT_ERROR_INVALID_REQUEST,
        CORRAL_AGENT_ERROR_UNKNOWN_METHOD,
        CORRAL_AGENT_ERROR_NOT_FOUND,
        CORRAL_AGENT_ERROR_EXISTS,
        CORRAL_AGENT_ERROR_PERMISSION_DENIED,
        CORRAL_AGENT_ERROR_TOO_LARGE,
        CORRAL_AGENT_ERROR_TIMEOUT,
        CORRAL_AGENT_ERROR_BUSY,
        CORRAL_AGENT_ERROR_IO,
        CORRAL_AGENT_ERROR_UNSUPPORTED_VERSION,
        CORRAL_AGENT_ERROR_INTERNAL,
        CORRAL_AGENT_ERROR_CONNECTION_LOST, /* EOF, heartbeat timeout, write error, closed */
        CORRAL_AGENT_ERROR_PROTOCOL, /* the guest broke the protocol; connection closed */
} CorralAgentError;

GQuark corral_agent_error_quark (void);

#define CORRAL_TYPE_AGENT_CLIENT (corral_agent_client_get_type ())
G_DECLARE_FINAL_TYPE (CorralAgentClient, corral_agent_client, CORRAL, AGENT_CLIENT, GObject)

CorralAgentClient *corral_agent_client_new (void);

/* Takes ownership of fd: one connected bidirectional stream (a socket or a virtio-serial
 * character device); it is made non-blocking and close-on-exec. Sends HELLO with a fresh nonce and completes once the agent's HELLO echoing it has
 * been read; every frame before that is dropped. Fails with CORRAL_AGENT_ERROR_BUSY while
 * connected; after a disconnect it reconnects (request and channel ids keep increasing). */
void corral_agent_client_connect_fd_async (CorralAgentClient *self,
                                           int fd,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback,
                                           gpointer user_data);
gboolean corral_agent_client_connect_fd_finish (CorralAgentClient *self,
                                                GAsyncResult *result,
                                                GError **error);

/* Closes the connection (if any); pending work fails with CORRAL_AGENT_ERROR_CONNECTION_LOST and
 * ::disconnected is emitted. */
void corral_agent_client_close (CorralAgentClient *self);

/* Default 1000 ms / 3. Takes effect at the next connect. 0 disables heartbeats. */
void
corral_agent_client_set_heartbeat (CorralAgentClient *self, guint interval_ms, guint max_missed);

/* While paused, heartbeats neither send pings nor count missed answers, so a guest that was
 * paused on purpose (virDomainSuspend) is not declared dead. Applies to the current and
 * later connections until unpaused. */
void corral_agent_client_set_heartbeat_paused (CorralAgentClient *self, gboolean paused);

gboolean corral_agent_client_get_connected (CorralAgentClient *self);

/* From the agent's HELLO; valid while connected. Strings are sanitised. */
const char *corral_agent_client_get_agent_version (CorralAgentClient *self);
const char *corral_agent_client_get_boot_id (CorralAgentClient *self);
guint32 corral_agent_client_get_window (CorralAgentClient *self);
guint32 corral_agent_client_get_max_payload (CorralAgentClient *self);
gboolean corral_agent_client_has_feature (CorralAgentClient *self, const char *feature);

/* Generic request. params: (transfer full) (nullable). Result: (transfer full) the "result"
 * object. Cancelling drops the pending reply (it is ignored when it arrives). */
void corral_agent_client_call_async (CorralAgentClient *self,
                                     const char *method,
                                     cJSON *params,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
cJSON *
corral_agent_client_call_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Starts agent_path --fd 3 [extra_args] with one end of a fresh SOCK_STREAM socketpair as its
 * fd 3, in a new session (terminal signals do not reach it; it exits on EOF). *ret_fd is our end
 * (O_CLOEXEC), ready for corral_agent_client_connect_fd_async(). The child is not reaped: use
 * g_child_watch_add() or waitpid() on *ret_pid, then g_spawn_close_pid(). */
gboolean corral_agent_client_spawn_local_agent (const char *agent_path,
                                                const char *const *extra_args,
                                                GPid *ret_pid,
                                                int *ret_fd,
                                                GError **error);

G_END_DECLS
