/* test-llm-errors.c — how both providers fail: HTTP errors and retries, broken and cut
 * streams, invalid tool input, idle timeouts, cancellation and size limits, each against the
 * fake provider server. Every failure must be a clear GError, never a hang or a crash.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-client.h"

#include <string.h>

#define ANTHROPIC GINT_TO_POINTER (CORRAL_LLM_PROVIDER_ANTHROPIC)
#define OPENAI GINT_TO_POINTER (CORRAL_LLM_PROVIDER_OPENAI)

static gboolean
is_anthropic (gconstpointer data)
{
        return GPOINTER_TO_INT (data) == CORRAL_LLM_PROVIDER_ANTHROPIC;
}

static CorralFakeLlmClient *
client (gconstpointer data)
{
        return corral_fake_llm_client_new (GPOINTER_TO_INT (data));
}

static void
push_error (CorralFakeLlmClient *c, guint status, const char *type, const char *retry_after)
{
        corral_fake_llm_server_push (
                c->server,
                corral_fake_llm_error_reply (status, type, "scripted failure", retry_after));
}

static void
test_retry_then_success (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        cJSON *ms = corral_fake_llm_error_reply (429, "rate_limit_error", "slow down", NULL);

        cJSON_AddStringToObject (cJSON_AddObjectToObject (ms, "headers"), "retry-after-ms", "20");
        corral_fake_llm_server_push (c->server, ms);
        push_error (c, 529, "overloaded_error", NULL);
        push_error (c, 500, "api_error", NULL);
        corral_fake_llm_client_push_reply (c, "finally", NULL, NULL, NULL, "end");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpuint (c->n_retries, ==, 3);
        g_assert_cmpstr (c->streamed->str, ==, "finally");
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 4);
}

static void
test_retry_after_honoured (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);

        /* One second, although the configured backoff is a few milliseconds. */
        push_error (c, 429, "rate_limit_error", "1");
        corral_fake_llm_client_push_reply (c, "ok", NULL, NULL, NULL, "end");
        corral_llm_provider_set_retry (c->provider, 2, 1, 5000);
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpint (c->elapsed_us, >=, 950 * 1000);
}

static void
test_retries_exhausted (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);

        corral_llm_provider_set_retry (c->provider, 3, 1, 5);
        for (int i = 0; i < 3; i++)
                push_error (c, 529, "overloaded_error", NULL);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_OVERLOADED);
        g_assert_cmpuint (c->n_retries, ==, 2);
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 3);

        corral_llm_provider_set_retry (c->provider, 2, 1, 5);
        push_error (c, 429, "rate_limit_error", NULL);
        push_error (c, 429, "rate_limit_error", NULL);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_RATE_LIMITED);
}

static void
test_auth_not_retried (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);

        /* Some servers echo the key they refused; it must not reach the message. */
        corral_fake_llm_server_push (
                c->server,
                corral_fake_llm_error_reply (401, "authentication_error",
                                             "invalid x-api-key " CORRAL_FAKE_LLM_KEY, NULL));
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH);
        g_assert_nonnull (strstr (c->error->message, "API key was refused"));
        g_assert_null (strstr (c->error->message, CORRAL_FAKE_LLM_KEY));
        g_assert_cmpuint (c->n_retries, ==, 0);
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 1);
}

static void
test_invalid_request (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        static const guint statuses[] = { 400, 403, 404 };

        for (gsize i = 0; i < G_N_ELEMENTS (statuses); i++)
                corral_fake_llm_server_push (
                        c->server,
                        corral_fake_llm_error_reply (
                                statuses[i], "invalid_request_error",
                                "max_tokens: must be at most 8192 " CORRAL_FAKE_LLM_KEY, NULL));
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST);
        g_assert_nonnull (strstr (c->error->message, "max_tokens: must be at most 8192"));
        g_assert_null (strstr (c->error->message, CORRAL_FAKE_LLM_KEY));
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST);
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 3);
        g_assert_cmpuint (c->n_retries, ==, 0);
}

static void
push_raw (CorralFakeLlmClient *c, const char *const *chunks, const char *end)
{
        corral_fake_llm_server_push (c->server, corral_fake_llm_raw_reply (chunks, end));
}

