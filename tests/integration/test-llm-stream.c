/* test-llm-stream.c — both providers against the fake provider server: streamed text, tool
 * use over several turns, stop reasons, usage, and what the client sent on the wire.
 *
 * Each case runs once per provider kind (the test path says which).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-client.h"
#include "corral-cjson.h"
#include "corral-policy.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define ANTHROPIC GINT_TO_POINTER (CORRAL_LLM_PROVIDER_ANTHROPIC)
#define OPENAI GINT_TO_POINTER (CORRAL_LLM_PROVIDER_OPENAI)

static gboolean
is_anthropic (gconstpointer data)
{
        return GPOINTER_TO_INT (data) == CORRAL_LLM_PROVIDER_ANTHROPIC;
}

static const cJSON *
member (const cJSON *o, const char *name)
{
        return cJSON_GetObjectItemCaseSensitive (o, name);
}

static const char *
str (const cJSON *o, const char *name)
{
        return cJSON_GetStringValue (member (o, name));
}

static void
check_headers (CorralFakeLlmClient *c)
{
        const cJSON *req = corral_fake_llm_server_get_request (c->server, 0);

        g_assert_cmpstr (str (req, "method"), ==, "POST");
        g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 0, "accept"), ==,
                         "text/event-stream");
        if (c->kind == CORRAL_LLM_PROVIDER_ANTHROPIC) {
                g_assert_cmpstr (str (req, "path"), ==, "/v1/messages");
                g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 0, "x-api-key"), ==,
                                 CORRAL_FAKE_LLM_KEY);
                g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 0, "anthropic-version"), ==,
                                 "2023-06-01");
                g_assert_null (corral_fake_llm_client_sent_header (c, 0, "authorization"));
        } else {
                g_assert_cmpstr (str (req, "path"), ==, "/v1/chat/completions");
                g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 0, "authorization"), ==,
                                 "Bearer " CORRAL_FAKE_LLM_KEY);
                g_assert_null (corral_fake_llm_client_sent_header (c, 0, "x-api-key"));
        }
}

static void
check_body (CorralFakeLlmClient *c)
{
        const cJSON *body = corral_fake_llm_client_sent_body (c, 0);
        const cJSON *messages = member (body, "messages");

        g_assert_true (cJSON_IsObject (body));
        g_assert_cmpstr (str (body, "model"), ==, "model-x");
        g_assert_cmpint (member (body, "max_tokens")->valueint, ==, 1024);
        g_assert_true (cJSON_IsTrue (member (body, "stream")));
        if (c->kind == CORRAL_LLM_PROVIDER_ANTHROPIC) {
                const cJSON *system = cJSON_GetArrayItem (member (body, "system"), 0);
                const cJSON *first = cJSON_GetArrayItem (messages, 0);
                g_assert_cmpstr (str (system, "text"), ==, "You are a careful assistant.");
                g_assert_cmpstr (str (member (system, "cache_control"), "type"), ==, "ephemeral");
                g_assert_cmpstr (str (first, "role"), ==, "user");
                g_assert_cmpstr (str (cJSON_GetArrayItem (member (first, "content"), 0), "text"),
                                 ==, "Hello \"there\"\nsecond line");
        } else {
                g_assert_true (
                        cJSON_IsTrue (member (member (body, "stream_options"), "include_usage")));
                g_assert_cmpstr (str (cJSON_GetArrayItem (messages, 0), "role"), ==, "system");
                g_assert_cmpstr (str (cJSON_GetArrayItem (messages, 1), "content"), ==,
                                 "Hello \"there\"\nsecond line");
        }
}

static void
test_text (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        g_autofree char *text = NULL;
        const char *reply = "Héllo — a streamed reply in several pieces ✓";

        corral_fake_llm_client_push_reply (c, reply, NULL, NULL, NULL, "end");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        text = corral_llm_response_get_text (c->response);
        g_assert_cmpstr (text, ==, reply);
        g_assert_cmpstr (c->streamed->str, ==, reply);
        g_assert_cmpuint (c->n_text_events, >, 3);
        g_assert_cmpint (c->response->stop_reason, ==, CORRAL_LLM_STOP_END_TURN);
        g_assert_cmpuint (c->response->usage.output_tokens, ==, 15);
        g_assert_cmpuint (c->response->usage.cache_read_input_tokens, ==, 11);
        if (is_anthropic (data)) {
                g_assert_cmpuint (c->response->usage.input_tokens, ==, 25);
                g_assert_cmpuint (c->response->usage.cache_creation_input_tokens, ==, 7);
                g_assert_cmpstr (c->response->id, ==, "msg_fake_01");
        } else {
                g_assert_cmpuint (c->response->usage.input_tokens, ==, 36 - 11);
                g_assert_cmpstr (c->response->model, ==, "gpt-fake");
        }
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 1);
        check_headers (c);
        check_body (c);
}

static void
check_second_turn (CorralFakeLlmClient *c)
{
        const cJSON *messages = member (corral_fake_llm_client_sent_body (c, 1), "messages");
        const cJSON *m;

        if (c->kind == CORRAL_LLM_PROVIDER_ANTHROPIC) {
                const cJSON *use, *result;
                g_assert_cmpint (cJSON_GetArraySize (messages), ==, 3);
                m = cJSON_GetArrayItem (messages, 1);
                g_assert_cmpstr (str (m, "role"), ==, "assistant");
                use = cJSON_GetArrayItem (member (m, "content"), 1);
                g_assert_cmpstr (str (use, "type"), ==, "tool_use");
                g_assert_cmpstr (str (use, "id"), ==, "toolu_01");
                g_assert_cmpstr (str (member (use, "input"), "path"), ==, "/home/a \"b\".txt");
                result = cJSON_GetArrayItem (member (cJSON_GetArrayItem (messages, 2), "content"),
                                             0);
                g_assert_cmpstr (str (result, "type"), ==, "tool_result");
                g_assert_cmpstr (str (result, "tool_use_id"), ==, "toolu_01");
                g_assert_cmpstr (str (result, "content"), ==, "line 1\nline 2");
                g_assert_nonnull (member (result, "cache_control"));
        } else {
                g_autoptr (cJSON) args = NULL;
                const cJSON *call;
                g_assert_cmpint (cJSON_GetArraySize (messages), ==, 4);
                m = cJSON_GetArrayItem (messages, 2);
                g_assert_cmpstr (str (m, "role"), ==, "assistant");
                call = cJSON_GetArrayItem (member (m, "tool_calls"), 0);
                g_assert_cmpstr (str (call, "id"), ==, "toolu_01");
                args = cJSON_Parse (str (member (call, "function"), "arguments"));
                g_assert_cmpstr (str (args, "path"), ==, "/home/a \"b\".txt");
                m = cJSON_GetArrayItem (messages, 3);
                g_assert_cmpstr (str (m, "role"), ==, "tool");
                g_assert_cmpstr (str (m, "tool_call_id"), ==, "toolu_01");
                g_assert_cmpstr (str (m, "content"), ==, "line 1\nline 2");
        }
}

static void
test_tool_use (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        const CorralLlmBlock *block;

        corral_llm_conversation_add_tool (c->conv, "read_file", "Reads a file in the VM", NULL);
        corral_fake_llm_client_push_reply (
                c, "Let me look.", "toolu_01", "read_file",
                "{\"path\": \"/home/a \\\"b\\\".txt\", \"lines\": [1, 2]}", "tool");
        corral_fake_llm_client_push_reply (c, "The file has two lines.", NULL, NULL, NULL, "end");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpint (c->response->stop_reason, ==, CORRAL_LLM_STOP_TOOL_USE);
        g_assert_cmpuint (c->response->blocks->len, ==, 2);
        g_assert_cmpuint (c->tool_starts->len, ==, 1);
        g_assert_cmpstr (g_ptr_array_index (c->tool_starts, 0), ==, "read_file");
        block = g_ptr_array_index (c->response->blocks, 1);
        g_assert_cmpint (block->type, ==, CORRAL_LLM_BLOCK_TOOL_USE);
        g_assert_cmpstr (block->id, ==, "toolu_01");
        g_assert_cmpstr (block->name, ==, "read_file");
        g_assert_cmpstr (cJSON_GetStringValue (member (block->input, "path")), ==,
                         "/home/a \"b\".txt");
        g_assert_cmpint (cJSON_GetArraySize (member (block->input, "lines")), ==, 2);

        corral_llm_conversation_add_response (c->conv, c->response);
        corral_llm_conversation_add_tool_result (c->conv, block->id, "line 1\nline 2", FALSE);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpint (c->response->stop_reason, ==, CORRAL_LLM_STOP_END_TURN);
        check_second_turn (c);
        if (is_anthropic (data)) {
                const cJSON *tools = member (corral_fake_llm_client_sent_body (c, 1), "tools");
                g_assert_cmpstr (str (cJSON_GetArrayItem (tools, 0), "name"), ==, "read_file");
                g_assert_nonnull (member (cJSON_GetArrayItem (tools, 0), "cache_control"));
        }
}

/* The computer tool through the provider: Anthropic gets its beta header with the hosted tool
 * (and no other request does), the screenshot reaches the server as the wire wants it. */
