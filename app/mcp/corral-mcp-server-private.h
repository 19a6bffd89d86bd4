/* corral-mcp-server-private.h — the server's tools (corral-mcp-server-tools.c).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-server.h"

G_BEGIN_DECLS

typedef struct {
        CorralAgentClient *agent;
        const char *vm_name; /* (nullable) */
} CorralMcpBackend;

/* Runs tool name with args (an object; borrowed until the task completes). The task returns a
 * CallToolResult object (cJSON *). FALSE when there is no such tool (nothing started). */
gboolean corral_mcp_server_call_tool (const CorralMcpBackend *backend,
                                      const char *name,
                                      const cJSON *args,
                                      GTask *task);

/* A CallToolResult with one text block. (transfer full) */
cJSON *corral_mcp_server_text_result (const char *text, gboolean is_error);

G_END_DECLS
