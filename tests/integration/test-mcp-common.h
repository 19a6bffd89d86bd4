/* test-mcp-common.h — helpers shared by the MCP integration tests (header-only).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-mcp.h"
#include "test-util.h"

#include <stdlib.h>

/* The Node packages of tools/setup-npm, in $CORRAL_NPM_DIR (default
 * ${XDG_CACHE_HOME:-~/.cache}/corral/npm). Without them (or without node) the test skips, or
 * fails when CORRAL_REQUIRE_NPM=1. Returns the path of rel under node_modules, or NULL. */
static inline char *
mcp_test_npm_file (const char *rel)
{
        const char *dir = g_getenv ("CORRAL_NPM_DIR");
        g_autofree char *base =
                dir && *dir ? g_strdup (dir)
                            : g_build_filename (g_get_user_cache_dir (), "corral", "npm", NULL);
        g_autofree char *path = g_build_filename (base, "node_modules", rel, NULL);
        g_autofree char *node = g_find_program_in_path ("node");

        if (node && g_file_test (path, G_FILE_TEST_EXISTS))
                return g_steal_pointer (&path);
        if (g_strcmp0 (g_getenv ("CORRAL_REQUIRE_NPM"), "1") == 0) {
                g_test_message ("missing %s (or node): run tools/setup-npm", path);
                g_test_fail ();
        } else {
                g_test_skip ("Node MCP packages not installed (run tools/setup-npm)");
        }
        return NULL;
}
