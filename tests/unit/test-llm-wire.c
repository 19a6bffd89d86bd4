/* test-llm-wire.c — the wire formats without a network: request bodies (escaping, the
 * neutral model mapped to each API, prompt-cache breakpoints), the stream decoders (OpenAI
 * tool-call fragments, Anthropic block order), and error mapping.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-error.h"
#include "llm-http.h"
#include "llm-wire.h"

#include <string.h>

static const cJSON *
at (const cJSON *o, const char *path)
{
        g_auto (GStrv) parts = g_strsplit (path, ".", -1);

        for (guint i = 0; o != NULL && parts[i] != NULL; i++) {
                char *end;
                guint64 n = g_ascii_strtoull (parts[i], &end, 10);
                o = *end == '\0' && end != parts[i]
                            ? cJSON_GetArrayItem (o, (int) n)
                            : cJSON_GetObjectItemCaseSensitive (o, parts[i]);
        }
        return o;
}

static const char *
at_str (const cJSON *o, const char *path)
{
        return cJSON_GetStringValue (at (o, path));
}

static CorralLlmConversation *
sample_conversation (void)
{
        CorralLlmConversation *conv = corral_llm_conversation_new ("m\"odel", 77);
        CorralLlmMessage *m = corral_llm_message_new (CORRAL_LLM_ROLE_ASSISTANT);
        cJSON *input = cJSON_Parse ("{\"cmd\": \"echo \\\"hi\\\"\\n\"}");

        corral_llm_conversation_set_system (conv, "sys\n\"quoted\"\ttab");
        corral_llm_conversation_add_tool (conv, "shell", "Runs a command", NULL);
        corral_llm_conversation_add_user_text (conv, "bad utf-8: \xff\xfe end; ctl \x01");
        corral_llm_message_add_block (m, corral_llm_block_new_text (""));
        corral_llm_message_add_block (m, corral_llm_block_new_tool_use ("id1", "shell", input));
        corral_llm_message_add_block (m, corral_llm_block_new_tool_use ("id2", "shell", NULL));
        corral_llm_conversation_add_message (conv, m);
        corral_llm_conversation_add_tool_result (conv, "id1", "out \"1\"", FALSE);
        corral_llm_conversation_add_tool_result (conv, "id2", "boom", TRUE);
        return conv;
}

static cJSON *
build (char *(*builder) (const CorralLlmConversation *, GError **), CorralLlmConversation *conv)
{
        g_autoptr (GError) error = NULL;
        char *text = builder (conv, &error);
        cJSON *json;

        g_assert_no_error (error);
        g_assert_true (g_utf8_validate (text, -1, NULL));
        json = cJSON_Parse (text);
        g_assert_nonnull (json);
        g_free (text);
        return json;
}

static void
test_anthropic_body (void)
{
        g_autoptr (CorralLlmConversation) conv = sample_conversation ();
        g_autoptr (cJSON) j = build (corral_llm_anthropic_build_body, conv);

        g_assert_cmpstr (at_str (j, "model"), ==, "m\"odel");
        g_assert_cmpint (at (j, "max_tokens")->valueint, ==, 77);
        g_assert_cmpstr (at_str (j, "system.0.text"), ==, "sys\n\"quoted\"\ttab");
        g_assert_cmpstr (at_str (j, "system.0.cache_control.type"), ==, "ephemeral");
        g_assert_cmpstr (at_str (j, "tools.0.input_schema.type"), ==, "object");
        g_assert_nonnull (at (j, "tools.0.cache_control"));
        /* Invalid UTF-8 is replaced, control characters escaped by the JSON writer. */
        g_assert_cmpstr (at_str (j, "messages.0.content.0.text"), ==,
                         "bad utf-8: \xef\xbf\xbd\xef\xbf\xbd end; ctl \x01");
        /* The empty text block is dropped; both results travel in one user message. */
        g_assert_cmpint (cJSON_GetArraySize (at (j, "messages")), ==, 3);
        g_assert_cmpstr (at_str (j, "messages.1.content.0.type"), ==, "tool_use");
        g_assert_cmpstr (at_str (j, "messages.1.content.0.input.cmd"), ==, "echo \"hi\"\n");
        g_assert_true (cJSON_IsObject (at (j, "messages.1.content.1.input")));
        g_assert_cmpstr (at_str (j, "messages.2.content.0.tool_use_id"), ==, "id1");
        g_assert_null (at (j, "messages.2.content.0.is_error"));
        g_assert_true (cJSON_IsTrue (at (j, "messages.2.content.1.is_error")));
        g_assert_nonnull (at (j, "messages.2.content.1.cache_control"));
        g_assert_null (at (j, "messages.2.content.0.cache_control"));
}

