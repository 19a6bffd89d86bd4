/* llm-conversation.h — the provider-neutral conversation model and response.
 *
 * A conversation is what the assistant loop keeps between turns: model, max_tokens, a system prompt,
 * the tools offered and the messages so far. Each message has a role and content blocks (text,
 * tool_use, tool_result), the shape of the Anthropic Messages API; the OpenAI wire code maps it
 * to chat completions. The structs are readable by callers; change them through the functions.
 *
 * One turn of the loop:
 *   corral_llm_conversation_add_user_text (conv, "Tidy my folder");
 *   ... corral_llm_provider_stream_async (provider, conv, ...) → CorralLlmResponse *r
 *   corral_llm_conversation_add_response (conv, r);
 *   if (r->stop_reason == CORRAL_LLM_STOP_TOOL_USE)
 *           for each tool_use block: run it, then
 *           corral_llm_conversation_add_tool_result (conv, block->id, output, is_error);
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
        CORRAL_LLM_ROLE_USER,
        CORRAL_LLM_ROLE_ASSISTANT,
} CorralLlmRole;

typedef enum {
        CORRAL_LLM_BLOCK_TEXT,
        CORRAL_LLM_BLOCK_TOOL_USE,
        CORRAL_LLM_BLOCK_TOOL_RESULT,
} CorralLlmBlockType;

typedef struct {
        CorralLlmBlockType type;
        char *text; /* TEXT: the text; TOOL_RESULT: the tool's output */
        char *id; /* TOOL_USE: the call id; TOOL_RESULT: the tool_use_id it answers */
        char *name; /* TOOL_USE: the tool's name */
        cJSON *input; /* TOOL_USE: the arguments, always a JSON object */
        gboolean is_error; /* TOOL_RESULT */
        /* TOOL_RESULT of a question to the person (nullable): "done", "denied", "failed" or
         * "cancelled", for the chat to say again when the task is reopened. Kept in the
         * transcript, never sent to the provider. */
        char *outcome;
        /* TOOL_RESULT (nullable): a picture with the output (the computer tool's screenshot),
         * "image/png" or "image/jpeg". */
        char *image_media_type;
        GBytes *image;
} CorralLlmBlock;

typedef struct {
        CorralLlmRole role;
        GPtrArray *blocks; /* of CorralLlmBlock, never empty once sent */
} CorralLlmMessage;

typedef struct {
        char *name;
        char *description;
        cJSON *input_schema; /* a JSON Schema object */
        /* nullable: a tool the provider defines (Anthropic's "computer_20250124",
         * "computer_20251124"), sent as its type and the screen's size where the provider has
         * it; elsewhere a function tool with the name, description and schema above. */
        char *hosted_type;
        guint display_width, display_height;
} CorralLlmTool;

typedef struct {
        char *model;
        guint max_tokens;
        char *system; /* nullable */
        GPtrArray *tools; /* of CorralLlmTool */
        GPtrArray *messages; /* of CorralLlmMessage */
} CorralLlmConversation;

typedef enum {
        CORRAL_LLM_STOP_END_TURN,
        CORRAL_LLM_STOP_TOOL_USE,
        CORRAL_LLM_STOP_MAX_TOKENS,
        CORRAL_LLM_STOP_STOP_SEQUENCE,
        CORRAL_LLM_STOP_REFUSAL,
        CORRAL_LLM_STOP_PAUSE, /* pause_turn: send the conversation again to continue */
        CORRAL_LLM_STOP_OTHER, /* anything else; see stop_reason_raw */
} CorralLlmStopReason;

typedef struct {
        guint64 input_tokens;
        guint64 output_tokens;
        guint64 cache_read_input_tokens;
        guint64 cache_creation_input_tokens;
} CorralLlmUsage;