static void
test_computer_tool (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        g_autoptr (GBytes) png = g_bytes_new_static ("\x89PNG\r\n\x1a\n", 8);
        g_autofree char *encoded = g_base64_encode ((const guchar *) "\x89PNG\r\n\x1a\n", 8);
        const CorralLlmBlock *block;
        const cJSON *body;
        g_autofree char *text = NULL;

        corral_llm_conversation_add_computer_tool (
                c->conv, "computer_20250124", 1280, 800, "Use the screen",
                cJSON_Parse ("{\"type\": \"object\", \"properties\": {\"action\": "
                             "{\"type\": \"string\"}}}"));
        corral_fake_llm_client_push_reply (c, "Looking.", "toolu_c", "computer",
                                           "{\"action\": \"screenshot\"}", "tool");
        corral_fake_llm_client_push_reply (c, "I see it.", NULL, NULL, NULL, "end");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        block = g_ptr_array_index (c->response->blocks, 1);
        g_assert_cmpstr (block->name, ==, "computer");
        corral_llm_conversation_add_response (c->conv, c->response);
        corral_llm_conversation_add_tool_result_image (c->conv, block->id, "The screen.", FALSE,
                                                       "image/png", png);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        body = corral_fake_llm_client_sent_body (c, 1);
        text = cJSON_PrintUnformatted (body);
        if (is_anthropic (data)) {
                g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 0, "anthropic-beta"), ==,
                                 "computer-use-2025-01-24");
                g_assert_cmpstr (corral_fake_llm_client_sent_header (c, 1, "anthropic-beta"), ==,
                                 "computer-use-2025-01-24");
                g_assert_nonnull (strstr (text, "\"type\":\"computer_20250124\""));
                g_assert_nonnull (strstr (text, "\"media_type\":\"image/png\""));
        } else {
                g_assert_null (corral_fake_llm_client_sent_header (c, 0, "anthropic-beta"));
                g_assert_nonnull (strstr (text, "\"image_url\""));
        }
        g_assert_nonnull (strstr (text, encoded));
}