static void
test_openai_body (void)
{
        g_autoptr (CorralLlmConversation) conv = sample_conversation ();
        g_autoptr (cJSON) j = build (corral_llm_openai_build_body, conv);
        g_autoptr (cJSON) args = NULL;

        g_assert_true (cJSON_IsTrue (at (j, "stream_options.include_usage")));
        g_assert_cmpstr (at_str (j, "messages.0.role"), ==, "system");
        g_assert_cmpstr (at_str (j, "messages.1.role"), ==, "user");
        g_assert_cmpstr (at_str (j, "messages.2.role"), ==, "assistant");
        g_assert_true (cJSON_IsNull (at (j, "messages.2.content")));
        g_assert_cmpstr (at_str (j, "messages.2.tool_calls.0.function.name"), ==, "shell");
        args = cJSON_Parse (at_str (j, "messages.2.tool_calls.0.function.arguments"));
        g_assert_cmpstr (at_str (args, "cmd"), ==, "echo \"hi\"\n");
        g_assert_cmpstr (at_str (j, "messages.3.role"), ==, "tool");
        g_assert_cmpstr (at_str (j, "messages.3.tool_call_id"), ==, "id1");
        g_assert_cmpstr (at_str (j, "messages.4.content"), ==, "Error: boom");
        g_assert_cmpint (cJSON_GetArraySize (at (j, "messages")), ==, 5);
        g_assert_cmpstr (at_str (j, "tools.0.type"), ==, "function");
        g_assert_cmpstr (at_str (j, "tools.0.function.parameters.type"), ==, "object");
}

/* The computer tool: Anthropic's own tool type with the screen's size and its beta; a function
 * tool elsewhere. A screenshot in a tool result: an image block (Anthropic), a user message
 * with a data: URL after the tool message (OpenAI, whose tool messages are text only). */
static CorralLlmConversation *
computer_conversation (const char *hosted_type)
{
        CorralLlmConversation *conv = corral_llm_conversation_new ("model", 100);
        CorralLlmMessage *m = corral_llm_message_new (CORRAL_LLM_ROLE_ASSISTANT);
        g_autoptr (GBytes) png = g_bytes_new_static ("\x89PNG\r\n\x1a\n", 8);
        cJSON *schema = cJSON_Parse ("{\"type\": \"object\", \"properties\": {\"action\": "
                                     "{\"type\": \"string\"}}, \"required\": [\"action\"]}");

        corral_llm_conversation_add_tool (conv, "shell", "Run a command", NULL);
        corral_llm_conversation_add_computer_tool (conv, hosted_type, 1280, 800,
                                                   "Use the VM's screen", schema);
        corral_llm_conversation_add_user_text (conv, "click OK");
        corral_llm_message_add_block (
                m, corral_llm_block_new_tool_use ("c1", "computer",
                                                  cJSON_Parse ("{\"action\": \"screenshot\"}")));
        corral_llm_conversation_add_message (conv, m);
        corral_llm_conversation_add_tool_result_image (conv, "c1", "The screen.", FALSE,
                                                       "image/png", png);
        return conv;
}

