/* assistant-replay.c — rebuilding a conversation from its transcript, and the conversation rules
 * that the live loop and the replay share.
 *
 * The transcript is read back as untrusted input (it sits in the person's home folder and may
 * have been cut short by a crash): bounded sizes, every field type-checked, a line that does not
 * fit is skipped with a debug message rather than failing the whole session.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-store.h"

#include "corral-agent-client.h"

#include <gio/gio.h>
#include <glib/gi18n-lib.h>
#include <string.h>

#define MAX_TRANSCRIPT_BYTES ((gsize) 256 * 1024 * 1024)
#define MAX_LINE_BYTES ((gsize) 16 * 1024 * 1024)

void
assistant_conv_add_user_text (CorralLlmConversation *conv, const char *text)
{
        CorralLlmMessage *last =
                conv->messages->len ? conv->messages->pdata[conv->messages->len - 1] : NULL;

        if (last && last->role == CORRAL_LLM_ROLE_USER) {
                corral_llm_message_add_block (last, corral_llm_block_new_text (text));
                return;
        }
        corral_llm_conversation_add_user_text (conv, text);
}

static gboolean
has_result_for (const CorralLlmMessage *msg, const char *id)
{
        for (guint i = 0; msg && i < msg->blocks->len; i++) {
                const CorralLlmBlock *b = msg->blocks->pdata[i];
                if (b->type == CORRAL_LLM_BLOCK_TOOL_RESULT && g_strcmp0 (b->id, id) == 0)
                        return TRUE;
        }
        return FALSE;
}

GPtrArray *
assistant_conv_open_tool_uses (const CorralLlmConversation *conv)
{
        GPtrArray *ids = g_ptr_array_new_with_free_func (g_free);
        guint n = conv->messages->len;
        const CorralLlmMessage *assistant = NULL, *results = NULL;

        /* The last assistant message, and the user message of results after it (if any). */
        if (n >= 1 && ((CorralLlmMessage *) conv->messages->pdata[n - 1])->role ==
                              CORRAL_LLM_ROLE_ASSISTANT) {
                assistant = conv->messages->pdata[n - 1];
        } else if (n >= 2) {
                assistant = conv->messages->pdata[n - 2];
                results = conv->messages->pdata[n - 1];
                if (assistant->role != CORRAL_LLM_ROLE_ASSISTANT)
                        return ids;
        }
        for (guint i = 0; assistant && i < assistant->blocks->len; i++) {
                const CorralLlmBlock *b = assistant->blocks->pdata[i];
                if (b->type == CORRAL_LLM_BLOCK_TOOL_USE && !has_result_for (results, b->id))
                        g_ptr_array_add (ids, g_strdup (b->id));
        }
        return ids;
}

static const char *
get_string (const cJSON *obj, const char *key)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        return cJSON_IsString (item) ? item->valuestring : NULL;
}

static CorralLlmBlock *
block_from_json (const cJSON *json)
{
        const char *type = get_string (json, "type");
        const cJSON *input = cJSON_GetObjectItemCaseSensitive (json, "input");

        if (g_strcmp0 (type, "text") == 0 && get_string (json, "text"))
                return corral_llm_block_new_text (get_string (json, "text"));
        if (g_strcmp0 (type, "tool_use") == 0 && get_string (json, "id") &&
            get_string (json, "name") && cJSON_IsObject (input))
                return corral_llm_block_new_tool_use (get_string (json, "id"),
                                                      get_string (json, "name"),
                                                      cJSON_Duplicate (input, TRUE));
        return NULL;
}

static gboolean
replay_response (CorralLlmConversation *conv, const cJSON *rec)
{
        const cJSON *blocks = cJSON_GetObjectItemCaseSensitive (rec, "blocks");
        g_autoptr (CorralLlmResponse) response = corral_llm_response_new ();
        const cJSON *b;

        if (!cJSON_IsArray (blocks))
                return FALSE;
        cJSON_ArrayForEach (b, blocks) {
                CorralLlmBlock *block = block_from_json (b);
                if (!block)
                        return FALSE;
                g_ptr_array_add (response->blocks, block);
        }
        if (response->blocks->len == 0)
                return FALSE;
        corral_llm_conversation_add_response (conv, response);
        return TRUE;
}

static gboolean
replay_record (CorralLlmConversation *conv, const cJSON *rec, guint *tasks)
{
        const char *type = get_string (rec, "type");

        if (g_strcmp0 (type, "user") == 0 && get_string (rec, "text")) {
                assistant_conv_add_user_text (conv, get_string (rec, "text"));
                return TRUE;
        }
        if (g_strcmp0 (type, "response") == 0)
                return replay_response (conv, rec);
        if (g_strcmp0 (type, "tool_result") == 0 && get_string (rec, "tool_use_id") &&
            get_string (rec, "content")) {
                const cJSON *err = cJSON_GetObjectItemCaseSensitive (rec, "is_error");
                const char *outcome = get_string (rec, "outcome");
                static const char *const outcomes[] = { "done", "denied", "failed", "cancelled",
                                                        NULL };

                corral_llm_conversation_add_tool_result (conv, get_string (rec, "tool_use_id"),
                                                         get_string (rec, "content"),
                                                         cJSON_IsTrue (err));
                /* Only the words the loop writes (the file is read back, not trusted). */
                if (outcome && g_strv_contains (outcomes, outcome)) {
                        CorralLlmMessage *last = conv->messages->pdata[conv->messages->len - 1];
                        CorralLlmBlock *block = last->blocks->pdata[last->blocks->len - 1];

                        block->outcome = g_strdup (outcome);
                }
                return TRUE;
        }
        if (g_strcmp0 (type, "task") == 0) {
                if (g_strcmp0 (get_string (rec, "event"), "start") == 0)
                        (*tasks)++;
                return TRUE;
        }
        return g_strcmp0 (type, "session") == 0;
}

gboolean
assistant_store_replay (AssistantStore *store,
                        CorralLlmConversation *conv,
                        guint *ret_tasks,
                        GError **error)
{
        g_autofree char *path =
                g_build_filename (assistant_store_get_dir (store), "transcript.jsonl", NULL);
        g_autoptr (GMappedFile) map = g_mapped_file_new (path, FALSE, error);
        const char *data, *end;
        guint tasks = 0;

        if (!map)
                return FALSE;
        data = g_mapped_file_get_contents (map);
        if (g_mapped_file_get_length (map) > MAX_TRANSCRIPT_BYTES) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                             _ ("The transcript of session “%s” is too large to resume"),
                             assistant_store_get_id (store));
                return FALSE;
        }
        end = data ? data + g_mapped_file_get_length (map) : NULL;
        while (data && data < end) {
                const char *nl = memchr (data, '\n', end - data);
                gsize len = (nl ? nl : end) - data;
                g_autoptr (cJSON) rec = NULL;

                /* A line without its newline was cut short by a crash: skip it. */
                if (nl && len <= MAX_LINE_BYTES)
                        rec = cJSON_ParseWithLength (data, len);
                if (!rec || !replay_record (conv, rec, &tasks))
                        g_debug ("session %s: skipped a transcript line",
                                 assistant_store_get_id (store));
                data = nl ? nl + 1 : end;
        }
        if (ret_tasks)
                *ret_tasks = tasks;
        return TRUE;
}