static void
test_tool_no_input (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        const CorralLlmBlock *block;

        /* A tool without arguments: no input fragment at all. */
        corral_fake_llm_client_push_reply (c, NULL, "call_9", "list_windows", "", "tool");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpuint (c->response->blocks->len, ==, 1);
        block = g_ptr_array_index (c->response->blocks, 0);
        g_assert_true (cJSON_IsObject (block->input));
        g_assert_cmpint (cJSON_GetArraySize (block->input), ==, 0);
}

typedef struct {
        const char *word;
        CorralLlmStopReason reason;
} StopCase;

static void
test_stop_reasons (gconstpointer data)
{
        static const StopCase anthropic[] = {
                { "end_turn", CORRAL_LLM_STOP_END_TURN },
                { "max_tokens", CORRAL_LLM_STOP_MAX_TOKENS },
                { "stop_sequence", CORRAL_LLM_STOP_STOP_SEQUENCE },
                { "refusal", CORRAL_LLM_STOP_REFUSAL },
                { "pause_turn", CORRAL_LLM_STOP_PAUSE },
                { "something_new", CORRAL_LLM_STOP_OTHER },
        };
        static const StopCase openai[] = {
                { "stop", CORRAL_LLM_STOP_END_TURN },
                { "length", CORRAL_LLM_STOP_MAX_TOKENS },
                { "content_filter", CORRAL_LLM_STOP_REFUSAL },
                { "something_new", CORRAL_LLM_STOP_OTHER },
        };
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        const StopCase *cases = is_anthropic (data) ? anthropic : openai;
        gsize n = is_anthropic (data) ? G_N_ELEMENTS (anthropic) : G_N_ELEMENTS (openai);

        for (gsize i = 0; i < n; i++) {
                corral_fake_llm_client_push_reply (c, "x", NULL, NULL, NULL, cases[i].word);
                corral_fake_llm_client_run (c, NULL);
                g_assert_no_error (c->error);
                g_assert_cmpint (c->response->stop_reason, ==, cases[i].reason);
                g_assert_cmpstr (c->response->stop_reason_raw, ==, cases[i].word);
        }
}