static void
test_malformed (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        const char *anthropic[] = { "event: message_start\ndata: {not json\n\n", NULL };
        const char *openai[] = { "data: {\"choices\": [oops]}\n\n", NULL };

        push_raw (c, is_anthropic (data) ? anthropic : openai, "complete");
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        g_assert_cmpuint (c->n_retries, ==, 0);
}

/* The first events of a reply, then the stream ends in the way `end` says. */
static void
push_cut (CorralFakeLlmClient *c, gconstpointer data, const char *end)
{
        cJSON *reply =
                is_anthropic (data)
                        ? corral_fake_llm_anthropic_reply ("partial text", NULL, NULL, NULL,
                                                           "end_turn")
                        : corral_fake_llm_openai_reply ("partial text", NULL, NULL, NULL, "stop");
        cJSON *events = cJSON_GetObjectItemCaseSensitive (reply, "events");

        /* Keep message_start / the role chunk and the first text pieces only. */
        while (cJSON_GetArraySize (events) > 4)
                cJSON_DeleteItemFromArray (events, cJSON_GetArraySize (events) - 1);
        cJSON_AddStringToObject (reply, "end", end);
        corral_fake_llm_server_push (c->server, reply);
}

static void
test_truncated (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);

        push_cut (c, data, "complete");
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        g_assert_nonnull (strstr (c->error->message, "ended"));

        /* The connection dropped in the middle of the chunked body. */
        push_cut (c, data, "close");
        corral_fake_llm_client_run (c, NULL);
        g_assert_true (g_error_matches (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL) ||
                       g_error_matches (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK));
        g_assert_cmpuint (c->n_retries, ==, 0);
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 2);
}

static void
test_invalid_tool_json (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        static const char *const inputs[] = { "{\"path\": \"/a\"", "[1, 2]", "{} trailing" };

        for (gsize i = 0; i < G_N_ELEMENTS (inputs); i++) {
                corral_fake_llm_client_push_reply (c, NULL, "toolu_1", "write_file", inputs[i],
                                                   "tool");
                corral_fake_llm_client_run (c, NULL);
                g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
                g_assert_nonnull (strstr (c->error->message, "write_file"));
        }
}

static void
test_stream_error_event (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        const char *overloaded[] = {
                "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": "
                "\"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
                NULL
        };
        const char *openai[] = { "data: {\"error\": {\"message\": \"model crashed\", \"type\": "
                                 "\"server_error\"}}\n\n",
                                 NULL };

        /* An error event is a transient failure like a 529 or 500: retried. */
        push_raw (c, is_anthropic (data) ? overloaded : openai, "complete");
        corral_fake_llm_client_push_reply (c, "recovered", NULL, NULL, NULL, "end");
        corral_fake_llm_client_run (c, NULL);
        g_assert_no_error (c->error);
        g_assert_cmpuint (c->n_retries, ==, 1);
        g_assert_cmpstr (c->streamed->str, ==, "recovered");
}

static void
test_idle_timeout (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);

        corral_llm_provider_set_idle_timeout (c->provider, 300);
        push_cut (c, data, "stall");
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_TIMEOUT);
        g_assert_cmpuint (c->n_text_events, >, 0);
        g_assert_cmpint (c->elapsed_us, <, 4 * G_USEC_PER_SEC);
}

