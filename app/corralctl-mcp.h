/* corralctl-mcp.h — `corralctl mcp VM`: serves a VM as an MCP server on stdin/stdout, so other
 * MCP clients can use a Corral sandbox as their execution backend (app/mcp/corral-mcp-server.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "mcp". */
int corralctl_mcp_main (int argc, char **argv);