static void
test_unknown_events (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        g_autofree char *text = NULL;
        cJSON *reply =
                is_anthropic (data)
                        ? corral_fake_llm_anthropic_reply ("ok", NULL, NULL, NULL, "end_turn")
                        : corral_fake_llm_openai_reply ("ok", NULL, NULL, NULL, "stop");
        cJSON *events = cJSON_GetObjectItemCaseSensitive (reply, "events");
        cJSON *odd = cJSON_CreateObject ();
        cJSON *last;

        /* New event types, comments and fields must not break an old client. */
        if (is_anthropic (data))
                cJSON_AddStringToObject (odd, "event", "brand_new_event");
        cJSON_AddItemToObject (odd, "data",
                               cJSON_CreateString ("{\"type\": \"brand_new_event\", \"x\": [1]}"));
        /* Before the last event (with cJSON 1.7.15, InsertItemInArray leaked the item here). */
        last = cJSON_DetachItemFromArray (events, cJSON_GetArraySize (events) - 1);
        cJSON_AddItemToArray (events, odd);
        cJSON_AddItemToArray (events, last);
        cJSON_AddItemToArray (cJSON_AddArrayToObject (reply, "chunks"),
                              cJSON_CreateString (": a comment after the end\n\n"));
        corral_fake_llm_server_push (c->server, reply);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        text = corral_llm_response_get_text (c->response);
        g_assert_cmpstr (text, ==, "ok");
}

static void
test_split_anywhere (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (GPOINTER_TO_INT (data));
        g_autofree char *text = NULL;
        cJSON *reply = is_anthropic (data)
                               ? corral_fake_llm_anthropic_reply ("ünïcode split", "t1", "f",
                                                                  "{\"a\":\"é\"}", "tool_use")
                               : corral_fake_llm_openai_reply ("ünïcode split", "t1", "f",
                                                               "{\"a\":\"é\"}", "tool_calls");

        /* Three-byte network chunks cut lines, events and UTF-8 characters. */
        cJSON_AddNumberToObject (reply, "split", 3);
        corral_fake_llm_server_push (c->server, reply);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        text = corral_llm_response_get_text (c->response);
        g_assert_cmpstr (text, ==, "ünïcode split");
}

