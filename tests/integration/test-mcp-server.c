/* test-mcp-server.c — the MCP server that serves a VM, against a local corral-agent (no VM):
 * in-process over pipes with malformed and hostile JSON-RPC lines, then `corralctl mcp
 * --local-agent` driven by the official TypeScript SDK client (test-mcp-server.mjs).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-mcp-common.h"
#include "vnc-test-server.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
        TestAgent *agent;
        CorralMcpServer *server;
        int to_server; /* we write requests here */
        int from_server; /* and read answers here (non-blocking) */
        GString *buf;
        GAsyncResult *run;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        int in[2], out[2];
        g_autoptr (GInputStream) input = NULL;
        g_autoptr (GOutputStream) output = NULL;

        f->agent = test_agent_start (0, NULL);
        g_assert_no_errno (pipe2 (in, O_CLOEXEC));
        g_assert_no_errno (pipe2 (out, O_CLOEXEC | O_NONBLOCK));
        f->to_server = in[1];
        f->from_server = out[0];
        input = g_unix_input_stream_new (in[0], TRUE);
        output = g_unix_output_stream_new (out[1], TRUE);
        f->buf = g_string_new (NULL);
        f->server = corral_mcp_server_new (f->agent->client, "test-vm");
        corral_mcp_server_run_async (f->server, input, output, NULL, test_store_result, &f->run);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        if (f->to_server >= 0)
                close (f->to_server);
        f->run = test_wait_result (&f->run);
        g_assert_true (corral_mcp_server_run_finish (f->server, f->run, NULL));
        g_clear_object (&f->run);
        g_clear_object (&f->server);
        close (f->from_server);
        g_string_free (f->buf, TRUE);
        test_agent_free (f->agent);
}

static void
send_line (Fixture *f, const char *line)
{
        gsize len = strlen (line);

        g_assert_cmpint (write (f->to_server, line, len), ==, (gssize) len);
        g_assert_cmpint (write (f->to_server, "\n", 1), ==, 1);
}

/* The next answer, parsed. */
static cJSON *
receive (Fixture *f)
{
        gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
        char *nl;
        cJSON *msg;

        while (!(nl = strchr (f->buf->str, '\n'))) {
                char chunk[4096];
                gssize n = read (f->from_server, chunk, sizeof chunk);

                if (n > 0)
                        g_string_append_len (f->buf, chunk, n);
                else if (n == 0 || errno != EAGAIN)
                        g_error ("the server closed its output");
                else
                        g_main_context_iteration (NULL, FALSE), g_usleep (1000);
                g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        }
        msg = cJSON_ParseWithLength (f->buf->str, (gsize) (nl - f->buf->str));
        g_assert_nonnull (msg);
        g_string_erase (f->buf, 0, nl - f->buf->str + 1);
        return msg;
}

static cJSON *
request (Fixture *f, const char *line)
{
        send_line (f, line);
        return receive (f);
}

static void
assert_error (cJSON *msg, int code)
{
        const cJSON *err = cJSON_GetObjectItem (msg, "error");

        g_assert_nonnull (err);
        g_assert_cmpint (cJSON_GetObjectItem (err, "code")->valueint, ==, code);
}

