/* llm-assemble.c — builds a response from streamed fragments, within limits.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-assemble.h"

#include "llm-error.h"

#include <glib/gi18n.h>

typedef struct {
        GString *buf; /* text, or the tool input JSON as it arrives */
        gboolean finished;
} Pending;

struct CorralLlmAssembler {
        CorralLlmLimits limits;
        CorralLlmEventFunc func;
        gpointer user_data;
        CorralLlmResponse *response;
        GArray *pending; /* of Pending, parallel to response->blocks */
};

void
corral_llm_limits_init_default (CorralLlmLimits *limits)
{
        limits->max_event_bytes = 1024 * 1024;
        limits->max_response_bytes = 32 * 1024 * 1024;
        limits->max_blocks = 256;
        limits->max_tool_input_bytes = 4 * 1024 * 1024;
}

static void
pending_clear (Pending *p)
{
        if (p->buf)
                g_string_free (p->buf, TRUE);
}

CorralLlmAssembler *
corral_llm_assembler_new (const CorralLlmLimits *limits,
                          CorralLlmEventFunc func,
                          gpointer user_data)
{
        CorralLlmAssembler *a = g_new0 (CorralLlmAssembler, 1);

        a->limits = *limits;
        a->func = func;
        a->user_data = user_data;
        a->response = corral_llm_response_new ();
        a->pending = g_array_new (FALSE, TRUE, sizeof (Pending));
        g_array_set_clear_func (a->pending, (GDestroyNotify) pending_clear);
        return a;
}

void
corral_llm_assembler_free (CorralLlmAssembler *a)
{
        if (a == NULL)
                return;
        corral_llm_response_free (a->response);
        g_array_unref (a->pending);
        g_free (a);
}

static void
emit (CorralLlmAssembler *a, const CorralLlmEvent *event)
{
        if (a->func)
                a->func (event, a->user_data);
}

static gboolean
add_block (CorralLlmAssembler *a, CorralLlmBlock *block, guint *ret_index, GError **error)
{
        Pending p = { g_string_new (NULL), FALSE };

        if (a->response->blocks->len >= a->limits.max_blocks) {
                corral_llm_block_free (block);
                pending_clear (&p);
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply has more than %u content blocks."),
                             a->limits.max_blocks);
                return FALSE;
        }
        g_ptr_array_add (a->response->blocks, block);
        g_array_append_val (a->pending, p);
        *ret_index = a->response->blocks->len - 1;
        return TRUE;
}

gboolean
corral_llm_assembler_start_text (CorralLlmAssembler *a, guint *ret_index, GError **error)
{
        return add_block (a, corral_llm_block_new_text (NULL), ret_index, error);
}

gboolean
corral_llm_assembler_start_tool (
        CorralLlmAssembler *a, const char *id, const char *name, guint *ret_index, GError **error)
{
        CorralLlmEvent event = { .type = CORRAL_LLM_EVENT_TOOL_USE_START };

        if (name == NULL || *name == '\0' || id == NULL || *id == '\0') {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply has a tool call without a name or an id."));
                return FALSE;
        }
        if (!g_utf8_validate (name, -1, NULL) || !g_utf8_validate (id, -1, NULL)) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply has a tool call whose name is not valid UTF-8."));
                return FALSE;
        }
        if (!add_block (a, corral_llm_block_new_tool_use (id, name, NULL), ret_index, error))
                return FALSE;
        event.block_index = *ret_index;
        event.tool_id = id;
        event.tool_name = name;
        emit (a, &event);
        return TRUE;
}

static Pending *
get_open (CorralLlmAssembler *a, guint index, GError **error)
{
        Pending *p;

        if (index >= a->pending->len) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply refers to content block %u, which was never started."),
                             index);
                return NULL;
        }
        p = &g_array_index (a->pending, Pending, index);
        if (p->finished) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The reply adds to content block %u after it ended."), index);
                return NULL;
        }
        return p;
}

