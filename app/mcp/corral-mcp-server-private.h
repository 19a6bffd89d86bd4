/* corral-mcp-server-private.h — the server's tools (corral-mcp-server-tools.c).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-computer.h"
#include "corral-mcp-server.h"

G_BEGIN_DECLS

typedef struct {
        CorralAgentClient *agent;
        const char *vm_name; /* (nullable) */
        CorralComputer *computer; /* (nullable) the VM's screen, when computer use is on */
        const char *computer_log_dir; /* (nullable) the VM folder whose computer.jsonl records */
} CorralMcpBackend;

/* The tools/list result's tools for backend (the computer tool only with a screen). */
cJSON *corral_mcp_server_backend_tools (const CorralMcpBackend *backend);

/* Runs tool name with args (an object; borrowed until the task completes). The task returns a
 * CallToolResult object (cJSON *). FALSE when there is no such tool (nothing started). */
gboolean corral_mcp_server_call_tool (const CorralMcpBackend *backend,
                                      const char *name,
                                      const cJSON *args,
                                      GTask *task);

/* A CallToolResult with one text block. (transfer full) */
cJSON *corral_mcp_server_text_result (const char *text, gboolean is_error);

G_END_DECLS