static void
initialize (Fixture *f)
{
        g_autoptr (cJSON) msg =
                request (f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                            "{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},"
                            "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
        const cJSON *result = cJSON_GetObjectItem (msg, "result");

        g_assert_cmpstr (cJSON_GetObjectItem (result, "protocolVersion")->valuestring, ==,
                         "2024-11-05");
        send_line (f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void
test_malformed (Fixture *f, gconstpointer data)
{
        static const struct {
                const char *line;
                int code;
        } cases[] = {
                { "not json", -32700 },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,", -32700 },
                { "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600 },
                { "{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"ping\"}", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":42}", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":[1]}", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"a\\u0000b\"}", -32700 },
                { "\"just a string\"", -32600 },
                { "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\"}", -32002 },
                { "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/list\"}", -32601 },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (cJSON) msg = request (f, cases[i].line);

                g_test_message ("%s", cases[i].line);
                assert_error (msg, cases[i].code);
        }
        initialize (f);
        {
                g_autoptr (cJSON) msg =
                        request (f, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\","
                                    "\"params\":{\"name\":\"nope\",\"arguments\":{}}}");

                assert_error (msg, -32602);
                g_assert_cmpstr (cJSON_GetObjectItem (msg, "id")->valuestring, ==, "x");
        }
}

static char *
tool_text (cJSON *msg, gboolean *ret_is_error)
{
        const cJSON *result = cJSON_GetObjectItem (msg, "result");
        const cJSON *content = cJSON_GetObjectItem (result, "content");

        g_assert_nonnull (content);
        *ret_is_error = cJSON_IsTrue (cJSON_GetObjectItem (result, "isError"));
        return g_strdup (cJSON_GetArrayItem (content, 0)->child->next->valuestring);
}

static void
test_tools (Fixture *f, gconstpointer data)
{
        g_autoptr (cJSON) list = NULL, exec = NULL, bad = NULL, ping = NULL;
        g_autofree char *text = NULL, *bad_text = NULL;
        gboolean is_error;

        initialize (f);
        list = request (f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        g_assert_cmpint (cJSON_GetArraySize (cJSON_GetObjectItem (
                                 cJSON_GetObjectItem (list, "result"), "tools")),
                         ==, 5);
        /* Only the person undoes or keeps what the assistant changed (SECURITY.md F22). */
        {
                const cJSON *tool;
                cJSON_ArrayForEach (
                        tool, cJSON_GetObjectItem (cJSON_GetObjectItem (list, "result"), "tools")) {
                        const char *name =
                                cJSON_GetStringValue (cJSON_GetObjectItem (tool, "name"));
                        g_assert_nonnull (name);
                        g_assert_null (strstr (name, "undo"));
                        g_assert_null (strstr (name, "keep"));
                }
        }
        exec = request (f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"exec\",\"arguments\":{\"argv\":[\"echo\",\"a\\nb\"]}}}");
        text = tool_text (exec, &is_error);
        g_assert_false (is_error);
        g_assert_cmpstr (text, ==, "Exit code: 0\n--- stdout ---\na\nb\n");
        bad = request (f,
                       "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
                       "{\"name\":\"exec\",\"arguments\":{\"command\":\"true\",\"cwd\":\"tmp\"}}}");
        bad_text = tool_text (bad, &is_error);
        g_assert_true (is_error);
        g_assert_nonnull (strstr (bad_text, "absolute path"));
        /* A cancelled call is never answered: the next answer is the ping's. */
        send_line (f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"exec\",\"arguments\":{\"command\":\"sleep 30\"}}}");
        test_spin (200);
        send_line (f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                      "\"params\":{\"requestId\":5}}");
        ping = request (f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}");
        g_assert_cmpint (cJSON_GetObjectItem (ping, "id")->valueint, ==, 6);
        test_spin (300);
        g_assert_null (strchr (f->buf->str, '\n'));
}

/* With computer use on, the computer tool is listed and its result carries the screenshot as
 * MCP image content; the click reaches the screen (a real VNC server in the test). */
static void
test_computer (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralVnc) vnc = vnc_test_server_connect (NULL);
        g_autoptr (CorralComputer) computer = NULL;
        g_autoptr (cJSON) list = NULL, call = NULL;
        g_autoptr (GArray) events = NULL;
        const cJSON *tool, *content, *image;
        gboolean listed = FALSE;

        computer = corral_computer_new (vnc);
        corral_mcp_server_set_computer (f->server, computer, NULL);

        initialize (f);
        list = request (f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        cJSON_ArrayForEach (tool,
                            cJSON_GetObjectItem (cJSON_GetObjectItem (list, "result"), "tools")) {
                if (g_strcmp0 (cJSON_GetStringValue (cJSON_GetObjectItem (tool, "name")),
                               "computer") == 0) {
                        listed = TRUE;
                        g_assert_nonnull (cJSON_GetObjectItem (tool, "inputSchema"));
                }
        }
        g_assert_true (listed);
        call = request (f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"computer\",\"arguments\":{\"action\":\"left_click\","
                           "\"coordinate\":[0,0]}}}");
        content = cJSON_GetObjectItem (cJSON_GetObjectItem (call, "result"), "content");
        g_assert_cmpint (cJSON_GetArraySize (content), ==, 2);
        g_assert_cmpstr (cJSON_GetStringValue (
                                 cJSON_GetObjectItem (cJSON_GetArrayItem (content, 0), "text")),
                         ==, "Clicked at (0, 0).");
        image = cJSON_GetArrayItem (content, 1);
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (image, "type")), ==, "image");
        g_assert_cmpstr (cJSON_GetStringValue (cJSON_GetObjectItem (image, "mimeType")), ==,
                         "image/png");
        g_assert_true (g_str_has_prefix (cJSON_GetStringValue (cJSON_GetObjectItem (image, "data")),
                                         "iVBORw0KGgo"));
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, >=, 3);
        g_assert_cmpint (g_array_index (events, VncTestEvent, 1).buttons, ==, 1);

        corral_mcp_server_set_computer (f->server, NULL, NULL);
        g_clear_object (&computer);
        corral_vnc_close (vnc);
        vnc_test_server_stop ();
}

/* A request sent right before EOF is still answered. */
static void
test_eof (Fixture *f, gconstpointer data)
{
        g_autoptr (cJSON) msg = NULL;

        initialize (f);
        send_line (f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"exec\",\"arguments\":{\"command\":\"sleep 0.2; echo late\"}}}");
        close (f->to_server);
        f->to_server = -1;
        msg = receive (f);
        g_assert_cmpint (cJSON_GetObjectItem (msg, "id")->valueint, ==, 9);
}

static void
test_sdk_client (void)
{
        g_autofree char *sdk = mcp_test_npm_file ("@modelcontextprotocol/sdk/package.json");
        g_autofree char *script = g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "tests",
                                                    "integration", "test-mcp-server.mjs", NULL);
        g_autofree char *corralctl =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autofree char *work = g_dir_make_tmp ("corral-mcp-server-XXXXXX", NULL);
        g_autofree char *npm = NULL, *out = NULL, *err = NULL, *cleanup = NULL;
        g_autoptr (GError) error = NULL;
        int status;

        if (!sdk)
                return;
        /* .../node_modules/@modelcontextprotocol/sdk/package.json -> the npm dir */
        npm = g_path_get_dirname (sdk);
        for (int i = 0; i < 3; i++) {
                char *up = g_path_get_dirname (npm);

                g_free (npm);
                npm = up;
        }
        {
                const char *argv[] = { "node", script, npm, corralctl, work, NULL };

                g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
                                             NULL, &out, &err, &status, &error));
        }
        g_test_message ("stdout:\n%s\nstderr:\n%s", out, err);
        g_assert_no_error (error);
        g_assert_true (g_spawn_check_wait_status (status, NULL));
        cleanup = g_strdup_printf ("rm -rf '%s'", work);
        g_assert_true (g_spawn_command_line_sync (cleanup, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add ("/mcp/server/malformed", Fixture, NULL, fixture_setup, test_malformed,
                    fixture_teardown);
        g_test_add ("/mcp/server/tools", Fixture, NULL, fixture_setup, test_tools,
                    fixture_teardown);
        g_test_add ("/mcp/server/eof", Fixture, NULL, fixture_setup, test_eof, fixture_teardown);
        g_test_add ("/mcp/server/computer", Fixture, NULL, fixture_setup, test_computer,
                    fixture_teardown);
        g_test_add_func ("/mcp/server/sdk-client", test_sdk_client);
        return g_test_run ();
}
