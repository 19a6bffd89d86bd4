/* corral-mcp-server.h — an MCP server (stdio transport) that offers a Corral VM as an execution
 * backend: tools exec, read_file, write_file, list_dir and vm_info, each carried out by the VM's
 * guest agent through a CorralAgentClient, and, when the person turned computer use on, computer
 * on the VM's screen. Nothing is ever run on the host.
 *
 * The client is untrusted: every message and every tool argument is checked (types, sizes, no
 * unknown arguments). An unknown method gets JSON-RPC error -32601, an unknown tool -32602, bad
 * arguments a tool result with isError (so a model can correct itself), a malformed line -32700
 * or -32600. notifications/cancelled stops the call it names. At most 16 calls run at once.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-computer.h"
#include "corral-mcp-message.h"

G_BEGIN_DECLS

#define CORRAL_MCP_SERVER_MAX_CALLS 16

#define CORRAL_TYPE_MCP_SERVER (corral_mcp_server_get_type ())
G_DECLARE_FINAL_TYPE (CorralMcpServer, corral_mcp_server, CORRAL, MCP_SERVER, GObject)

/* agent: a connected client of the VM's agent. vm_name: (nullable) shown by vm_info. */
CorralMcpServer *corral_mcp_server_new (CorralAgentClient *agent, const char *vm_name);

/* Offers the computer tool on computer's screen (referenced; NULL: none, the default). Its
 * results carry the screenshot as MCP image content. log_dir (nullable): the VM folder whose
 * computer.jsonl records each action, "by": "mcp". */
void corral_mcp_server_set_computer (CorralMcpServer *self,
                                     CorralComputer *computer,
                                     const char *log_dir);

/* Serves requests read from input, answers on output; completes at EOF on input once the answers
 * are written, or with an error when the streams fail or the client floods us. */
void corral_mcp_server_run_async (CorralMcpServer *self,
                                  GInputStream *input,
                                  GOutputStream *output,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data);
gboolean corral_mcp_server_run_finish (CorralMcpServer *self, GAsyncResult *result, GError **error);

/* The tool list as tools/list returns it: (transfer full) */
cJSON *corral_mcp_server_list_tools (void);

G_END_DECLS
