/* corral-mcp-transport.h — MCP's stdio transport: newline-delimited JSON-RPC over a pair of
 * streams, shared by the client (talking to a server's stdin/stdout) and the server (talking to
 * its own).
 *
 * Reading is bounded: a line longer than CORRAL_MCP_MAX_LINE closes the transport with
 * CORRAL_MCP_ERROR_TOO_LARGE before it is held in memory whole. Writes are queued and go out in
 * order, one at a time.
 *
 * Signals:
 *   ::message (CorralMcpMessage *msg)         a well-formed message (borrowed for the emission)
 *   ::invalid (int code, gpointer id, GError *error)
 *                                             a line that is not a valid message; id is a cJSON *
 *                                             (nullable, borrowed) when one could be read, code
 *                                             the JSON-RPC error to answer with
 *   ::closed (GError *error)                  once: EOF (CORRAL_MCP_ERROR_CLOSED), a read or write
 *                                             error, an over-long line, or _close()
 *   ::input-closed ()                         EOF on input when half-close is on (see below)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-message.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_MCP_TRANSPORT (corral_mcp_transport_get_type ())
G_DECLARE_FINAL_TYPE (CorralMcpTransport, corral_mcp_transport, CORRAL, MCP_TRANSPORT, GObject)

/* Takes references to both streams. Nothing is read until _start(). */
CorralMcpTransport *corral_mcp_transport_new (GInputStream *input, GOutputStream *output);
void corral_mcp_transport_start (CorralMcpTransport *self);
/* With half-close, EOF on input emits ::input-closed and writing goes on until _close(): a
 * server still answers the requests that came before its client's EOF. */
void corral_mcp_transport_set_half_close (CorralMcpTransport *self, gboolean half_close);
/* msg: (transfer full). Serialised on one line (cJSON escapes newlines in strings). Dropped
 * after close. */
void corral_mcp_transport_send (CorralMcpTransport *self, cJSON *msg);
/* Completes once everything queued so far has been written (or the transport closed). */
void corral_mcp_transport_flush_async (CorralMcpTransport *self,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
gboolean
corral_mcp_transport_flush_finish (CorralMcpTransport *self, GAsyncResult *result, GError **error);
/* Stops reading and writing; emits ::closed with error (transfer none, nullable: a plain
 * CORRAL_MCP_ERROR_CLOSED) if not closed yet. Does not close the streams' fds. */
void corral_mcp_transport_close (CorralMcpTransport *self, const GError *error);
gboolean corral_mcp_transport_is_closed (CorralMcpTransport *self);

G_END_DECLS