gboolean
corral_llm_assembler_block_is_tool (CorralLlmAssembler *a, guint index)
{
        CorralLlmBlock *b;

        if (index >= a->response->blocks->len)
                return FALSE;
        b = g_ptr_array_index (a->response->blocks, index);
        return b->type == CORRAL_LLM_BLOCK_TOOL_USE;
}

gboolean
corral_llm_assembler_append (
        CorralLlmAssembler *a, guint index, const char *fragment, gsize len, GError **error)
{
        Pending *p = get_open (a, index, error);
        CorralLlmEvent event = { .type = CORRAL_LLM_EVENT_TEXT_DELTA };

        if (p == NULL)
                return FALSE;
        if (corral_llm_assembler_block_is_tool (a, index)) {
                if (p->buf->len + len > a->limits.max_tool_input_bytes) {
                        g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                                     _ ("The input of a tool call is larger than %llu bytes."),
                                     (unsigned long long) a->limits.max_tool_input_bytes);
                        return FALSE;
                }
                g_string_append_len (p->buf, fragment, len);
                return TRUE;
        }
        g_string_append_len (p->buf, fragment, len);
        if (len == 0)
                return TRUE;
        event.block_index = index;
        event.text = fragment;
        event.text_len = len;
        emit (a, &event);
        return TRUE;
}

static cJSON *
parse_tool_input (const CorralLlmBlock *block, GString *buf, GError **error)
{
        const char *end = NULL;
        cJSON *json;

        /* Models often stream no fragment at all for a tool that takes no arguments. */
        if (buf->len == 0)
                return cJSON_CreateObject ();
        json = cJSON_ParseWithLengthOpts (buf->str, buf->len, &end, FALSE);
        if (json != NULL && end != NULL && (gsize) (end - buf->str) != buf->len) {
                /* cJSON stops at the end of the value: anything but spaces after it is junk. */
                for (const char *c = end; c < buf->str + buf->len; c++)
                        if (!g_ascii_isspace (*c))
                                g_clear_pointer (&json, cJSON_Delete);
        }
        if (json == NULL) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The input of the call to tool “%s” is not valid JSON."),
                             block->name);
                return NULL;
        }
        if (!cJSON_IsObject (json)) {
                cJSON_Delete (json);
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The input of the call to tool “%s” is not a JSON object."),
                             block->name);
                return NULL;
        }
        return json;
}

gboolean
corral_llm_assembler_finish_block (CorralLlmAssembler *a, guint index, GError **error)
{
        Pending *p = get_open (a, index, error);
        CorralLlmBlock *block;

        if (p == NULL)
                return FALSE;
        block = g_ptr_array_index (a->response->blocks, index);
        if (block->type == CORRAL_LLM_BLOCK_TOOL_USE) {
                cJSON *input = parse_tool_input (block, p->buf, error);
                if (input == NULL)
                        return FALSE;
                cJSON_Delete (block->input);
                block->input = input;
        } else {
                g_free (block->text);
                block->text = g_strndup (p->buf->str, p->buf->len);
        }
        p->finished = TRUE;
        g_string_free (p->buf, TRUE);
        p->buf = NULL;
        return TRUE;
}

CorralLlmResponse *
corral_llm_assembler_peek (CorralLlmAssembler *a)
{
        return a->response;
}

CorralLlmResponse *
corral_llm_assembler_steal (CorralLlmAssembler *a, GError **error)
{
        CorralLlmResponse *response;

        for (guint i = 0; i < a->pending->len; i++) {
                if (g_array_index (a->pending, Pending, i).finished)
                        continue;
                if (!corral_llm_assembler_finish_block (a, i, error))
                        return NULL;
        }
        response = g_steal_pointer (&a->response);
        a->response = corral_llm_response_new ();
        g_array_set_size (a->pending, 0);
        return response;
}

guint64
corral_llm_json_count (const cJSON *object, const char *name)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (object, name);
        double v;

        if (!cJSON_IsNumber (item))
                return 0;
        v = item->valuedouble;
        if (!(v >= 0 && v < 1e15))
                return 0;
        return (guint64) v;
}

const char *
corral_llm_json_string (const cJSON *object, const char *name)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (object, name);

        return cJSON_IsString (item) ? item->valuestring : NULL;
}
