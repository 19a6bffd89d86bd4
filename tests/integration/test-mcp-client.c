/* test-mcp-client.c — the MCP client and manager against real servers: the reference servers
 * (@modelcontextprotocol/server-everything and server-filesystem, from tools/setup-npm) and a
 * scripted one (mcp-fake/fake-server.py) that crashes, prints garbage, floods, stalls and asks
 * for things we do not offer.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy.h"
#include "test-mcp-common.h"

#include <glib/gstdio.h>
#include <string.h>

static CorralMcpServerConfig *
fake_config (const char *name, const char *mode)
{
        g_autofree char *script =
                g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "tests", "integration",
                                  "mcp-fake", "fake-server.py", NULL);
        const char *args[] = { script, mode, NULL };

        return corral_mcp_server_config_new (name, "python3", args, NULL);
}

static gboolean
start (CorralMcpClient *client, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_mcp_client_start_async (client, NULL, test_store_result, &res);
        res = test_wait_result (&res);
        return corral_mcp_client_start_finish (client, res, error);
}

static CorralMcpClient *
start_ok (const CorralMcpServerConfig *config)
{
        g_autoptr (CorralMcpClient) client = corral_mcp_client_new (config);
        g_autoptr (GError) error = NULL;

        start (client, &error);
        g_assert_no_error (error);
        return g_steal_pointer (&client);
}

static CorralMcpToolResult *
call (CorralMcpClient *client, const char *name, const char *args, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_mcp_client_call_tool_async (client, name, args ? cJSON_Parse (args) : NULL, NULL,
                                           test_store_result, &res);
        res = test_wait_result (&res);
        return corral_mcp_client_call_tool_finish (client, res, error);
}

static char *
call_text (CorralMcpClient *client, const char *name, const char *args)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpToolResult) result = call (client, name, args, &error);

        g_assert_no_error (error);
        g_assert_false (result->is_error);
        return corral_mcp_tool_result_to_text (result, 65536);
}

static void
shutdown_client (CorralMcpClient *client)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_mcp_client_shutdown_async (client, test_store_result, &res);
        res = test_wait_result (&res);
        corral_mcp_client_shutdown_finish (client, res);
}

static void
test_everything (void)
{
        g_autofree char *server =
                mcp_test_npm_file ("@modelcontextprotocol/server-everything/dist/index.js");
        const char *args[] = { server, "stdio", NULL };
        g_autoptr (CorralMcpServerConfig) config = NULL;
        g_autoptr (CorralMcpClient) client = NULL;
        g_autofree char *echo = NULL, *sum = NULL, *image = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (cJSON) pong = NULL;

        if (!server)
                return;
        config = corral_mcp_server_config_new ("everything", "node", args, NULL);
        client = start_ok (config);
        g_assert_cmpstr (corral_mcp_client_get_protocol_version (client), ==, "2025-06-18");
        g_assert_nonnull (corral_mcp_client_find_tool (client, "echo"));
        g_assert_nonnull (corral_mcp_client_find_tool (client, "get-sum"));
        echo = call_text (client, "echo", "{\"message\":\"hi from corral\"}");
        g_assert_nonnull (strstr (echo, "hi from corral"));
        sum = call_text (client, "get-sum", "{\"a\":2,\"b\":3}");
        g_assert_nonnull (strstr (sum, "5"));
        image = call_text (client, "get-annotated-message",
                           "{\"messageType\":\"success\",\"includeImage\":true}");
        g_assert_nonnull (strstr (image, "[image: image/png"));
        corral_mcp_client_request_async (client, "ping", NULL, NULL, test_store_result, &res);
        res = test_wait_result (&res);
        pong = corral_mcp_client_request_finish (client, res, NULL);
        g_assert_true (cJSON_IsObject (pong));
        shutdown_client (client);
}

static const char *
read_tool (CorralMcpClient *client)
{
        return corral_mcp_client_find_tool (client, "read_text_file") ? "read_text_file"
                                                                      : "read_file";
}

static void
test_filesystem (void)
{
        g_autofree char *server =
                mcp_test_npm_file ("@modelcontextprotocol/server-filesystem/dist/index.js");
        g_autofree char *dir = g_dir_make_tmp ("corral-mcp-XXXXXX", NULL);
        g_autofree char *file = g_build_filename (dir, "hello.txt", NULL);
        const char *args[] = { server, dir, NULL };
        g_autoptr (CorralMcpServerConfig) config = NULL;
        g_autoptr (CorralMcpClient) client = NULL;
        g_autofree char *listing = NULL, *text = NULL, *list_args = NULL, *read_args = NULL;

        if (!server) {
                g_rmdir (dir);
                return;
        }
        g_assert_true (g_file_set_contents (file, "contents of hello\n", -1, NULL));
        config = corral_mcp_server_config_new ("files", "node", args, NULL);
        client = start_ok (config);
        list_args = g_strdup_printf ("{\"path\":\"%s\"}", dir);
        listing = call_text (client, "list_directory", list_args);
        g_assert_nonnull (strstr (listing, "hello.txt"));
        read_args = g_strdup_printf ("{\"path\":\"%s\"}", file);
        text = call_text (client, read_tool (client), read_args);
        g_assert_nonnull (strstr (text, "contents of hello"));
        shutdown_client (client);
        g_unlink (file);
        g_rmdir (dir);
}

static void
on_tools_changed (CorralMcpClient *client, gboolean *flag)
{
        *flag = TRUE;
}

static void
test_fake_good (void)
{
        g_autoptr (CorralMcpServerConfig) config = fake_config ("fake", "good");
        g_autoptr (CorralMcpClient) client = start_ok (config);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpToolResult) none = NULL;
        g_autofree char *hello = NULL, *change = NULL, *ask = NULL;
        gboolean changed = FALSE;

        /* Both pages of tools/list, and the server's name made printable. */
        g_assert_cmpuint (corral_mcp_client_get_tools (client)->len, ==, 4);
        g_assert_cmpstr (corral_mcp_client_get_server_name (client), ==, "fake?[31m");
        hello = call_text (client, "hello", "{\"who\":\"world\"}");
        g_assert_cmpstr (hello, ==, "hello world\n[image: image/png, about 3 bytes]");
        none = call (client, "missing", NULL, &error);
        g_assert_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_UNKNOWN_TOOL);
        g_signal_connect (client, "tools-changed", G_CALLBACK (on_tools_changed), &changed);
        change = call_text (client, "change", NULL);
        test_wait_flag (&changed, 10000, "tools-changed");
        g_assert_nonnull (corral_mcp_client_find_tool (client, "added"));
        /* sampling/createMessage refused with -32601, ping answered. */
        ask = call_text (client, "ask", NULL);
        g_assert_nonnull (strstr (ask, "\"error\": {\"code\": -32601, \"message\": \"Method not "
                                       "found\"}, \"id\": \"s1\""));
        g_assert_nonnull (strstr (ask, "\"id\": \"s2\", \"result\": {}"));
        shutdown_client (client);
}

