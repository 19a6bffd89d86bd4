/* llm-conversation.c — the provider-neutral conversation model.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-conversation.h"

static CorralLlmBlock *
block_new (CorralLlmBlockType type)
{
        CorralLlmBlock *block = g_new0 (CorralLlmBlock, 1);

        block->type = type;
        return block;
}

CorralLlmBlock *
corral_llm_block_new_text (const char *text)
{
        CorralLlmBlock *block = block_new (CORRAL_LLM_BLOCK_TEXT);

        block->text = g_strdup (text ? text : "");
        return block;
}

CorralLlmBlock *
corral_llm_block_new_tool_use (const char *id, const char *name, cJSON *input)
{
        CorralLlmBlock *block = block_new (CORRAL_LLM_BLOCK_TOOL_USE);

        block->id = g_strdup (id ? id : "");
        block->name = g_strdup (name ? name : "");
        block->input = input ? input : cJSON_CreateObject ();
        return block;
}

CorralLlmBlock *
corral_llm_block_new_tool_result (const char *tool_use_id, const char *content, gboolean is_error)
{
        CorralLlmBlock *block = block_new (CORRAL_LLM_BLOCK_TOOL_RESULT);

        block->id = g_strdup (tool_use_id ? tool_use_id : "");
        block->text = g_strdup (content ? content : "");
        block->is_error = is_error;
        return block;
}

CorralLlmBlock *
corral_llm_block_new_tool_result_image (const char *tool_use_id,
                                        const char *content,
                                        gboolean is_error,
                                        const char *media_type,
                                        GBytes *image)
{
        CorralLlmBlock *block = corral_llm_block_new_tool_result (tool_use_id, content, is_error);

        if (image && media_type) {
                block->image = g_bytes_ref (image);
                block->image_media_type = g_strdup (media_type);
        }
        return block;
}

CorralLlmBlock *
corral_llm_block_copy (const CorralLlmBlock *block)
{
        CorralLlmBlock *copy = block_new (block->type);

        copy->text = g_strdup (block->text);
        copy->id = g_strdup (block->id);
        copy->name = g_strdup (block->name);
        copy->input = block->input ? cJSON_Duplicate (block->input, TRUE) : NULL;
        copy->is_error = block->is_error;
        copy->outcome = g_strdup (block->outcome);
        copy->image_media_type = g_strdup (block->image_media_type);
        copy->image = block->image ? g_bytes_ref (block->image) : NULL;
        return copy;
}

void
corral_llm_block_free (CorralLlmBlock *block)
{
        if (block == NULL)
                return;
        g_free (block->text);
        g_free (block->id);
        g_free (block->name);
        g_free (block->outcome);
        g_free (block->image_media_type);
        g_clear_pointer (&block->image, g_bytes_unref);
        cJSON_Delete (block->input);
        g_free (block);
}

CorralLlmMessage *
corral_llm_message_new (CorralLlmRole role)
{
        CorralLlmMessage *message = g_new0 (CorralLlmMessage, 1);

        message->role = role;
        message->blocks = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_llm_block_free);
        return message;
}

void
corral_llm_message_add_block (CorralLlmMessage *message, CorralLlmBlock *block)
{
        g_return_if_fail (message != NULL && block != NULL);
        g_ptr_array_add (message->blocks, block);
}

void
corral_llm_message_free (CorralLlmMessage *message)
{
        if (message == NULL)
                return;
        g_ptr_array_unref (message->blocks);
        g_free (message);
}

static void
tool_free (CorralLlmTool *tool)
{
        g_free (tool->name);
        g_free (tool->description);
        g_free (tool->hosted_type);
        cJSON_Delete (tool->input_schema);
        g_free (tool);
}

CorralLlmConversation *
corral_llm_conversation_new (const char *model, guint max_tokens)
{
        CorralLlmConversation *conv;

        g_return_val_if_fail (model != NULL, NULL);
        conv = g_new0 (CorralLlmConversation, 1);
        conv->model = g_strdup (model);
        conv->max_tokens = max_tokens;
        conv->tools = g_ptr_array_new_with_free_func ((GDestroyNotify) tool_free);
        conv->messages = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_llm_message_free);
        return conv;
}

void
corral_llm_conversation_free (CorralLlmConversation *conv)
{
        if (conv == NULL)
                return;
        g_free (conv->model);
        g_free (conv->system);
        g_ptr_array_unref (conv->tools);
        g_ptr_array_unref (conv->messages);
        g_free (conv);
}

void
corral_llm_conversation_set_system (CorralLlmConversation *conv, const char *system)
{
        g_free (conv->system);
        conv->system = g_strdup (system);
}

void
corral_llm_conversation_add_tool (CorralLlmConversation *conv,
                                  const char *name,
                                  const char *description,
                                  cJSON *input_schema)
{
        CorralLlmTool *tool;

        g_return_if_fail (name != NULL);
        tool = g_new0 (CorralLlmTool, 1);
        tool->name = g_strdup (name);
        tool->description = g_strdup (description ? description : "");
        if (input_schema == NULL) {
                input_schema = cJSON_CreateObject ();
                cJSON_AddStringToObject (input_schema, "type", "object");
                cJSON_AddItemToObject (input_schema, "properties", cJSON_CreateObject ());
        }
        tool->input_schema = input_schema;
        g_ptr_array_add (conv->tools, tool);
}

void
corral_llm_conversation_add_computer_tool (CorralLlmConversation *conv,
                                           const char *hosted_type,
                                           guint width,
                                           guint height,
                                           const char *description,
                                           cJSON *input_schema)
{
        CorralLlmTool *tool;

        g_return_if_fail (hosted_type != NULL && width > 0 && height > 0);
        corral_llm_conversation_add_tool (conv, "computer", description, input_schema);
        tool = g_ptr_array_index (conv->tools, conv->tools->len - 1);
        tool->hosted_type = g_strdup (hosted_type);
        tool->display_width = width;
        tool->display_height = height;
}

const char *
corral_llm_conversation_get_beta (const CorralLlmConversation *conv)
{
        for (guint i = 0; i < conv->tools->len; i++) {
                const CorralLlmTool *t = g_ptr_array_index (conv->tools, i);

                if (g_strcmp0 (t->hosted_type, "computer_20250124") == 0)
                        return "computer-use-2025-01-24";
                if (g_strcmp0 (t->hosted_type, "computer_20251124") == 0)
                        return "computer-use-2025-11-24";
        }
        return NULL;
}

void
corral_llm_conversation_add_message (CorralLlmConversation *conv, CorralLlmMessage *message)
{
        g_return_if_fail (conv != NULL && message != NULL);
        g_ptr_array_add (conv->messages, message);
}

void
corral_llm_conversation_add_user_text (CorralLlmConversation *conv, const char *text)
{
        CorralLlmMessage *message = corral_llm_message_new (CORRAL_LLM_ROLE_USER);

        corral_llm_message_add_block (message, corral_llm_block_new_text (text));
        corral_llm_conversation_add_message (conv, message);
}

static CorralLlmMessage *
last_tool_result_message (CorralLlmConversation *conv)
{
        CorralLlmMessage *last;

        if (conv->messages->len == 0)
                return NULL;
        last = g_ptr_array_index (conv->messages, conv->messages->len - 1);
        if (last->role != CORRAL_LLM_ROLE_USER || last->blocks->len == 0)
                return NULL;
        for (guint i = 0; i < last->blocks->len; i++) {
                CorralLlmBlock *b = g_ptr_array_index (last->blocks, i);
                if (b->type != CORRAL_LLM_BLOCK_TOOL_RESULT)
                        return NULL;
        }
        return last;
}

void
corral_llm_conversation_add_tool_result (CorralLlmConversation *conv,
                                         const char *tool_use_id,
                                         const char *content,
                                         gboolean is_error)
{
        CorralLlmMessage *message = last_tool_result_message (conv);

        if (message == NULL) {
                message = corral_llm_message_new (CORRAL_LLM_ROLE_USER);
                corral_llm_conversation_add_message (conv, message);
        }
        corral_llm_message_add_block (
                message, corral_llm_block_new_tool_result (tool_use_id, content, is_error));
}

void
corral_llm_conversation_add_tool_result_image (CorralLlmConversation *conv,
                                               const char *tool_use_id,
                                               const char *content,
                                               gboolean is_error,
                                               const char *media_type,
                                               GBytes *image)
{
        CorralLlmMessage *message = last_tool_result_message (conv);

        if (message == NULL) {
                message = corral_llm_message_new (CORRAL_LLM_ROLE_USER);
                corral_llm_conversation_add_message (conv, message);
        }
        corral_llm_message_add_block (
                message, corral_llm_block_new_tool_result_image (tool_use_id, content, is_error,
                                                                 media_type, image));
}

void
corral_llm_conversation_add_response (CorralLlmConversation *conv,
                                      const CorralLlmResponse *response)
{
        CorralLlmMessage *message = corral_llm_message_new (CORRAL_LLM_ROLE_ASSISTANT);

        for (guint i = 0; i < response->blocks->len; i++)
                corral_llm_message_add_block (
                        message, corral_llm_block_copy (g_ptr_array_index (response->blocks, i)));
        corral_llm_conversation_add_message (conv, message);
}

CorralLlmResponse *
corral_llm_response_new (void)
{
        CorralLlmResponse *response = g_new0 (CorralLlmResponse, 1);

        response->blocks = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_llm_block_free);
        response->stop_reason = CORRAL_LLM_STOP_OTHER;
        return response;
}

void
corral_llm_response_free (CorralLlmResponse *response)
{
        if (response == NULL)
                return;
        g_free (response->id);
        g_free (response->model);
        g_free (response->stop_reason_raw);
        g_ptr_array_unref (response->blocks);
        g_free (response);
}

char *
corral_llm_response_get_text (const CorralLlmResponse *response)
{
        GString *s = g_string_new (NULL);

        for (guint i = 0; i < response->blocks->len; i++) {
                CorralLlmBlock *b = g_ptr_array_index (response->blocks, i);
                if (b->type == CORRAL_LLM_BLOCK_TEXT)
                        g_string_append (s, b->text);
        }
        return g_string_free (s, FALSE);
}

const char *
corral_llm_stop_reason_to_string (CorralLlmStopReason reason)
{
        switch (reason) {
        case CORRAL_LLM_STOP_END_TURN:
                return "end_turn";
        case CORRAL_LLM_STOP_TOOL_USE:
                return "tool_use";
        case CORRAL_LLM_STOP_MAX_TOKENS:
                return "max_tokens";
        case CORRAL_LLM_STOP_STOP_SEQUENCE:
                return "stop_sequence";
        case CORRAL_LLM_STOP_REFUSAL:
                return "refusal";
        case CORRAL_LLM_STOP_PAUSE:
                return "pause_turn";
        case CORRAL_LLM_STOP_OTHER:
        default:
                return "other";
        }
}