static void
test_computer_tool (void)
{
        g_autoptr (CorralLlmConversation) conv = computer_conversation ("computer_20250124");
        g_autoptr (CorralLlmConversation) zoom = computer_conversation ("computer_20251124");
        g_autoptr (cJSON) a = build (corral_llm_anthropic_build_body, conv);
        g_autoptr (cJSON) az = build (corral_llm_anthropic_build_body, zoom);
        g_autoptr (cJSON) o = build (corral_llm_openai_build_body, conv);
        g_autofree char *data = g_base64_encode ((const guchar *) "\x89PNG\r\n\x1a\n", 8);
        g_autofree char *url = g_strconcat ("data:image/png;base64,", data, NULL);
        g_autoptr (CorralLlmConversation) plain = corral_llm_conversation_new ("m", 1);

        g_assert_cmpstr (corral_llm_conversation_get_beta (conv), ==, "computer-use-2025-01-24");
        g_assert_cmpstr (corral_llm_conversation_get_beta (zoom), ==, "computer-use-2025-11-24");
        corral_llm_conversation_add_tool (plain, "shell", "Run a command", NULL);
        g_assert_null (corral_llm_conversation_get_beta (plain));

        /* Anthropic: the hosted type, no schema; zoom turned on for the newer one. */
        g_assert_cmpstr (at_str (a, "tools.1.type"), ==, "computer_20250124");
        g_assert_cmpstr (at_str (a, "tools.1.name"), ==, "computer");
        g_assert_cmpint (at (a, "tools.1.display_width_px")->valueint, ==, 1280);
        g_assert_cmpint (at (a, "tools.1.display_height_px")->valueint, ==, 800);
        g_assert_null (at (a, "tools.1.input_schema"));
        g_assert_null (at (a, "tools.1.enable_zoom"));
        g_assert_true (cJSON_IsTrue (at (az, "tools.1.enable_zoom")));
        g_assert_cmpstr (at_str (a, "messages.2.content.0.type"), ==, "tool_result");
        g_assert_cmpstr (at_str (a, "messages.2.content.0.content.0.text"), ==, "The screen.");
        g_assert_cmpstr (at_str (a, "messages.2.content.0.content.1.type"), ==, "image");
        g_assert_cmpstr (at_str (a, "messages.2.content.0.content.1.source.type"), ==, "base64");
        g_assert_cmpstr (at_str (a, "messages.2.content.0.content.1.source.media_type"), ==,
                         "image/png");
        g_assert_cmpstr (at_str (a, "messages.2.content.0.content.1.source.data"), ==, data);

        /* OpenAI: a function with the schema; the tool message, then the picture. */
        g_assert_cmpstr (at_str (o, "tools.1.type"), ==, "function");
        g_assert_cmpstr (at_str (o, "tools.1.function.name"), ==, "computer");
        g_assert_cmpstr (at_str (o, "tools.1.function.parameters.required.0"), ==, "action");
        g_assert_cmpstr (at_str (o, "messages.2.role"), ==, "tool");
        g_assert_cmpstr (at_str (o, "messages.2.tool_call_id"), ==, "c1");
        g_assert_cmpstr (at_str (o, "messages.2.content"), ==, "The screen.");
        g_assert_cmpstr (at_str (o, "messages.3.role"), ==, "user");
        g_assert_cmpstr (at_str (o, "messages.3.content.0.type"), ==, "text");
        g_assert_nonnull (strstr (at_str (o, "messages.3.content.0.text"), "c1"));
        g_assert_cmpstr (at_str (o, "messages.3.content.1.type"), ==, "image_url");
        g_assert_cmpstr (at_str (o, "messages.3.content.1.image_url.url"), ==, url);
        g_assert_cmpint (cJSON_GetArraySize (at (o, "messages")), ==, 4);
}