static void
test_env_key (void)
{
        g_autoptr (CorralFakeLlmServer) server = corral_fake_llm_server_new (0, NULL);
        g_autofree char *url = corral_fake_llm_server_get_url (server);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmProvider) p = NULL;
        g_autofree char *base = NULL;
        char *key;

        g_setenv ("ANTHROPIC_API_KEY", "sk-from-environment-1234", TRUE);
        g_setenv ("ANTHROPIC_BASE_URL", url, TRUE);
        key = corral_llm_api_key_lookup_sync (CORRAL_LLM_PROVIDER_ANTHROPIC, &base, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (key, ==, "sk-from-environment-1234");
        g_assert_cmpstr (base, ==, url);
        corral_llm_api_key_free (key);
        p = corral_llm_provider_new_for_kind_sync (CORRAL_LLM_PROVIDER_ANTHROPIC, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (corral_llm_provider_get_base_url (p), ==, url);
        g_clear_object (&p);

        /* A local OpenAI-compatible server needs no key. */
        g_unsetenv ("OPENAI_API_KEY");
        g_setenv ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1", TRUE);
        g_setenv ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/corral-test", TRUE);
        p = corral_llm_provider_new_for_kind_sync (CORRAL_LLM_PROVIDER_OPENAI, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (corral_llm_provider_get_base_url (p), ==, "http://127.0.0.1:11434/v1");
        g_unsetenv ("ANTHROPIC_API_KEY");
        g_unsetenv ("ANTHROPIC_BASE_URL");
        g_unsetenv ("OPENAI_BASE_URL");
}

/* corral-fake-llm as a process: script file in, "listening on port N" out, requests recorded. */
static void
test_fake_process (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmClient) c =
                corral_fake_llm_client_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *dir = g_dir_make_tmp ("corral-llm-XXXXXX", &error);
        g_autofree char *script_path = g_build_filename (dir, "script.json", NULL);
        g_autofree char *record_path = g_build_filename (dir, "record.jsonl", NULL);
        g_autofree char *exe = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "fakes",
                                                 "corral-fake-llm", NULL);
        g_autoptr (cJSON) script = cJSON_CreateObject ();
        g_autofree char *script_text = NULL, *line = NULL, *url = NULL, *record = NULL;
        g_autoptr (GSubprocess) proc = NULL;
        g_autoptr (GDataInputStream) out = NULL;
        g_auto (GStrv) lines = NULL;
        guint port = 0;

        g_assert_no_error (error);
        cJSON_AddItemToArray (
                cJSON_AddArrayToObject (script, "replies"),
                corral_fake_llm_anthropic_reply ("from a process", NULL, NULL, NULL, "end_turn"));
        script_text = cJSON_PrintUnformatted (script);
        g_assert_true (g_file_set_contents (script_path, script_text, -1, &error));
        proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, exe, "--script",
                                 script_path, "--record", record_path, NULL);
        g_assert_no_error (error);
        out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (proc));
        line = g_data_input_stream_read_line (out, NULL, NULL, &error);
        g_assert_no_error (error);
        g_assert_true (sscanf (line, "listening on port %u", &port) == 1 && port > 0);

        url = g_strdup_printf ("http://127.0.0.1:%u", port);
        g_clear_object (&c->provider);
        c->provider = corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, url,
                                               "sk-proc-key-12345", &error);
        g_assert_no_error (error);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpstr (c->streamed->str, ==, "from a process");

        g_subprocess_send_signal (proc, SIGTERM);
        g_assert_true (g_subprocess_wait (proc, NULL, &error));
        g_assert_true (g_file_get_contents (record_path, &record, NULL, &error));
        lines = g_strsplit (record, "\n", -1);
        g_assert_cmpuint (g_strv_length (lines), ==, 2);
        g_assert_nonnull (strstr (lines[0], "\"x-api-key\":\"sk-proc-key-12345\""));
        g_assert_nonnull (strstr (lines[0], "\"model\":\"model-x\""));
        g_unlink (record_path);
        g_unlink (script_path);
        g_rmdir (dir);
}

