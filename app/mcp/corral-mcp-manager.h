/* corral-mcp-manager.h — every MCP server the person configured, and the union of their tools.
 *
 * Each tool is offered under a collision-safe name, "server__tool" sanitised to
 * [a-zA-Z0-9_-]{1,64} (corral_mcp_tool_name_sanitize()); if two tools still end up with the same
 * name, later ones get "_2", "_3", ... A server that fails to start or dies is reported (::server-
 * closed, corral_mcp_manager_get_error()) and its tools disappear; the others keep working.
 *
 * Signals:
 *   ::tools-changed ()                                the exposed tool list changed
 *   ::server-closed (const char *server, GError *error)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-client.h"

G_BEGIN_DECLS

typedef struct {
        char *name; /* the exposed name, [a-zA-Z0-9_-]{1,64} */
        CorralMcpClient *client;
        CorralMcpTool *tool; /* (transfer none) valid until the next ::tools-changed */
} CorralMcpExposedTool;

#define CORRAL_TYPE_MCP_MANAGER (corral_mcp_manager_get_type ())
G_DECLARE_FINAL_TYPE (CorralMcpManager, corral_mcp_manager, CORRAL, MCP_MANAGER, GObject)

CorralMcpManager *corral_mcp_manager_new (const CorralMcpConfig *config);
void corral_mcp_manager_set_timeout (CorralMcpManager *self, guint timeout_ms);

/* Starts every server; completes when each has started or failed. Fails only when cancelled. */
void corral_mcp_manager_start_async (CorralMcpManager *self,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
gboolean
corral_mcp_manager_start_finish (CorralMcpManager *self, GAsyncResult *result, GError **error);

/* (element-type CorralMcpExposedTool) (transfer none) */
GPtrArray *corral_mcp_manager_get_tools (CorralMcpManager *self);
/* (nullable) why server did not start or stopped */
const GError *corral_mcp_manager_get_error (CorralMcpManager *self, const char *server);

/* name: an exposed name. arguments: (transfer full) (nullable). */
void corral_mcp_manager_call_tool_async (CorralMcpManager *self,
                                         const char *name,
                                         cJSON *arguments,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback,
                                         gpointer user_data);
CorralMcpToolResult *
corral_mcp_manager_call_tool_finish (CorralMcpManager *self, GAsyncResult *result, GError **error);

void corral_mcp_manager_shutdown_async (CorralMcpManager *self,
                                        GAsyncReadyCallback callback,
                                        gpointer user_data);
void corral_mcp_manager_shutdown_finish (CorralMcpManager *self, GAsyncResult *result);

G_END_DECLS
