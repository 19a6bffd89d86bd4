/* corral-mcp-client.h — a client for one MCP server that runs on the host as a child process and
 * talks MCP over its stdin/stdout (the "stdio" transport).
 *
 * Lifecycle: _start_async() spawns the server, negotiates the protocol version (initialize), sends
 * notifications/initialized and reads every page of tools/list. The server is untrusted: its
 * messages are bounded and validated, a malformed message or an exit closes the client with a
 * clear GError (with the tail of the server's stderr) and ::closed — never a crash of the host.
 *
 * Signals:
 *   ::tools-changed ()          the tool list was re-read after notifications/tools/list_changed
 *   ::closed (GError *error)    the server exited, broke the protocol or stopped answering;
 *                               not emitted after _shutdown_async()
 *
 * Threading: use from the thread whose thread-default main context was current at _start_async().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-config.h"

G_BEGIN_DECLS

#define CORRAL_MCP_LATEST_PROTOCOL_VERSION "2025-06-18"
#define CORRAL_MCP_DEFAULT_TIMEOUT_MS 60000
#define CORRAL_MCP_MAX_TOOLS 512
#define CORRAL_MCP_MAX_PENDING 64

/* Versions both sides may speak, newest first; NULL-terminated. */
extern const char *const corral_mcp_protocol_versions[];
gboolean corral_mcp_protocol_version_supported (const char *version);

typedef struct {
        char *name; /* as the server spells it: use it in calls */
        char *title; /* (nullable) */
        char *description; /* (nullable) */
        cJSON *input_schema; /* an object */
} CorralMcpTool;

void corral_mcp_tool_free (CorralMcpTool *tool);

typedef struct {
        cJSON *content; /* an array of content blocks */
        cJSON *structured; /* (nullable) structuredContent */
        gboolean is_error; /* the tool itself failed (not the protocol) */
} CorralMcpToolResult;

void corral_mcp_tool_result_free (CorralMcpToolResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralMcpToolResult, corral_mcp_tool_result_free)

/* The result as text for a model: text blocks as they are, other blocks summarised ("[image:
 * image/png, 1234 bytes]"), at most max_bytes with a note saying how much was cut. */
char *corral_mcp_tool_result_to_text (const CorralMcpToolResult *result, gsize max_bytes);

#define CORRAL_TYPE_MCP_CLIENT (corral_mcp_client_get_type ())
G_DECLARE_FINAL_TYPE (CorralMcpClient, corral_mcp_client, CORRAL, MCP_CLIENT, GObject)

CorralMcpClient *corral_mcp_client_new (const CorralMcpServerConfig *config);

/* Per-request timeout, CORRAL_MCP_DEFAULT_TIMEOUT_MS by default; 0 disables it. A request that
 * times out fails with CORRAL_MCP_ERROR_TIMEOUT and is cancelled on the server. */
void corral_mcp_client_set_timeout (CorralMcpClient *self, guint timeout_ms);

void corral_mcp_client_start_async (CorralMcpClient *self,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean
corral_mcp_client_start_finish (CorralMcpClient *self, GAsyncResult *result, GError **error);

const char *corral_mcp_client_get_name (CorralMcpClient *self);
gboolean corral_mcp_client_is_ready (CorralMcpClient *self);
/* (nullable) the negotiated version, once started */
const char *corral_mcp_client_get_protocol_version (CorralMcpClient *self);
/* (nullable) serverInfo.name, sanitised */
const char *corral_mcp_client_get_server_name (CorralMcpClient *self);
/* (element-type CorralMcpTool) (transfer none): valid until the next ::tools-changed */
GPtrArray *corral_mcp_client_get_tools (CorralMcpClient *self);
const CorralMcpTool *corral_mcp_client_find_tool (CorralMcpClient *self, const char *name);
/* (transfer full) the last few KiB the server wrote to stderr, sanitised */
char *corral_mcp_client_get_stderr_tail (CorralMcpClient *self);

/* arguments: (transfer full) (nullable) an object. Cancelling sends notifications/cancelled. */
void corral_mcp_client_call_tool_async (CorralMcpClient *self,
                                        const char *name,
                                        cJSON *arguments,
                                        GCancellable *cancellable,
                                        GAsyncReadyCallback callback,
                                        gpointer user_data);
CorralMcpToolResult *
corral_mcp_client_call_tool_finish (CorralMcpClient *self, GAsyncResult *result, GError **error);

/* Any request (e.g. "ping"). params: (transfer full) (nullable). Returns the result object. */
void corral_mcp_client_request_async (CorralMcpClient *self,
                                      const char *method,
                                      cJSON *params,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data);
cJSON *
corral_mcp_client_request_finish (CorralMcpClient *self, GAsyncResult *result, GError **error);

/* Closes the server's stdin, waits up to 2 s for it to exit, then SIGTERM, 2 s, SIGKILL. Pending
 * requests fail with CORRAL_MCP_ERROR_CLOSED. Always succeeds. */
void corral_mcp_client_shutdown_async (CorralMcpClient *self,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
void corral_mcp_client_shutdown_finish (CorralMcpClient *self, GAsyncResult *result);

G_END_DECLS
