/* fake-llm-client.h — the client side of the provider tests: a provider pointed at a fake
 * server, a conversation, and one request run to completion with its events recorded.
 * (Tests only; links the real provider code.)
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-llm.h"
#include "fake-llm-server.h"

G_BEGIN_DECLS

#define CORRAL_FAKE_LLM_KEY "sk-test-0123456789abcdef"

typedef struct {
        CorralLlmProviderKind kind;
        CorralFakeLlmServer *server;
        CorralLlmProvider *provider;
        CorralLlmConversation *conv;
        /* what the event callback saw (a RETRY event clears streamed) */
        GString *streamed;
        GPtrArray *tool_starts; /* of char *: tool names */
        guint n_text_events;
        guint n_retries;
        GCancellable *cancel_on_text; /* cancelled at the first text delta when set */
        /* the result of the last run */
        CorralLlmResponse *response;
        GError *error;
        gint64 elapsed_us;
} CorralFakeLlmClient;

/* A server, a provider of kind with the test key, retries 4 × 5 ms (cap 50 ms), idle timeout
 * 5 s, and a conversation with a system prompt and one user message. (transfer full) */
CorralFakeLlmClient *corral_fake_llm_client_new (CorralLlmProviderKind kind);
void corral_fake_llm_client_free (CorralFakeLlmClient *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralFakeLlmClient, corral_fake_llm_client_free)

/* Runs one request; afterwards exactly one of c->response and c->error is set. */
void corral_fake_llm_client_run (CorralFakeLlmClient *c, GCancellable *cancellable);

/* Queue replies in the client's kind: text (nullable) and an optional tool call, with stop
 * "end"/"tool"/"max" or any raw word of the API. */
void corral_fake_llm_client_push_reply (CorralFakeLlmClient *c,
                                        const char *text,
                                        const char *tool_id,
                                        const char *tool_name,
                                        const char *input_json,
                                        const char *stop);

/* (transfer none) what the client sent in request i */
const cJSON *corral_fake_llm_client_sent_body (CorralFakeLlmClient *c, guint i);
const char *corral_fake_llm_client_sent_header (CorralFakeLlmClient *c, guint i, const char *name);

G_END_DECLS