typedef struct {
        char *id; /* nullable: the provider's message id */
        char *model; /* nullable: the model that answered */
        GPtrArray *blocks; /* of CorralLlmBlock: TEXT and TOOL_USE only */
        CorralLlmStopReason stop_reason;
        char *stop_reason_raw; /* nullable: the provider's own word */
        CorralLlmUsage usage;
} CorralLlmResponse;

/* Blocks. (transfer full); strings are copied, input is taken. */
CorralLlmBlock *corral_llm_block_new_text (const char *text);
CorralLlmBlock *corral_llm_block_new_tool_use (const char *id, const char *name, cJSON *input);
CorralLlmBlock *
corral_llm_block_new_tool_result (const char *tool_use_id, const char *content, gboolean is_error);
/* The same with a picture (media_type "image/png" or "image/jpeg"; image is referenced). */
CorralLlmBlock *corral_llm_block_new_tool_result_image (const char *tool_use_id,
                                                        const char *content,
                                                        gboolean is_error,
                                                        const char *media_type,
                                                        GBytes *image);
CorralLlmBlock *corral_llm_block_copy (const CorralLlmBlock *block);
void corral_llm_block_free (CorralLlmBlock *block);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLlmBlock, corral_llm_block_free)

CorralLlmMessage *corral_llm_message_new (CorralLlmRole role);
/* Takes block. */
void corral_llm_message_add_block (CorralLlmMessage *message, CorralLlmBlock *block);
void corral_llm_message_free (CorralLlmMessage *message);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLlmMessage, corral_llm_message_free)

/* (transfer full) */
CorralLlmConversation *corral_llm_conversation_new (const char *model, guint max_tokens);
void corral_llm_conversation_free (CorralLlmConversation *conv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLlmConversation, corral_llm_conversation_free)

void corral_llm_conversation_set_system (CorralLlmConversation *conv, const char *system);
/* Copies the strings; takes input_schema (NULL means an object with no properties). */
void corral_llm_conversation_add_tool (CorralLlmConversation *conv,
                                       const char *name,
                                       const char *description,
                                       cJSON *input_schema);
/* The computer tool: hosted_type is Anthropic's ("computer_20250124", or "computer_20251124"
 * with zoom), the screen the model sees is width x height; description and input_schema
 * (taken) describe the same actions as a function tool to other providers. */
void corral_llm_conversation_add_computer_tool (CorralLlmConversation *conv,
                                                const char *hosted_type,
                                                guint width,
                                                guint height,
                                                const char *description,
                                                cJSON *input_schema);
/* The anthropic-beta header the conversation's tools need, or NULL. */
const char *corral_llm_conversation_get_beta (const CorralLlmConversation *conv);
/* Takes message. */
void corral_llm_conversation_add_message (CorralLlmConversation *conv, CorralLlmMessage *message);
void corral_llm_conversation_add_user_text (CorralLlmConversation *conv, const char *text);
/* Appends to the last message if it is a user message holding tool results, so that every
 * result of one assistant turn travels in one user message (the API requires that). */
void corral_llm_conversation_add_tool_result (CorralLlmConversation *conv,
                                              const char *tool_use_id,
                                              const char *content,
                                              gboolean is_error);
/* The same with a picture (the computer tool's screenshot; image is referenced). */
void corral_llm_conversation_add_tool_result_image (CorralLlmConversation *conv,
                                                    const char *tool_use_id,
                                                    const char *content,
                                                    gboolean is_error,
                                                    const char *media_type,
                                                    GBytes *image);
/* Appends the response's blocks (copied) as an assistant message. */
void corral_llm_conversation_add_response (CorralLlmConversation *conv,
                                           const CorralLlmResponse *response);

CorralLlmResponse *corral_llm_response_new (void);
void corral_llm_response_free (CorralLlmResponse *response);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLlmResponse, corral_llm_response_free)
/* (transfer full) all TEXT blocks concatenated. */
char *corral_llm_response_get_text (const CorralLlmResponse *response);

const char *corral_llm_stop_reason_to_string (CorralLlmStopReason reason);

G_END_DECLS