static void
on_closed (CorralMcpClient *client, GError *error, GError **ret)
{
        *ret = g_error_copy (error);
}

static void
expect_start_failure (const char *mode, int code, const char *text)
{
        g_autoptr (CorralMcpServerConfig) config = fake_config ("broken", mode);
        g_autoptr (CorralMcpClient) client = corral_mcp_client_new (config);
        g_autoptr (GError) error = NULL;
        g_autoptr (GError) closed = NULL;

        g_signal_connect (client, "closed", G_CALLBACK (on_closed), &closed);
        g_assert_false (start (client, &error));
        g_assert_error (error, CORRAL_MCP_ERROR, code);
        g_test_message ("%s: %s", mode, error->message);
        g_assert_nonnull (strstr (error->message, "“broken”"));
        g_assert_nonnull (strstr (error->message, text));
        g_assert_false (corral_mcp_client_is_ready (client));
        shutdown_client (client);
}

static void
test_crash (void)
{
        expect_start_failure ("crash", CORRAL_MCP_ERROR_CLOSED, "something went badly wrong");
        expect_start_failure ("crash", CORRAL_MCP_ERROR_CLOSED, "status 3");
}

/* A server that stops reading: the client's next write fails (EPIPE) and the start fails with
 * it, instead of SIGPIPE killing the whole program. */