static void
test_cancel (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();

        /* Cancelled from the event callback while the server holds the stream open. */
        push_cut (c, data, "stall");
        c->cancel_on_text = g_object_ref (cancellable);
        corral_fake_llm_client_run (c, cancellable);
        g_assert_error (c->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_clear_object (&c->cancel_on_text);

        /* Cancelled before it starts. */
        corral_fake_llm_client_run (c, cancellable);
        g_assert_error (c->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

static gboolean
cancel_later (gpointer data)
{
        g_cancellable_cancel (data);
        return G_SOURCE_REMOVE;
}

static void
test_cancel_during_backoff (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();

        corral_llm_provider_set_retry (c->provider, 4, 60000, 60000);
        push_error (c, 529, "overloaded_error", NULL);
        g_timeout_add (200, cancel_later, cancellable);
        corral_fake_llm_client_run (c, cancellable);
        g_assert_error (c->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_assert_cmpint (c->elapsed_us, <, 10 * G_USEC_PER_SEC);
}

static void
test_huge_response (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        CorralLlmLimits limits;
        cJSON *reply = is_anthropic (data)
                               ? corral_fake_llm_anthropic_reply ("a", NULL, NULL, NULL, "end_turn")
                               : corral_fake_llm_openai_reply ("a", NULL, NULL, NULL, "stop");
        cJSON *repeat = cJSON_AddObjectToObject (reply, "repeat");
        const char *delta =
                is_anthropic (data)
                        ? "event: content_block_delta\ndata: {\"type\": "
                          "\"content_block_delta\", \"index\": 0, \"delta\": {\"type\": "
                          "\"text_delta\", \"text\": \"0123456789abcdef\"}}\n\n"
                        : "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": "
                          "\"0123456789abcdef\"}}]}\n\n";
        cJSON *events = cJSON_GetObjectItemCaseSensitive (reply, "events");

        /* An endless reply: cut the scripted one after its first text piece, then repeat. */
        while (cJSON_GetArraySize (events) > 4)
                cJSON_DeleteItemFromArray (events, cJSON_GetArraySize (events) - 1);
        cJSON_AddStringToObject (repeat, "chunk", delta);
        cJSON_AddNumberToObject (repeat, "count", 1e7);
        corral_fake_llm_server_push (c->server, reply);
        corral_llm_limits_init_default (&limits);
        limits.max_response_bytes = 256 * 1024;
        corral_llm_provider_set_limits (c->provider, &limits);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        g_assert_nonnull (strstr (c->error->message, "larger than"));
        g_assert_cmpuint (c->streamed->len, <=, limits.max_response_bytes);
}

static void
test_long_line (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        CorralLlmLimits limits;
        cJSON *reply = cJSON_CreateObject ();
        cJSON *repeat = cJSON_AddObjectToObject (reply, "repeat");

        /* One line without an end: refused at the line limit, not buffered. */
        cJSON_AddItemToArray (cJSON_AddArrayToObject (reply, "chunks"),
                              cJSON_CreateString ("data: "));
        cJSON_AddStringToObject (repeat, "chunk",
                                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        cJSON_AddNumberToObject (repeat, "count", 1e7);
        corral_fake_llm_server_push (c->server, reply);
        corral_llm_limits_init_default (&limits);
        limits.max_event_bytes = 4096;
        corral_llm_provider_set_limits (c->provider, &limits);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
}

static void
test_too_many_blocks (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        CorralLlmLimits limits;

        corral_llm_limits_init_default (&limits);
        limits.max_blocks = 1;
        corral_llm_provider_set_limits (c->provider, &limits);
        corral_fake_llm_client_push_reply (c, "text", "t1", "tool", "{}", "tool");
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);

        limits.max_blocks = 8;
        limits.max_tool_input_bytes = 10;
        corral_llm_provider_set_limits (c->provider, &limits);
        corral_fake_llm_client_push_reply (c, NULL, "t1", "tool", "{\"a\": \"0123456789\"}",
                                           "tool");
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
}

static void
test_not_event_stream (gconstpointer data)
{
        g_autoptr (CorralFakeLlmClient) c = client (data);
        cJSON *reply = cJSON_CreateObject ();

        cJSON_AddStringToObject (reply, "body", "<html>a captive portal</html>");
        cJSON_AddStringToObject (reply, "content_type", "text/html");
        corral_fake_llm_server_push (c->server, reply);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
}

static void
test_connection_refused (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmClient) c = client (ANTHROPIC);
        g_autoptr (GSocketListener) l = g_socket_listener_new ();
        guint16 port = g_socket_listener_add_any_inet_port (l, NULL, &error);
        g_autofree char *url = NULL;

        /* A port that was free a moment ago and has nothing listening now. */
        g_assert_no_error (error);
        g_socket_listener_close (l);
        url = g_strdup_printf ("http://127.0.0.1:%u", port);
        g_clear_object (&c->provider);
        c->provider = corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, url, NULL, &error);
        g_assert_no_error (error);
        corral_llm_provider_set_retry (c->provider, 2, 1, 5);
        corral_fake_llm_client_run (c, NULL);
        g_assert_error (c->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK);
        g_assert_cmpuint (c->n_retries, ==, 1);
}

static void
test_bad_config (void)
{
        g_autoptr (GError) error = NULL;
        CorralLlmProvider *p;

        p = corral_llm_provider_new (CORRAL_LLM_PROVIDER_OPENAI, "file:///etc/passwd", NULL,
                                     &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST);
        g_clear_error (&error);
        /* A key with a line break would inject a header. */
        p = corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, NULL, "sk-abc\r\nX-Evil: 1",
                                     &error);
        g_assert_null (p);
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH);
        g_assert_null (strstr (error->message, "sk-abc"));
}

