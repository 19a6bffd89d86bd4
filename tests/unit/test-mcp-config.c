/* test-mcp-config.c — the mcpServers file parser, tool-name sanitising and the JSON-RPC decoder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp.h"

#include <string.h>

static void
test_valid (void)
{
        const char *json = "{\"mcpServers\":{"
                           "\"files\":{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"],"
                           "\"env\":{\"TOKEN\":\"x=y\"},\"extra\":1},"
                           "\"off\":{\"command\":\"x\",\"disabled\":true},"
                           "\"bare\":{\"command\":\"/usr/bin/srv\"}}}";
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpConfig) config =
                corral_mcp_config_new_from_data (json, strlen (json), &error);
        CorralMcpServerConfig *files, *bare;

        g_assert_no_error (error);
        g_assert_cmpuint (config->servers->len, ==, 2);
        files = config->servers->pdata[0];
        bare = config->servers->pdata[1];
        g_assert_cmpstr (files->name, ==, "files");
        g_assert_cmpstr (files->command, ==, "npx");
        g_assert_cmpuint (g_strv_length (files->args), ==, 2);
        g_assert_cmpstr (files->env[0], ==, "TOKEN=x=y");
        g_assert_cmpstr (bare->name, ==, "bare");
        g_assert_cmpuint (g_strv_length (bare->args), ==, 0);
}

/* Each line: a document and a piece of the error it must give. */
static void
test_invalid (void)
{
        static const char *const cases[][2] = {
                { "", "not valid" },
                { "[]", "mcpServers" },
                { "{\"mcpServers\":[]}", "mcpServers" },
                { "{\"mcpServers\":{\"a\":{}}}", "“a”: “command” is missing" },
                { "{\"mcpServers\":{\"a\":{\"command\":7}}}", "“a”: “command” must be" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"\"}}}", "“command” must be" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":\"-v\"}}}", "“args”" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":[1]}}}", "“args”" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":[]}}}", "“env”" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"A\":1}}}}", "“env”" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"A B\":\"1\"}}}}", "“env”" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"A\":\"1\",\"A\":\"2\"}}}}",
                  "twice" },
                { "{\"mcpServers\":{\"a\":{\"url\":\"http://x\"}}}", "“url” is not supported" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"type\":\"sse\"}}}", "“type”" },
                { "{\"mcpServers\":{\"a\":1}}", "must be an object" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"a\":{\"command\":\"y\"}}}",
                  "defined twice" },
                /* Injection attempts in names: control characters, NULs, over-long. */
                { "{\"mcpServers\":{\"a\\nb\":{\"command\":\"x\"}}}", "printable" },
                { "{\"mcpServers\":{\"a\\u001b[2J\":{\"command\":\"x\"}}}", "printable" },
                { "{\"mcpServers\":{\"\":{\"command\":\"x\"}}}", "printable" },
                { "{\"mcpServers\":{\"a\\u0000b\":{\"command\":\"x\"}}}", "NUL" },
                { "{\"mcpServers\":{\"a\":{\"command\":\"x\\u0000 rm -rf\"}}}", "NUL" },
                { "{\"mcpServers\":{"
                  "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":"
                  "{\"command\":\"x\"}}}",
                  "printable" },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralMcpConfig) config =
                        corral_mcp_config_new_from_data (cases[i][0], strlen (cases[i][0]), &error);

                g_test_message ("%s -> %s", cases[i][0], error ? error->message : "(accepted)");
                g_assert_null (config);
                g_assert_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG);
                g_assert_nonnull (strstr (error->message, cases[i][1]));
        }
}