static void
test_deaf (void)
{
        g_autoptr (CorralMcpServerConfig) config = fake_config ("deaf", "deaf");
        g_autoptr (CorralMcpClient) client = corral_mcp_client_new (config);
        g_autoptr (GError) error = NULL;

        g_assert_false (start (client, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE);
        g_assert_nonnull (strstr (error->message, "stopped"));
        g_assert_false (corral_mcp_client_is_ready (client));
        shutdown_client (client);
}

static void
test_garbage (void)
{
        expect_start_failure ("garbage", CORRAL_MCP_ERROR_PROTOCOL, "invalid message");
}

static void
test_huge (void)
{
        expect_start_failure ("huge", CORRAL_MCP_ERROR_TOO_LARGE, "longer than");
}

static void
test_old_version (void)
{
        expect_start_failure ("oldver", CORRAL_MCP_ERROR_UNSUPPORTED_VERSION, "1999-01-01");
}

static void
test_no_such_command (void)
{
        const char *args[] = { NULL };
        g_autoptr (CorralMcpServerConfig) config =
                corral_mcp_server_config_new ("ghost", "/nonexistent/mcp-server", args, NULL);
        g_autoptr (CorralMcpClient) client = corral_mcp_client_new (config);
        g_autoptr (GError) error = NULL;

        g_assert_false (start (client, &error));
        g_assert_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_CLOSED);
        g_assert_nonnull (strstr (error->message, "could not start"));
}

static void
test_slow (void)
{
        g_autoptr (CorralMcpServerConfig) config = fake_config ("slow", "slow");
        g_autoptr (CorralMcpClient) client = start_ok (config);
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpToolResult) result = NULL;

        corral_mcp_client_set_timeout (client, 300);
        result = call (client, "hello", NULL, &error);
        g_assert_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TIMEOUT);
        g_clear_error (&error);
        /* Still usable after a timeout; a cancelled call fails at once. */
        g_assert_true (corral_mcp_client_is_ready (client));
        corral_mcp_client_set_timeout (client, 0);
        corral_mcp_client_call_tool_async (client, "hello", NULL, cancellable, test_store_result,
                                           &res);
        g_cancellable_cancel (cancellable);
        res = test_wait_result (&res);
        g_assert_null (corral_mcp_client_call_tool_finish (client, res, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        shutdown_client (client);
}

static void
test_manager (void)
{
        g_autoptr (CorralMcpConfig) config = g_new0 (CorralMcpConfig, 1);
        g_autoptr (CorralMcpManager) manager = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpToolResult) result = NULL;
        GPtrArray *tools;

        config->servers =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_mcp_server_config_free);
        g_ptr_array_add (config->servers, fake_config ("a.b", "good"));
        g_ptr_array_add (config->servers, fake_config ("a_b", "good"));
        g_ptr_array_add (config->servers, fake_config ("dead", "crash"));
        manager = corral_mcp_manager_new (config);
        corral_mcp_manager_start_async (manager, NULL, test_store_result, &res);
        res = test_wait_result (&res);
        g_assert_true (corral_mcp_manager_start_finish (manager, res, &error));
        g_clear_object (&res);
        tools = corral_mcp_manager_get_tools (manager);
        g_assert_cmpuint (tools->len, ==, 8);
        g_assert_cmpstr (((CorralMcpExposedTool *) tools->pdata[0])->name, ==, "a_b__hello");
        g_assert_cmpstr (((CorralMcpExposedTool *) tools->pdata[3])->name, ==,
                         "a_b__bad_name_with_dots");
        g_assert_cmpstr (((CorralMcpExposedTool *) tools->pdata[4])->name, ==, "a_b__hello_2");
        g_assert_nonnull (corral_mcp_manager_get_error (manager, "dead"));
        corral_mcp_manager_call_tool_async (manager, "a_b__hello_2",
                                            cJSON_Parse ("{\"who\":\"2\"}"), NULL,
                                            test_store_result, &res);
        res = test_wait_result (&res);
        result = corral_mcp_manager_call_tool_finish (manager, res, &error);
        g_assert_no_error (error);
        g_clear_object (&res);
        corral_mcp_manager_shutdown_async (manager, test_store_result, &res);
        res = test_wait_result (&res);
        corral_mcp_manager_shutdown_finish (manager, res);
}

static GPtrArray *
started_tools (CorralMcpManager *manager)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;

        corral_mcp_manager_start_async (manager, NULL, test_store_result, &res);
        res = test_wait_result (&res);
        g_assert_true (corral_mcp_manager_start_finish (manager, res, &error));
        return corral_mcp_manager_get_tools (manager);
}

