/* llm-openai.c — OpenAI-compatible chat completions on the wire: request body and decoder.
 *
 * The neutral model maps as follows: the system prompt is the first "system" message; a user
 * message's tool_result blocks become one "tool" message each (in order) followed by its text
 * as a "user" message; an assistant message's tool_use blocks become "tool_calls" with the
 * input serialised into "arguments". Tool results have no error flag in this API, so an
 * error result is prefixed with "Error: ". Usage: input_tokens counts the prompt tokens not
 * read from the cache (prompt_tokens - cached_tokens), as the Anthropic API counts them.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-assemble.h"
#include "llm-error.h"
#include "llm-wire.h"

#include <glib/gi18n.h>
#include <string.h>

static char *
joined_text (const CorralLlmMessage *message)
{
        GString *s = g_string_new (NULL);

        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);
                if (b->type != CORRAL_LLM_BLOCK_TEXT || b->text == NULL || *b->text == '\0')
                        continue;
                if (s->len > 0)
                        g_string_append (s, "\n\n");
                g_string_append (s, b->text);
        }
        return g_string_free (s, FALSE);
}

static gboolean
has_pictures (const CorralLlmMessage *message)
{
        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);

                if (b->type == CORRAL_LLM_BLOCK_TOOL_RESULT && b->image)
                        return TRUE;
        }
        return FALSE;
}

/* A "tool" message is text only in this API: the pictures of tool results (screenshots) follow
 * in one "user" message, each as a data: URL after a line naming its call, then the message's
 * own text. */
static void
add_pictures (cJSON *messages, const CorralLlmMessage *message, const char *text)
{
        cJSON *m, *parts;

        if (!has_pictures (message))
                return;
        m = cJSON_CreateObject ();
        cJSON_AddStringToObject (m, "role", "user");
        parts = cJSON_AddArrayToObject (m, "content");
        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);
                g_autofree char *label = NULL, *data = NULL, *url = NULL;
                cJSON *part;

                if (b->type != CORRAL_LLM_BLOCK_TOOL_RESULT || !b->image)
                        continue;
                label = g_strdup_printf ("The screen after tool call %s:", b->id);
                part = cJSON_CreateObject ();
                cJSON_AddStringToObject (part, "type", "text");
                corral_llm_json_add_text (part, "text", label);
                cJSON_AddItemToArray (parts, part);
                data = g_base64_encode (g_bytes_get_data (b->image, NULL),
                                        g_bytes_get_size (b->image));
                url = g_strdup_printf ("data:%s;base64,%s", b->image_media_type, data);
                part = cJSON_CreateObject ();
                cJSON_AddStringToObject (part, "type", "image_url");
                cJSON_AddStringToObject (cJSON_AddObjectToObject (part, "image_url"), "url", url);
                cJSON_AddItemToArray (parts, part);
        }
        if (*text != '\0') {
                cJSON *part = cJSON_CreateObject ();

                cJSON_AddStringToObject (part, "type", "text");
                corral_llm_json_add_text (part, "text", text);
                cJSON_AddItemToArray (parts, part);
        }
        cJSON_AddItemToArray (messages, m);
}

static void
add_user (cJSON *messages, const CorralLlmMessage *message)
{
        g_autofree char *text = joined_text (message);

        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);
                g_autofree char *content = NULL;
                cJSON *m;

                if (b->type != CORRAL_LLM_BLOCK_TOOL_RESULT)
                        continue;
                content = b->is_error ? g_strconcat ("Error: ", b->text, NULL) : g_strdup (b->text);
                m = cJSON_CreateObject ();
                cJSON_AddStringToObject (m, "role", "tool");
                corral_llm_json_add_text (m, "tool_call_id", b->id);
                corral_llm_json_add_text (m, "content", content);
                cJSON_AddItemToArray (messages, m);
        }
        add_pictures (messages, message, text);
        if (*text != '\0' && !has_pictures (message)) {
                cJSON *m = cJSON_CreateObject ();
                cJSON_AddStringToObject (m, "role", "user");
                corral_llm_json_add_text (m, "content", text);
                cJSON_AddItemToArray (messages, m);
        }
}