static void
test_huge (void)
{
        g_autoptr (GString) doc = g_string_new ("{\"mcpServers\":{");
        g_autoptr (GString) args =
                g_string_new ("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":[");
        g_autofree char *big = g_strnfill (CORRAL_MCP_CONFIG_MAX_BYTES + 1, ' ');
        g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
        g_autoptr (CorralMcpConfig) c1 = NULL, c2 = NULL, c3 = NULL;

        for (int i = 0; i < 65; i++)
                g_string_append_printf (doc, "%s\"s%d\":{\"command\":\"x\"}", i ? "," : "", i);
        g_string_append (doc, "}}");
        c1 = corral_mcp_config_new_from_data (doc->str, doc->len, &e1);
        g_assert_error (e1, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG);
        for (int i = 0; i < 257; i++)
                g_string_append_printf (args, "%s\"a\"", i ? "," : "");
        g_string_append (args, "]}}}");
        c2 = corral_mcp_config_new_from_data (args->str, args->len, &e2);
        g_assert_error (e2, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG);
        c3 = corral_mcp_config_new_from_data (big, strlen (big), &e3);
        g_assert_error (e3, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CONFIG);
}

static void
test_file (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpConfig) missing =
                corral_mcp_config_new_from_file ("/nonexistent/mcp.json", TRUE, &error);
        g_autofree char *path = corral_mcp_config_default_path ();

        g_assert_no_error (error);
        g_assert_cmpuint (missing->servers->len, ==, 0);
        g_assert_true (g_str_has_suffix (path, "/corral/mcp.json"));
}

static void
test_sanitize (void)
{
        static const char *const cases[][3] = {
                { "files", "read_file", "files__read_file" },
                { "my server", "do.it/now", "my_server__do_it_now" },
                { "a\nb", "x\"; rm -rf /", "a_b__x___rm_-rf__" },
                { "ünï", "tool", "__n____tool" },
        };
        g_autofree char *long1 = NULL, *long2 = NULL;

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autofree char *name = corral_mcp_tool_name_sanitize (cases[i][0], cases[i][1]);

                g_assert_cmpstr (name, ==, cases[i][2]);
                g_assert_true (corral_mcp_tool_name_is_valid (name));
        }
        long1 = corral_mcp_tool_name_sanitize (
                "server", "a_very_long_tool_name_that_goes_on_and_on_and_on_forever_1");
        long2 = corral_mcp_tool_name_sanitize (
                "server", "a_very_long_tool_name_that_goes_on_and_on_and_on_forever_2");
        g_assert_cmpuint (strlen (long1), ==, 64);
        g_assert_true (corral_mcp_tool_name_is_valid (long1));
        g_assert_cmpstr (long1, !=, long2);
        g_assert_false (corral_mcp_tool_name_is_valid (""));
        g_assert_false (corral_mcp_tool_name_is_valid ("a b"));
}

static void
test_message (void)
{
        static const struct {
                const char *line;
                int code; /* 0: valid */
                CorralMcpMessageKind kind;
        } cases[] = {
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0,
                  CORRAL_MCP_MESSAGE_REQUEST },
                { "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}", 0,
                  CORRAL_MCP_MESSAGE_REQUEST },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", 0, CORRAL_MCP_MESSAGE_NOTIFICATION },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 0, CORRAL_MCP_MESSAGE_RESULT },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"m\"}}", 0,
                  CORRAL_MCP_MESSAGE_ERROR },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}", -32600,
                  0 },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[]}", -32600, 0 },
                { "{\"jsonrpc\":\"2.0\",\"id\":1e300,\"method\":\"x\"}", -32600, 0 },
                { "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}", -32600, 0 },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\"}}", -32600, 0 },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"\"}", -32600, 0 },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"x\\\\u0000\"}", 0,
                  CORRAL_MCP_MESSAGE_NOTIFICATION },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"x\\u0000\"}", -32700, 0 },
                { "\xff", -32700, 0 },
                { "1", -32600, 0 },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (cJSON) id = NULL;
                int code = 0;
                g_autoptr (CorralMcpMessage) msg = corral_mcp_message_parse (
                        cases[i].line, strlen (cases[i].line), &code, &id, &error);

                g_test_message ("case %zu", i);
                g_assert_cmpint (code, ==, cases[i].code);
                if (cases[i].code == 0)
                        g_assert_cmpint (msg->kind, ==, cases[i].kind);
                else
                        g_assert_null (msg);
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/mcp/config/valid", test_valid);
        g_test_add_func ("/mcp/config/invalid", test_invalid);
        g_test_add_func ("/mcp/config/huge", test_huge);
        g_test_add_func ("/mcp/config/file", test_file);
        g_test_add_func ("/mcp/tool-name/sanitize", test_sanitize);
        g_test_add_func ("/mcp/message/parse", test_message);
        return g_test_run ();
}
