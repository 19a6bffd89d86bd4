/* llm-anthropic.c — the Anthropic Messages API on the wire: request body and SSE decoder.
 *
 * Prompt caching: cache_control breakpoints go on the last tool, the system prompt and the
 * last block of the last message, so each turn of an assistant loop reads the previous turns from
 * the cache instead of paying for them again (at most 4 breakpoints are allowed; we use 3).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-assemble.h"
#include "llm-error.h"
#include "llm-wire.h"

#include <glib/gi18n.h>
#include <string.h>

static void
add_cache_control (cJSON *object)
{
        cJSON *cc = cJSON_AddObjectToObject (object, "cache_control");

        cJSON_AddStringToObject (cc, "type", "ephemeral");
}

static cJSON *
block_to_json (const CorralLlmBlock *block)
{
        cJSON *j = cJSON_CreateObject ();

        switch (block->type) {
        case CORRAL_LLM_BLOCK_TEXT:
                cJSON_AddStringToObject (j, "type", "text");
                corral_llm_json_add_text (j, "text", block->text);
                break;
        case CORRAL_LLM_BLOCK_TOOL_USE:
                cJSON_AddStringToObject (j, "type", "tool_use");
                corral_llm_json_add_text (j, "id", block->id);
                corral_llm_json_add_text (j, "name", block->name);
                cJSON_AddItemToObject (j, "input",
                                       block->input ? cJSON_Duplicate (block->input, TRUE)
                                                    : cJSON_CreateObject ());
                break;
        case CORRAL_LLM_BLOCK_TOOL_RESULT:
        default:
                cJSON_AddStringToObject (j, "type", "tool_result");
                corral_llm_json_add_text (j, "tool_use_id", block->id);
                if (block->image) {
                        /* Text and the picture: [{"type": "text"}, {"type": "image", "source":
                         * {"type": "base64", "media_type", "data"}}]. */
                        cJSON *content = cJSON_AddArrayToObject (j, "content");
                        cJSON *text = cJSON_CreateObject ();
                        cJSON *image = cJSON_CreateObject ();
                        cJSON *source;
                        g_autofree char *data =
                                g_base64_encode (g_bytes_get_data (block->image, NULL),
                                                 g_bytes_get_size (block->image));

                        cJSON_AddStringToObject (text, "type", "text");
                        corral_llm_json_add_text (text, "text",
                                                  block->text && *block->text ? block->text
                                                                              : "(screenshot)");
                        cJSON_AddItemToArray (content, text);
                        cJSON_AddStringToObject (image, "type", "image");
                        source = cJSON_AddObjectToObject (image, "source");
                        cJSON_AddStringToObject (source, "type", "base64");
                        cJSON_AddStringToObject (source, "media_type", block->image_media_type);
                        cJSON_AddStringToObject (source, "data", data);
                        cJSON_AddItemToArray (content, image);
                } else {
                        corral_llm_json_add_text (j, "content", block->text);
                }
                if (block->is_error)
                        cJSON_AddTrueToObject (j, "is_error");
                break;
        }
        return j;
}

static cJSON *
message_to_json (const CorralLlmMessage *message)
{
        cJSON *j = cJSON_CreateObject ();
        cJSON *content;

        cJSON_AddStringToObject (j, "role",
                                 message->role == CORRAL_LLM_ROLE_USER ? "user" : "assistant");
        content = cJSON_AddArrayToObject (j, "content");
        for (guint i = 0; i < message->blocks->len; i++) {
                const CorralLlmBlock *b = g_ptr_array_index (message->blocks, i);
                /* The API refuses empty text blocks; a model's empty preamble says nothing. */
                if (b->type == CORRAL_LLM_BLOCK_TEXT && (b->text == NULL || *b->text == '\0'))
                        continue;
                cJSON_AddItemToArray (content, block_to_json (b));
        }
        return j;
}