static void
got_result (GObject *source, GAsyncResult *res, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (res);
}

static gboolean
check_key (CorralLlmProvider *provider, GError **error)
{
        g_autoptr (GAsyncResult) res = NULL;

        corral_llm_provider_check_key_async (provider, NULL, got_result, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        return corral_llm_provider_check_key_finish (provider, res, error);
}

/* A key entered is checked with one request that needs it (the list of models): accepted, or
 * refused as a key (AUTH, never retried, never a scripted reply), with the key's header. */
static void
test_check_key (gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmClient) c = client (data);
        g_autofree char *url = corral_fake_llm_server_get_url (c->server);
        g_autofree char *base = GPOINTER_TO_INT (data) == CORRAL_LLM_PROVIDER_OPENAI
                                        ? g_strconcat (url, "/v1", NULL)
                                        : g_strdup (url);
        g_autoptr (CorralLlmProvider) wrong = corral_llm_provider_new (
                GPOINTER_TO_INT (data), base, "sk-not-the-right-one", &error);

        g_assert_no_error (error);
        corral_fake_llm_server_set_valid_key (c->server, CORRAL_FAKE_LLM_KEY);
        g_assert_true (check_key (c->provider, &error));
        g_assert_no_error (error);
        g_assert_false (check_key (wrong, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH);
        g_assert_null (strstr (error->message, "sk-not"));
        g_assert_cmpuint (corral_fake_llm_server_get_n_key_checks (c->server), ==, 2);
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (c->server), ==, 0);
}

/* Nothing listening: the key could not be checked, which is not a refused key. */
static void
test_check_key_unreachable (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocketListener) l = g_socket_listener_new ();
        guint16 port = g_socket_listener_add_any_inet_port (l, NULL, &error);
        g_autofree char *url = NULL;
        g_autoptr (CorralLlmProvider) p = NULL;

        g_assert_no_error (error);
        g_socket_listener_close (l);
        url = g_strdup_printf ("http://127.0.0.1:%u", port);
        p = corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, url, "sk-x", &error);
        g_assert_no_error (error);
        g_assert_false (check_key (p, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NETWORK);
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
        add ("retry-then-success", test_retry_then_success);
        add ("retry-after", test_retry_after_honoured);
        add ("retries-exhausted", test_retries_exhausted);
        add ("auth-not-retried", test_auth_not_retried);
        add ("invalid-request", test_invalid_request);
        add ("malformed", test_malformed);
        add ("truncated", test_truncated);
        add ("invalid-tool-json", test_invalid_tool_json);
        add ("stream-error-event", test_stream_error_event);
        add ("idle-timeout", test_idle_timeout);
        add ("cancel", test_cancel);
        add ("cancel-during-backoff", test_cancel_during_backoff);
        add ("huge-response", test_huge_response);
        add ("long-line", test_long_line);
        add ("too-many-blocks", test_too_many_blocks);
        add ("not-event-stream", test_not_event_stream);
        add ("check-key", test_check_key);
        g_test_add_func ("/llm/check-key-unreachable", test_check_key_unreachable);
        g_test_add_func ("/llm/connection-refused", test_connection_refused);
        g_test_add_func ("/llm/bad-config", test_bad_config);
        return g_test_run ();
}
