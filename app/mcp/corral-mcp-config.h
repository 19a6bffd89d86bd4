/* corral-mcp-config.h — the person's MCP servers, in the `mcpServers` JSON shape that desktop MCP
 * clients use:
 *
 *   { "mcpServers": { "NAME": { "command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"} } } }
 *
 * Default location: $XDG_CONFIG_HOME/corral/mcp.json (~/.config/corral/mcp.json); a missing file
 * means no servers. Only stdio servers are supported: an entry with "url" or a "type" other than
 * "stdio" is refused; "disabled": true skips an entry; other keys are ignored. The file is
 * untrusted input: it is bounded (1 MiB, 64 servers, 256 args, 256 env entries, string lengths)
 * and every error names the server and the field.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-message.h"

G_BEGIN_DECLS

#define CORRAL_MCP_CONFIG_MAX_BYTES ((gsize) 1024 * 1024)
#define CORRAL_MCP_CONFIG_MAX_SERVERS 64
#define CORRAL_MCP_CONFIG_MAX_NAME 64
#define CORRAL_MCP_CONFIG_MAX_ARGS 256
#define CORRAL_MCP_CONFIG_MAX_ENV 256
#define CORRAL_MCP_CONFIG_MAX_STRING ((gsize) 64 * 1024)
/* Tool names offered to the model: [a-zA-Z0-9_-]{1,64} (what the LLM APIs accept). */
#define CORRAL_MCP_TOOL_NAME_MAX 64

typedef struct {
        char *name;
        char *command;
        char **args; /* never NULL */
        char **env; /* KEY=VALUE pairs to add to the server's environment; never NULL */
} CorralMcpServerConfig;

typedef struct {
        GPtrArray *servers; /* (element-type CorralMcpServerConfig), in file order */
} CorralMcpConfig;

CorralMcpServerConfig *corral_mcp_server_config_new (const char *name,
                                                     const char *command,
                                                     const char *const *args,
                                                     const char *const *env);
CorralMcpServerConfig *corral_mcp_server_config_copy (const CorralMcpServerConfig *config);
void corral_mcp_server_config_free (CorralMcpServerConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralMcpServerConfig, corral_mcp_server_config_free)

CorralMcpConfig *corral_mcp_config_new_from_data (const char *data, gsize len, GError **error);
/* A missing file gives an empty config when missing_ok. */
CorralMcpConfig *
corral_mcp_config_new_from_file (const char *path, gboolean missing_ok, GError **error);
void corral_mcp_config_free (CorralMcpConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralMcpConfig, corral_mcp_config_free)

/* (transfer full) $XDG_CONFIG_HOME/corral/mcp.json */
char *corral_mcp_config_default_path (void);

/* The name a tool of server is offered under: "server__tool" with every character outside
 * [a-zA-Z0-9_-] replaced by '_'; when longer than 64 it is cut and ends with a hash of the whole
 * name, so different long names stay different. (transfer full) */
char *corral_mcp_tool_name_sanitize (const char *server, const char *tool);
gboolean corral_mcp_tool_name_is_valid (const char *name);

G_END_DECLS