static cJSON *
tool_call_to_json (const CorralLlmBlock *b)
{
        cJSON *call = cJSON_CreateObject ();
        cJSON *function;
        g_autofree char *arguments = NULL;

        corral_llm_json_add_text (call, "id", b->id);
        cJSON_AddStringToObject (call, "type", "function");
        function = cJSON_AddObjectToObject (call, "function");
        corral_llm_json_add_text (function, "name", b->name);
        arguments = b->input ? cJSON_PrintUnformatted (b->input) : g_strdup ("{}");
        cJSON_AddStringToObject (function, "arguments", arguments);
        return call;
}

static void
add_assistant (cJSON *messages, const CorralLlmMessage *message)
{
        g_autofree char *text = joined_text (message);
        cJSON *m = cJSON_CreateObject ();
        cJSON *calls = NULL;

        cJSON_AddStringToObject (m, "role", "assistant");
        if (*text != '\0')
                corral_llm_json_add_text (m, "content", text);
        else
                cJSON_AddNullToObject (m, "content");
        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);
                if (b->type != CORRAL_LLM_BLOCK_TOOL_USE)
                        continue;
                if (calls == NULL)
                        calls = cJSON_AddArrayToObject (m, "tool_calls");
                cJSON_AddItemToArray (calls, tool_call_to_json (b));
        }
        cJSON_AddItemToArray (messages, m);
}

static void
add_tools (cJSON *body, const CorralLlmConversation *conv)
{
        cJSON *tools;

        if (conv->tools->len == 0)
                return;
        tools = cJSON_AddArrayToObject (body, "tools");
        for (guint i = 0; i < conv->tools->len; i++) {
                const CorralLlmTool *t = g_ptr_array_index (conv->tools, i);
                cJSON *tool = cJSON_CreateObject ();
                cJSON *function;

                cJSON_AddStringToObject (tool, "type", "function");
                function = cJSON_AddObjectToObject (tool, "function");
                corral_llm_json_add_text (function, "name", t->name);
                corral_llm_json_add_text (function, "description", t->description);
                cJSON_AddItemToObject (function, "parameters",
                                       cJSON_Duplicate (t->input_schema, TRUE));
                cJSON_AddItemToArray (tools, tool);
        }
}

char *
corral_llm_openai_build_body (const CorralLlmConversation *conv, GError **error)
{
        g_autoptr (cJSON) body = cJSON_CreateObject ();
        cJSON *messages, *options;

        if (conv->messages->len == 0) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST,
                             _ ("The conversation has no message to send."));
                return NULL;
        }
        corral_llm_json_add_text (body, "model", conv->model);
        cJSON_AddNumberToObject (body, "max_tokens", conv->max_tokens);
        cJSON_AddTrueToObject (body, "stream");
        options = cJSON_AddObjectToObject (body, "stream_options");
        cJSON_AddTrueToObject (options, "include_usage");
        messages = cJSON_AddArrayToObject (body, "messages");
        if (conv->system != NULL && *conv->system != '\0') {
                cJSON *m = cJSON_CreateObject ();
                cJSON_AddStringToObject (m, "role", "system");
                corral_llm_json_add_text (m, "content", conv->system);
                cJSON_AddItemToArray (messages, m);
        }
        for (guint i = 0; i < conv->messages->len; i++) {
                const CorralLlmMessage *m = g_ptr_array_index (conv->messages, i);
                if (m->role == CORRAL_LLM_ROLE_USER)
                        add_user (messages, m);
                else
                        add_assistant (messages, m);
        }
        add_tools (body, conv);
        return cJSON_PrintUnformatted (body);
}

/* ---- decoder ---- */

typedef struct {
        CorralLlmAssembler *assembler;
        GArray *tool_map; /* the API's tool_calls index → assembler index */
        gint text_block; /* -1 until content arrives */
        guint max_blocks;
        gboolean finished; /* a finish_reason arrived */
        gboolean done; /* data: [DONE] */
} Decoder;