static void
shutdown_manager (CorralMcpManager *manager)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_mcp_manager_shutdown_async (manager, test_store_result, &res);
        res = test_wait_result (&res);
        corral_mcp_manager_shutdown_finish (manager, res);
}

/* The organisation's mcp.* keys (SECURITY.md M4): a server of the person's it did not allow
 * is never started and says why; with the person's servers turned off none is; a server it
 * provides starts in their place. */
static void
test_manager_policy (void)
{
        g_autoptr (CorralMcpConfig) config = g_new0 (CorralMcpConfig, 1);
        g_autofree char *dir = g_dir_make_tmp ("corral-mcp-policy-XXXXXX", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *script =
                g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "tests", "integration",
                                  "mcp-fake", "fake-server.py", NULL);
        g_autofree char *provided = NULL;
        const GError *why;

        config->servers =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_mcp_server_config_free);
        g_ptr_array_add (config->servers, fake_config ("notes", "good"));
        g_ptr_array_add (config->servers, fake_config ("shell", "good"));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);

        g_assert_true (g_file_set_contents (policy, "{\"mcp\": {\"allowedServers\": [\"notes\"]}}",
                                            -1, NULL));
        {
                g_autoptr (CorralMcpManager) manager = corral_mcp_manager_new (config);
                GPtrArray *tools = started_tools (manager);

                g_assert_cmpuint (tools->len, >, 0);
                for (guint i = 0; i < tools->len; i++)
                        g_assert_true (g_str_has_prefix (
                                ((CorralMcpExposedTool *) tools->pdata[i])->name, "notes__"));
                why = corral_mcp_manager_get_error (manager, "shell");
                g_assert_nonnull (why);
                g_assert_true (
                        g_error_matches (why, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED));
                g_assert_nonnull (strstr (why->message, "set by your organisation"));
                g_assert_null (corral_mcp_manager_get_error (manager, "notes"));
                shutdown_manager (manager);
        }

        provided = g_strdup_printf (
                "{\"mcp\": {\"personMayAddServers\": false, \"servers\": [{\"name\": "
                "\"company\", \"command\": [\"python3\", \"%s\", \"good\"]}]}}",
                script);
        g_assert_true (g_file_set_contents (policy, provided, -1, NULL));
        {
                g_autoptr (CorralMcpManager) manager = corral_mcp_manager_new (config);
                GPtrArray *tools = started_tools (manager);

                g_assert_cmpuint (tools->len, >, 0);
                for (guint i = 0; i < tools->len; i++)
                        g_assert_true (g_str_has_prefix (
                                ((CorralMcpExposedTool *) tools->pdata[i])->name, "company__"));
                g_assert_nonnull (corral_mcp_manager_get_error (manager, "notes"));
                g_assert_nonnull (corral_mcp_manager_get_error (manager, "shell"));
                shutdown_manager (manager);
        }

        /* A damaged policy: none of the person's servers starts. */
        g_assert_true (g_file_set_contents (policy, "{\"mcp\": 1}", -1, NULL));
        {
                g_autoptr (CorralMcpManager) manager = corral_mcp_manager_new (config);

                g_assert_cmpuint (started_tools (manager)->len, ==, 0);
                g_assert_nonnull (
                        strstr (corral_mcp_manager_get_error (manager, "notes")->message, policy));
                shutdown_manager (manager);
        }
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_unlink (policy);
        g_rmdir (dir);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/mcp/client/everything", test_everything);
        g_test_add_func ("/mcp/client/filesystem", test_filesystem);
        g_test_add_func ("/mcp/client/fake", test_fake_good);
        g_test_add_func ("/mcp/client/crash", test_crash);
        g_test_add_func ("/mcp/client/deaf", test_deaf);
        g_test_add_func ("/mcp/client/garbage", test_garbage);
        g_test_add_func ("/mcp/client/huge-line", test_huge);
        g_test_add_func ("/mcp/client/old-version", test_old_version);
        g_test_add_func ("/mcp/client/no-such-command", test_no_such_command);
        g_test_add_func ("/mcp/client/slow", test_slow);
        g_test_add_func ("/mcp/client/manager", test_manager);
        g_test_add_func ("/mcp/client/manager-policy", test_manager_policy);
        return g_test_run ();
}