static void
add_tools (cJSON *body, const CorralLlmConversation *conv)
{
        cJSON *tools, *last = NULL;

        if (conv->tools->len == 0)
                return;
        tools = cJSON_AddArrayToObject (body, "tools");
        for (guint i = 0; i < conv->tools->len; i++) {
                const CorralLlmTool *t = g_ptr_array_index (conv->tools, i);
                last = cJSON_CreateObject ();
                if (t->hosted_type) {
                        /* Anthropic's own tool: its type, name and the screen, no schema. */
                        cJSON_AddStringToObject (last, "type", t->hosted_type);
                        corral_llm_json_add_text (last, "name", t->name);
                        cJSON_AddNumberToObject (last, "display_width_px", t->display_width);
                        cJSON_AddNumberToObject (last, "display_height_px", t->display_height);
                        if (g_str_equal (t->hosted_type, "computer_20251124"))
                                cJSON_AddTrueToObject (last, "enable_zoom");
                        cJSON_AddItemToArray (tools, last);
                        continue;
                }
                corral_llm_json_add_text (last, "name", t->name);
                corral_llm_json_add_text (last, "description", t->description);
                cJSON_AddItemToObject (last, "input_schema",
                                       cJSON_Duplicate (t->input_schema, TRUE));
                cJSON_AddItemToArray (tools, last);
        }
        add_cache_control (last);
}

static void
add_messages (cJSON *body, const CorralLlmConversation *conv)
{
        cJSON *messages = cJSON_AddArrayToObject (body, "messages");
        cJSON *message = NULL, *content, *last_block;

        for (guint i = 0; i < conv->messages->len; i++) {
                message = message_to_json (g_ptr_array_index (conv->messages, i));
                cJSON_AddItemToArray (messages, message);
        }
        if (message == NULL)
                return;
        content = cJSON_GetObjectItemCaseSensitive (message, "content");
        last_block = cJSON_GetArrayItem (content, cJSON_GetArraySize (content) - 1);
        if (last_block != NULL)
                add_cache_control (last_block);
}

char *
corral_llm_anthropic_build_body (const CorralLlmConversation *conv, GError **error)
{
        g_autoptr (cJSON) body = cJSON_CreateObject ();

        if (conv->messages->len == 0) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST,
                             _ ("The conversation has no message to send."));
                return NULL;
        }
        corral_llm_json_add_text (body, "model", conv->model);
        cJSON_AddNumberToObject (body, "max_tokens", conv->max_tokens);
        cJSON_AddTrueToObject (body, "stream");
        if (conv->system != NULL && *conv->system != '\0') {
                cJSON *system = cJSON_AddArrayToObject (body, "system");
                cJSON *text = cJSON_CreateObject ();
                cJSON_AddStringToObject (text, "type", "text");
                corral_llm_json_add_text (text, "text", conv->system);
                add_cache_control (text);
                cJSON_AddItemToArray (system, text);
        }
        add_tools (body, conv);
        add_messages (body, conv);
        return cJSON_PrintUnformatted (body);
}

/* ---- decoder ---- */

typedef struct {
        CorralLlmAssembler *assembler;
        GArray *index_map; /* the API's block index → assembler index, or -1 (ignored type) */
        guint max_blocks;
        gboolean started;
        gboolean stopped;
} Decoder;

gpointer
corral_llm_anthropic_decoder_new (const CorralLlmLimits *limits,
                                  CorralLlmEventFunc func,
                                  gpointer user_data)
{
        Decoder *d = g_new0 (Decoder, 1);

        d->assembler = corral_llm_assembler_new (limits, func, user_data);
        d->index_map = g_array_new (FALSE, FALSE, sizeof (gint));
        d->max_blocks = limits->max_blocks;
        return d;
}

void
corral_llm_anthropic_decoder_free (gpointer decoder)
{
        Decoder *d = decoder;

        if (d == NULL)
                return;
        corral_llm_assembler_free (d->assembler);
        g_array_unref (d->index_map);
        g_free (d);
}

static void
read_usage (CorralLlmUsage *usage, const cJSON *u)
{
        if (!cJSON_IsObject (u))
                return;
        /* message_delta repeats the counts cumulatively; absent members keep their value. */
        if (cJSON_HasObjectItem (u, "input_tokens"))
                usage->input_tokens = corral_llm_json_count (u, "input_tokens");
        if (cJSON_HasObjectItem (u, "output_tokens"))
                usage->output_tokens = corral_llm_json_count (u, "output_tokens");
        if (cJSON_HasObjectItem (u, "cache_read_input_tokens"))
                usage->cache_read_input_tokens =
                        corral_llm_json_count (u, "cache_read_input_tokens");
        if (cJSON_HasObjectItem (u, "cache_creation_input_tokens"))
                usage->cache_creation_input_tokens =
                        corral_llm_json_count (u, "cache_creation_input_tokens");
}