/* The organisation's providers.* keys (SECURITY.md M4): a provider kind or a server it did
 * not allow is never made, and a model it did not allow is never asked (nothing is sent). */
static void
test_managed_policy (gconstpointer data)
{
        CorralLlmProviderKind kind = GPOINTER_TO_INT (data);
        g_autofree char *dir = g_dir_make_tmp ("corral-llm-policy-XXXXXX", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        const char *other = is_anthropic (data) ? "openai-compatible" : "anthropic";
        g_autofree char *only_other =
                g_strdup_printf ("{\"providers\": {\"allowed\": [\"%s\"]}}", other);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmProvider) provider = NULL;

        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        g_assert_true (g_file_set_contents (policy, only_other, -1, NULL));
        provider = corral_llm_provider_new (kind, "http://127.0.0.1:9", "k", &error);
        g_assert_null (provider);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        g_assert_nonnull (strstr (error->message, "set by your organisation"));
        g_clear_error (&error);

        g_assert_true (g_file_set_contents (
                policy, "{\"providers\": {\"baseUrl\": \"https://llm.corp.example/v1\"}}", -1,
                NULL));
        provider = corral_llm_provider_new (kind, "http://127.0.0.1:9", "k", &error);
        g_assert_null (provider);
        g_assert_nonnull (strstr (error->message, "https://llm.corp.example/v1"));
        g_clear_error (&error);
        provider = corral_llm_provider_new (kind, "https://llm.corp.example/v1/", "k", &error);
        g_assert_no_error (error);
        g_assert_nonnull (provider);
        g_clear_object (&provider);

        /* The fake client asks for model-x. */
        g_assert_true (g_file_set_contents (
                policy, "{\"providers\": {\"allowedModels\": [\"model-y\"]}}", -1, NULL));
        {
                g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (kind);

                corral_fake_llm_client_push_reply (c, "never", NULL, NULL, NULL, "end");
                corral_fake_llm_client_run (c, NULL);
                g_assert_error (c->error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
                g_assert_nonnull (strstr (c->error->message, "model-x"));
                g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 0);
        }
        g_assert_true (g_file_set_contents (
                policy, "{\"providers\": {\"allowedModels\": [\"model-x\"]}}", -1, NULL));
        {
                g_autoptr (CorralFakeLlmClient) c = corral_fake_llm_client_new (kind);

                corral_fake_llm_client_push_reply (c, "fine", NULL, NULL, NULL, "end");
                corral_fake_llm_client_run (c, NULL);
                g_assert_no_error (c->error);
        }
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_unlink (policy);
        g_rmdir (dir);
}

static void
add (const char *name, GTestDataFunc func)
{
        g_autofree char *a = g_strdup_printf ("/llm/anthropic/%s", name);
        g_autofree char *o = g_strdup_printf ("/llm/openai/%s", name);

        g_test_add_data_func (a, ANTHROPIC, func);
        g_test_add_data_func (o, OPENAI, func);
}

int
main (int argc, char **argv)
{
        /* The machine's proxy settings are not under test (and libproxy, which glib-networking
         * would load for them, throws C++ exceptions that ASan cannot intercept here). */
        g_setenv ("GIO_USE_PROXY_RESOLVER", "dummy", TRUE);
        g_test_init (&argc, &argv, NULL);
        add ("text", test_text);
        add ("tool-use", test_tool_use);
        add ("computer-tool", test_computer_tool);
        add ("tool-no-input", test_tool_no_input);
        add ("stop-reasons", test_stop_reasons);
        add ("unknown-events", test_unknown_events);
        add ("split-anywhere", test_split_anywhere);
        add ("managed-policy", test_managed_policy);
        g_test_add_func ("/llm/keys/environment", test_env_key);
        g_test_add_func ("/llm/fake-process", test_fake_process);
        return g_test_run ();
}
