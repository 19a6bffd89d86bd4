/* llm-wire.h — one provider's wire format as a function table (private to app/llm).
 *
 * The provider object does HTTP, retries and timeouts; a wire builds the request body and
 * decodes the SSE events of the reply. Both are plain code over bytes, so unit tests and the
 * fuzz target drive them without a network.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-conversation.h"
#include "llm-events.h"
#include "corral-cjson.h"

G_BEGIN_DECLS

/* Private: other modules (vmm) declare the same cleanup in their public headers. */
typedef struct {
        const char *path; /* appended to the base URL */
        char *(*build_body) (const CorralLlmConversation *conv, GError **error);
        gpointer (*decoder_new) (const CorralLlmLimits *limits,
                                 CorralLlmEventFunc func,
                                 gpointer user_data);
        gboolean (*decoder_event) (gpointer decoder,
                                   const char *event_type,
                                   const char *data,
                                   gsize len,
                                   GError **error);
        /* (transfer full) the response, or an error when the stream ended too early. */
        CorralLlmResponse *(*decoder_finish) (gpointer decoder, GError **error);
        void (*decoder_free) (gpointer decoder);
} CorralLlmWire;

/* Anthropic Messages API (llm-anthropic.c) */
char *corral_llm_anthropic_build_body (const CorralLlmConversation *conv, GError **error);
gpointer corral_llm_anthropic_decoder_new (const CorralLlmLimits *limits,
                                           CorralLlmEventFunc func,
                                           gpointer user_data);
gboolean corral_llm_anthropic_decoder_event (
        gpointer decoder, const char *event_type, const char *data, gsize len, GError **error);
CorralLlmResponse *corral_llm_anthropic_decoder_finish (gpointer decoder, GError **error);
void corral_llm_anthropic_decoder_free (gpointer decoder);
extern const CorralLlmWire corral_llm_anthropic_wire;

/* OpenAI-compatible chat completions (llm-openai.c) */
char *corral_llm_openai_build_body (const CorralLlmConversation *conv, GError **error);
gpointer corral_llm_openai_decoder_new (const CorralLlmLimits *limits,
                                        CorralLlmEventFunc func,
                                        gpointer user_data);
gboolean corral_llm_openai_decoder_event (
        gpointer decoder, const char *event_type, const char *data, gsize len, GError **error);
CorralLlmResponse *corral_llm_openai_decoder_finish (gpointer decoder, GError **error);
void corral_llm_openai_decoder_free (gpointer decoder);
extern const CorralLlmWire corral_llm_openai_wire;

/* Shared helpers (llm-json.c) */
/* Adds a string member, made valid UTF-8 first (tool output may be any bytes). */
void corral_llm_json_add_text (cJSON *object, const char *name, const char *text);
/* (transfer full) data parsed as one JSON object, or a PROTOCOL error naming what. */
cJSON *corral_llm_json_parse_event (const char *data, gsize len, const char *what, GError **error);
/* The CORRAL_LLM_ERROR code for an API error type such as "overloaded_error". */
int corral_llm_error_code_for_type (const char *type, int fallback);
/* (transfer full) a server-supplied message made safe to show: valid UTF-8, no control
 * characters, at most 300 characters (marked with "…" when cut), and never the key. */
char *corral_llm_clean_server_message (const char *message, const char *api_key);

G_END_DECLS