static void
test_empty_conversation (void)
{
        g_autoptr (CorralLlmConversation) conv = corral_llm_conversation_new ("m", 1);
        g_autoptr (GError) error = NULL;

        g_assert_null (corral_llm_anthropic_build_body (conv, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST);
        g_clear_error (&error);
        g_assert_null (corral_llm_openai_build_body (conv, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST);
}

/* Feeds data events to a decoder; returns the response or NULL with error. */
static CorralLlmResponse *
decode (const CorralLlmWire *wire, const char *const *events, GError **error)
{
        CorralLlmLimits limits;
        gpointer d;
        CorralLlmResponse *r = NULL;
        gboolean ok = TRUE;

        corral_llm_limits_init_default (&limits);
        d = wire->decoder_new (&limits, NULL, NULL);
        for (guint i = 0; ok && events[i] != NULL; i += 2)
                ok = wire->decoder_event (d, events[i], events[i + 1], strlen (events[i + 1]),
                                          error);
        if (ok)
                r = wire->decoder_finish (d, error);
        wire->decoder_free (d);
        return r;
}

static void
test_openai_fragments (void)
{
        /* Two calls whose fragments interleave; the second has no id (a local server). */
        static const char *const events[] = {
                "message",
                "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}",
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":"
                "{\"name\":\"a\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}",
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"name\":"
                "\"b\",\"arguments\":\"\"}}]}}]}",
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                "\"arguments\":\": 1}\"}}]}}]}",
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{"
                "\"arguments\":\"{}\"}}]}}]}",
                "message",
                "{\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
                "message",
                "[DONE]",
                NULL,
        };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmResponse) r = decode (&corral_llm_openai_wire, events, &error);
        CorralLlmBlock *a, *b;

        g_assert_no_error (error);
        g_assert_cmpuint (r->blocks->len, ==, 2);
        a = g_ptr_array_index (r->blocks, 0);
        b = g_ptr_array_index (r->blocks, 1);
        g_assert_cmpstr (a->id, ==, "c0");
        g_assert_cmpint (cJSON_GetObjectItem (a->input, "x")->valueint, ==, 1);
        g_assert_cmpstr (b->name, ==, "b");
        g_assert_cmpstr (b->id, ==, "call_1");
        g_assert_cmpint (r->stop_reason, ==, CORRAL_LLM_STOP_TOOL_USE);
}

static void
test_openai_refusals (void)
{
        static const char *const skipped_index[] = {
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":2,\"id\":\"c\",\"function\":{"
                "\"name\":\"a\"}}]}}]}",
                NULL,
        };
        static const char *const no_name[] = {
                "message",
                "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\"}]}}]}",
                NULL,
        };
        static const char *const done_only[] = { "message", "[DONE]", NULL };
        const char *const *cases[] = { skipped_index, no_name, done_only };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_assert_null (decode (&corral_llm_openai_wire, cases[i], &error));
                g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        }
}

static void
test_anthropic_blocks (void)
{
        static const char *const events[] = {
                "message_start",
                "{\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3}}}",
                "content_block_start",
                "{\"index\":0,\"content_block\":{\"type\":\"thinking\"}}",
                "content_block_delta",
                "{\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}",
                "content_block_stop",
                "{\"index\":0}",
                "content_block_start",
                "{\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
                "content_block_delta",
                "{\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}",
                "content_block_stop",
                "{\"index\":1}",
                "message_delta",
                "{\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}",
                "message_stop",
                "{}",
                "content_block_delta",
                "after the end: ignored",
                NULL,
        };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmResponse) r = decode (&corral_llm_anthropic_wire, events, &error);

        g_assert_no_error (error);
        g_assert_cmpuint (r->blocks->len, ==, 1);
        g_assert_cmpstr (((CorralLlmBlock *) g_ptr_array_index (r->blocks, 0))->text, ==, "hi");
        g_assert_cmpuint (r->usage.input_tokens, ==, 3);
        g_assert_cmpuint (r->usage.output_tokens, ==, 9);
}

static void
test_anthropic_refusals (void)
{
        static const char *const before_start[] = {
                "content_block_start", "{\"index\":0,\"content_block\":{\"type\":\"text\"}}", NULL
        };
        static const char *const out_of_order[] = {
                "message_start", "{\"message\":{}}", "content_block_start",
                "{\"index\":1,\"content_block\":{\"type\":\"text\"}}", NULL
        };
        static const char *const delta_after_stop[] = {
                "message_start",
                "{\"message\":{}}",
                "content_block_start",
                "{\"index\":0,\"content_block\":{\"type\":\"text\"}}",
                "content_block_stop",
                "{\"index\":0}",
                "content_block_delta",
                "{\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
                NULL
        };
        static const char *const not_object[] = { "message_start", "[1]", NULL };
        const char *const *cases[] = { before_start, out_of_order, delta_after_stop, not_object };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_assert_null (decode (&corral_llm_anthropic_wire, cases[i], &error));
                g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        }
}