static gboolean
on_message_start (Decoder *d, const cJSON *json, GError **error)
{
        const cJSON *message = cJSON_GetObjectItemCaseSensitive (json, "message");
        CorralLlmResponse *r = corral_llm_assembler_peek (d->assembler);

        if (!cJSON_IsObject (message) || d->started) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent an unexpected “message_start” event."));
                return FALSE;
        }
        d->started = TRUE;
        g_free (r->id);
        r->id = g_strdup (corral_llm_json_string (message, "id"));
        g_free (r->model);
        r->model = g_strdup (corral_llm_json_string (message, "model"));
        read_usage (&r->usage, cJSON_GetObjectItemCaseSensitive (message, "usage"));
        return TRUE;
}

static gboolean
get_index (const cJSON *json, guint *ret_index, GError **error)
{
        const cJSON *index = cJSON_GetObjectItemCaseSensitive (json, "index");

        if (!cJSON_IsNumber (index) || index->valuedouble < 0 || index->valuedouble > 1e6) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent a content block event without a valid index."));
                return FALSE;
        }
        *ret_index = (guint) index->valuedouble;
        return TRUE;
}

static gboolean
on_block_start (Decoder *d, const cJSON *json, GError **error)
{
        const cJSON *block = cJSON_GetObjectItemCaseSensitive (json, "content_block");
        const char *type = corral_llm_json_string (block, "type");
        const char *text;
        guint index, mine;
        gint mapped = -1;

        if (!get_index (json, &index, error))
                return FALSE;
        /* Blocks start in order, each once; this also bounds index_map. */
        if (index != d->index_map->len || index >= d->max_blocks) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider started content block %u out of order."), index);
                return FALSE;
        }
        if (g_strcmp0 (type, "text") == 0) {
                if (!corral_llm_assembler_start_text (d->assembler, &mine, error))
                        return FALSE;
                mapped = (gint) mine;
                text = corral_llm_json_string (block, "text");
                if (text &&
                    !corral_llm_assembler_append (d->assembler, mine, text, strlen (text), error))
                        return FALSE;
        } else if (g_strcmp0 (type, "tool_use") == 0) {
                if (!corral_llm_assembler_start_tool (
                            d->assembler, corral_llm_json_string (block, "id"),
                            corral_llm_json_string (block, "name"), &mine, error))
                        return FALSE;
                mapped = (gint) mine;
        }
        /* Other block types (thinking, server tools) are not ours to interpret. */
        g_array_append_val (d->index_map, mapped);
        return TRUE;
}

static gboolean
lookup_block (Decoder *d, const cJSON *json, gint *ret_mine, GError **error)
{
        guint index;

        if (!get_index (json, &index, error))
                return FALSE;
        if (index >= d->index_map->len) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply refers to content block %u, which was never started."),
                             index);
                return FALSE;
        }
        *ret_mine = g_array_index (d->index_map, gint, index);
        return TRUE;
}

static gboolean
on_block_delta (Decoder *d, const cJSON *json, GError **error)
{
        const cJSON *delta = cJSON_GetObjectItemCaseSensitive (json, "delta");
        const char *type = corral_llm_json_string (delta, "type");
        const char *fragment = NULL;
        gint mine;

        if (!lookup_block (d, json, &mine, error))
                return FALSE;
        if (mine < 0)
                return TRUE;
        if (corral_llm_assembler_block_is_tool (d->assembler, (guint) mine)) {
                if (g_strcmp0 (type, "input_json_delta") == 0)
                        fragment = corral_llm_json_string (delta, "partial_json");
        } else if (g_strcmp0 (type, "text_delta") == 0) {
                fragment = corral_llm_json_string (delta, "text");
        }
        if (fragment == NULL)
                return TRUE; /* citations, signatures and future delta types */
        return corral_llm_assembler_append (d->assembler, (guint) mine, fragment, strlen (fragment),
                                            error);
}

static gboolean
on_block_stop (Decoder *d, const cJSON *json, GError **error)
{
        gint mine;

        if (!lookup_block (d, json, &mine, error))
                return FALSE;
        if (mine < 0)
                return TRUE;
        return corral_llm_assembler_finish_block (d->assembler, (guint) mine, error);
}

static CorralLlmStopReason
parse_stop_reason (const char *s)
{
        static const struct {
                const char *name;
                CorralLlmStopReason reason;
        } map[] = {
                { "end_turn", CORRAL_LLM_STOP_END_TURN },
                { "tool_use", CORRAL_LLM_STOP_TOOL_USE },
                { "max_tokens", CORRAL_LLM_STOP_MAX_TOKENS },
                { "stop_sequence", CORRAL_LLM_STOP_STOP_SEQUENCE },
                { "refusal", CORRAL_LLM_STOP_REFUSAL },
                { "pause_turn", CORRAL_LLM_STOP_PAUSE },
        };

        for (gsize i = 0; s != NULL && i < G_N_ELEMENTS (map); i++)
                if (strcmp (map[i].name, s) == 0)
                        return map[i].reason;
        return CORRAL_LLM_STOP_OTHER;
}