gpointer
corral_llm_openai_decoder_new (const CorralLlmLimits *limits,
                               CorralLlmEventFunc func,
                               gpointer user_data)
{
        Decoder *d = g_new0 (Decoder, 1);

        d->assembler = corral_llm_assembler_new (limits, func, user_data);
        d->tool_map = g_array_new (FALSE, FALSE, sizeof (gint));
        d->text_block = -1;
        d->max_blocks = limits->max_blocks;
        return d;
}

void
corral_llm_openai_decoder_free (gpointer decoder)
{
        Decoder *d = decoder;

        if (d == NULL)
                return;
        corral_llm_assembler_free (d->assembler);
        g_array_unref (d->tool_map);
        g_free (d);
}

static gboolean
on_content (Decoder *d, const char *content, GError **error)
{
        guint index;

        if (content == NULL || *content == '\0')
                return TRUE;
        if (d->text_block < 0) {
                if (!corral_llm_assembler_start_text (d->assembler, &index, error))
                        return FALSE;
                d->text_block = (gint) index;
        }
        return corral_llm_assembler_append (d->assembler, (guint) d->text_block, content,
                                            strlen (content), error);
}

static gboolean
start_tool (Decoder *d, const cJSON *call, guint api_index, GError **error)
{
        const cJSON *function = cJSON_GetObjectItemCaseSensitive (call, "function");
        const char *id = corral_llm_json_string (call, "id");
        g_autofree char *made_id = NULL;
        guint mine;

        /* Some local servers leave out the id; the conversation still needs one. */
        if (id == NULL || *id == '\0')
                id = made_id = g_strdup_printf ("call_%u", api_index);
        if (!corral_llm_assembler_start_tool (
                    d->assembler, id, corral_llm_json_string (function, "name"), &mine, error))
                return FALSE;
        g_array_append_val (d->tool_map, mine);
        return TRUE;
}

static gboolean
on_tool_call (Decoder *d, const cJSON *call, GError **error)
{
        const cJSON *index = cJSON_GetObjectItemCaseSensitive (call, "index");
        const cJSON *function = cJSON_GetObjectItemCaseSensitive (call, "function");
        const char *arguments = corral_llm_json_string (function, "arguments");
        guint api_index;

        if (!cJSON_IsNumber (index) || index->valuedouble < 0 || index->valuedouble > 1e6) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent a tool call without a valid index."));
                return FALSE;
        }
        api_index = (guint) index->valuedouble;
        if (api_index > d->tool_map->len || api_index >= d->max_blocks) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider started tool call %u out of order."), api_index);
                return FALSE;
        }
        if (api_index == d->tool_map->len && !start_tool (d, call, api_index, error))
                return FALSE;
        if (arguments == NULL)
                return TRUE;
        return corral_llm_assembler_append (d->assembler,
                                            (guint) g_array_index (d->tool_map, gint, api_index),
                                            arguments, strlen (arguments), error);
}

static CorralLlmStopReason
parse_finish_reason (const char *s)
{
        if (g_strcmp0 (s, "stop") == 0)
                return CORRAL_LLM_STOP_END_TURN;
        if (g_strcmp0 (s, "tool_calls") == 0 || g_strcmp0 (s, "function_call") == 0)
                return CORRAL_LLM_STOP_TOOL_USE;
        if (g_strcmp0 (s, "length") == 0)
                return CORRAL_LLM_STOP_MAX_TOKENS;
        if (g_strcmp0 (s, "content_filter") == 0)
                return CORRAL_LLM_STOP_REFUSAL;
        return CORRAL_LLM_STOP_OTHER;
}

static gboolean
on_choice (Decoder *d, const cJSON *choice, GError **error)
{
        const cJSON *delta = cJSON_GetObjectItemCaseSensitive (choice, "delta");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive (delta, "tool_calls");
        const char *finish = corral_llm_json_string (choice, "finish_reason");
        const cJSON *call;

        if (!on_content (d, corral_llm_json_string (delta, "content"), error))
                return FALSE;
        if (cJSON_IsArray (calls)) {
                cJSON_ArrayForEach (call, calls) {
                        if (!on_tool_call (d, call, error))
                                return FALSE;
                }
        }
        if (finish != NULL) {
                CorralLlmResponse *r = corral_llm_assembler_peek (d->assembler);
                r->stop_reason = parse_finish_reason (finish);
                g_free (r->stop_reason_raw);
                r->stop_reason_raw = g_strdup (finish);
                d->finished = TRUE;
        }
        return TRUE;
}