static void
test_http_errors (void)
{
        static const struct {
                guint status;
                const char *body;
                int code;
        } cases[] = {
                { 401, "{\"error\":{\"message\":\"bad key sk-secret-123456789\"}}",
                  CORRAL_LLM_ERROR_AUTH },
                { 429, "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"m\"}}",
                  CORRAL_LLM_ERROR_RATE_LIMITED },
                { 529, "{}", CORRAL_LLM_ERROR_OVERLOADED },
                { 503, "{\"error\":{\"type\":\"overloaded_error\"}}", CORRAL_LLM_ERROR_OVERLOADED },
                { 502, "<html>bad gateway</html>", CORRAL_LLM_ERROR_SERVER },
                { 400, "{\"error\":{\"message\":\"sk-secret-123456789 is wrong\"}}",
                  CORRAL_LLM_ERROR_INVALID_REQUEST },
                { 302, "", CORRAL_LLM_ERROR_PROTOCOL },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) e = corral_llm_http_error (
                        CORRAL_LLM_PROVIDER_OPENAI, cases[i].status, cases[i].body,
                        strlen (cases[i].body), "sk-secret-123456789");
                g_assert_error (e, CORRAL_LLM_ERROR, cases[i].code);
                g_assert_null (strstr (e->message, "sk-secret-123456789"));
        }
}

static void
test_clean_message (void)
{
        g_autofree char *long_text = g_strnfill (1000, 'a');
        g_autofree char *cut = corral_llm_clean_server_message (long_text, NULL);
        g_autofree char *ctl = corral_llm_clean_server_message ("a\nb\x1b[31mc\xff", NULL);
        g_autofree char *at_cut = NULL;
        g_autofree char *near_end = g_strconcat (long_text + 710, "sk-secret-123456789", NULL);

        g_assert_cmpuint (g_utf8_strlen (cut, -1), ==, 301);
        g_assert_true (g_str_has_suffix (cut, "…"));
        g_assert_cmpstr (ctl, ==, "a b [31mc\xef\xbf\xbd");
        /* A key that straddles the cut leaves no prefix behind. */
        at_cut = corral_llm_clean_server_message (near_end, "sk-secret-123456789");
        g_assert_null (strstr (at_cut, "sk-secret"));
}

static void
test_retry_after (void)
{
        g_autoptr (SoupMessageHeaders) h = soup_message_headers_new (SOUP_MESSAGE_HEADERS_RESPONSE);

        g_assert_cmpint (corral_llm_http_retry_after_ms (h), ==, -1);
        soup_message_headers_replace (h, "retry-after", "3");
        g_assert_cmpint (corral_llm_http_retry_after_ms (h), ==, 3000);
        soup_message_headers_replace (h, "retry-after-ms", "250");
        g_assert_cmpint (corral_llm_http_retry_after_ms (h), ==, 250);
        soup_message_headers_remove (h, "retry-after-ms");
        soup_message_headers_replace (h, "retry-after", "Wed, 21 Oct 2015 07:28:00 GMT");
        g_assert_cmpint (corral_llm_http_retry_after_ms (h), ==, -1);
        soup_message_headers_replace (h, "retry-after", "-5");
        g_assert_cmpint (corral_llm_http_retry_after_ms (h), ==, -1);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/llm-wire/anthropic-body", test_anthropic_body);
        g_test_add_func ("/llm-wire/openai-body", test_openai_body);
        g_test_add_func ("/llm-wire/empty-conversation", test_empty_conversation);
        g_test_add_func ("/llm-wire/computer-tool", test_computer_tool);
        g_test_add_func ("/llm-wire/openai-fragments", test_openai_fragments);
        g_test_add_func ("/llm-wire/openai-refusals", test_openai_refusals);
        g_test_add_func ("/llm-wire/anthropic-blocks", test_anthropic_blocks);
        g_test_add_func ("/llm-wire/anthropic-refusals", test_anthropic_refusals);
        g_test_add_func ("/llm-wire/http-errors", test_http_errors);
        g_test_add_func ("/llm-wire/clean-message", test_clean_message);
        g_test_add_func ("/llm-wire/retry-after", test_retry_after);
        return g_test_run ();
}
