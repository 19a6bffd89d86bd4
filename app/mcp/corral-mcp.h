/* corral-mcp.h — the public header of the MCP library (app/mcp): the person's MCP servers as a
 * client (config, client, manager) and `corralctl mcp`'s server that serves a VM.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp-client.h"
#include "corral-mcp-config.h"
#include "corral-mcp-manager.h"
#include "corral-mcp-message.h"
#include "corral-mcp-server.h"
#include "corral-mcp-transport.h"