static gboolean
on_message_delta (Decoder *d, const cJSON *json, GError **error)
{
        const cJSON *delta = cJSON_GetObjectItemCaseSensitive (json, "delta");
        const char *reason = corral_llm_json_string (delta, "stop_reason");
        CorralLlmResponse *r = corral_llm_assembler_peek (d->assembler);

        if (reason != NULL) {
                r->stop_reason = parse_stop_reason (reason);
                g_free (r->stop_reason_raw);
                r->stop_reason_raw = g_strdup (reason);
        }
        read_usage (&r->usage, cJSON_GetObjectItemCaseSensitive (json, "usage"));
        return TRUE;
}

static gboolean
on_error (const cJSON *json, GError **error)
{
        const cJSON *err = cJSON_GetObjectItemCaseSensitive (json, "error");
        const char *type = corral_llm_json_string (err, "type");
        g_autofree char *message =
                corral_llm_clean_server_message (corral_llm_json_string (err, "message"), NULL);
        int code = corral_llm_error_code_for_type (type, CORRAL_LLM_ERROR_SERVER);

        if (code == CORRAL_LLM_ERROR_OVERLOADED)
                g_set_error (error, CORRAL_LLM_ERROR, code,
                             _ ("The provider is overloaded; try again in a moment."));
        else
                g_set_error (error, CORRAL_LLM_ERROR, code,
                             _ ("The provider reported an error during the reply: %s"), message);
        return FALSE;
}

static gboolean
dispatch (Decoder *d, const char *type, const cJSON *json, GError **error)
{
        if (strcmp (type, "error") == 0)
                return on_error (json, error);
        if (strcmp (type, "message_start") == 0)
                return on_message_start (d, json, error);
        if (!d->started) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent “%s” before “message_start”."), type);
                return FALSE;
        }
        if (strcmp (type, "content_block_start") == 0)
                return on_block_start (d, json, error);
        if (strcmp (type, "content_block_delta") == 0)
                return on_block_delta (d, json, error);
        if (strcmp (type, "content_block_stop") == 0)
                return on_block_stop (d, json, error);
        if (strcmp (type, "message_delta") == 0)
                return on_message_delta (d, json, error);
        if (strcmp (type, "message_stop") == 0)
                d->stopped = TRUE;
        return TRUE;
}

/* Event types we do not know are skipped without parsing, as the API's versioning policy
 * asks: new ones may appear at any time. */
static gboolean
is_known (const char *type)
{
        static const char *const known[] = { "message_start",
                                             "content_block_start",
                                             "content_block_delta",
                                             "content_block_stop",
                                             "message_delta",
                                             "message_stop",
                                             "error" };

        for (gsize i = 0; i < G_N_ELEMENTS (known); i++)
                if (strcmp (known[i], type) == 0)
                        return TRUE;
        return FALSE;
}

gboolean
corral_llm_anthropic_decoder_event (
        gpointer decoder, const char *event_type, const char *data, gsize len, GError **error)
{
        Decoder *d = decoder;
        g_autoptr (cJSON) json = NULL;

        if (!is_known (event_type) || d->stopped)
                return TRUE;
        json = corral_llm_json_parse_event (data, len, event_type, error);
        if (json == NULL)
                return FALSE;
        return dispatch (d, event_type, json, error);
}

CorralLlmResponse *
corral_llm_anthropic_decoder_finish (gpointer decoder, GError **error)
{
        Decoder *d = decoder;

        if (!d->stopped) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply ended before “message_stop”: the connection was cut "
                                "or the stream is incomplete."));
                return NULL;
        }
        return corral_llm_assembler_steal (d->assembler, error);
}

const CorralLlmWire corral_llm_anthropic_wire = {
        .path = "/v1/messages",
        .build_body = corral_llm_anthropic_build_body,
        .decoder_new = corral_llm_anthropic_decoder_new,
        .decoder_event = corral_llm_anthropic_decoder_event,
        .decoder_finish = corral_llm_anthropic_decoder_finish,
        .decoder_free = corral_llm_anthropic_decoder_free,
};