static void
read_usage (Decoder *d, const cJSON *u)
{
        CorralLlmUsage *usage = &corral_llm_assembler_peek (d->assembler)->usage;
        const cJSON *details = cJSON_GetObjectItemCaseSensitive (u, "prompt_tokens_details");
        guint64 prompt = corral_llm_json_count (u, "prompt_tokens");
        guint64 cached = corral_llm_json_count (details, "cached_tokens");

        if (!cJSON_IsObject (u))
                return;
        usage->cache_read_input_tokens = MIN (cached, prompt);
        usage->input_tokens = prompt - usage->cache_read_input_tokens;
        usage->output_tokens = corral_llm_json_count (u, "completion_tokens");
}

static gboolean
on_error (const cJSON *err, GError **error)
{
        g_autofree char *message = corral_llm_clean_server_message (
                cJSON_IsString (err) ? err->valuestring : corral_llm_json_string (err, "message"),
                NULL);

        g_set_error (error, CORRAL_LLM_ERROR,
                     corral_llm_error_code_for_type (corral_llm_json_string (err, "type"),
                                                     CORRAL_LLM_ERROR_SERVER),
                     _ ("The provider reported an error during the reply: %s"), message);
        return FALSE;
}

static gboolean
on_chunk (Decoder *d, const cJSON *json, GError **error)
{
        const cJSON *choices = cJSON_GetObjectItemCaseSensitive (json, "choices");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive (json, "error");
        CorralLlmResponse *r = corral_llm_assembler_peek (d->assembler);
        const char *id = corral_llm_json_string (json, "id");
        const char *model = corral_llm_json_string (json, "model");

        if (err != NULL && !cJSON_IsNull (err))
                return on_error (err, error);
        if (r->id == NULL && id != NULL)
                r->id = g_strdup (id);
        if (r->model == NULL && model != NULL)
                r->model = g_strdup (model);
        read_usage (d, cJSON_GetObjectItemCaseSensitive (json, "usage"));
        /* Only the first choice is ours: we never ask for n > 1. */
        if (cJSON_IsArray (choices) && cJSON_GetArraySize (choices) > 0)
                return on_choice (d, cJSON_GetArrayItem (choices, 0), error);
        return TRUE;
}

gboolean
corral_llm_openai_decoder_event (
        gpointer decoder, const char *event_type, const char *data, gsize len, GError **error)
{
        Decoder *d = decoder;
        g_autoptr (cJSON) json = NULL;

        if (d->done)
                return TRUE;
        if (len == 6 && memcmp (data, "[DONE]", 6) == 0) {
                d->done = TRUE;
                return TRUE;
        }
        /* Chunks come as unnamed events; some servers name an "error" event. */
        if (strcmp (event_type, "message") != 0 && strcmp (event_type, "error") != 0)
                return TRUE;
        json = corral_llm_json_parse_event (data, len, "chat.completion.chunk", error);
        if (json == NULL)
                return FALSE;
        return on_chunk (d, json, error);
}

CorralLlmResponse *
corral_llm_openai_decoder_finish (gpointer decoder, GError **error)
{
        Decoder *d = decoder;

        /* [DONE] without a finish_reason, or neither: the reply was cut short. A finish_reason
         * without [DONE] is accepted, as some local servers end that way. */
        if (!d->finished) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply ended without a finish reason: the connection was cut "
                                "or the stream is incomplete."));
                return NULL;
        }
        return corral_llm_assembler_steal (d->assembler, error);
}

const CorralLlmWire corral_llm_openai_wire = {
        .path = "/chat/completions",
        .build_body = corral_llm_openai_build_body,
        .decoder_new = corral_llm_openai_decoder_new,
        .decoder_event = corral_llm_openai_decoder_event,
        .decoder_finish = corral_llm_openai_decoder_finish,
        .decoder_free = corral_llm_openai_decoder_free,
};
