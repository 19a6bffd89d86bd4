/* corral-mcp-private.h — shared between the files of the MCP client.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-client.h"

G_BEGIN_DECLS

/* Sends a request with the client's timeout; the task returns a cJSON * (the result object). */
void corral_mcp_client_send_request (CorralMcpClient *self,
                                     const char *method,
                                     cJSON *params,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);

/* Reads every page of tools/list; the task returns a GPtrArray of CorralMcpTool. */
void corral_mcp_client_list_tools_async (CorralMcpClient *self,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback,
                                         gpointer user_data);
GPtrArray *
corral_mcp_client_list_tools_finish (CorralMcpClient *self, GAsyncResult *result, GError **error);

/* Replaces the tool list (takes ownership). */
void corral_mcp_client_set_tools (CorralMcpClient *self, GPtrArray *tools);

/* Checks the shape of a tools/call result; (transfer full) */
CorralMcpToolResult *corral_mcp_tool_result_new_from_json (const cJSON *result, GError **error);

G_END_DECLS
