/* llm-provider.h — a streaming client for one LLM provider (Anthropic or OpenAI-compatible).
 *
 * One provider object per configured provider; it may run several requests at once. Each
 * stream_async call sends the conversation as it is at the time of the call (it is serialised
 * at once, so the caller may change it right away), streams the reply, reports text deltas,
 * tool-call starts and retries to the event callback, and completes with the whole response.
 *
 * Transient failures (429, 5xx, 529 / overloaded_error, a refused connection) are retried with
 * exponential backoff and jitter, honouring retry-after-ms / retry-after; 400/401/403/404 are
 * not. A reply that sends no byte for the idle timeout fails with CORRAL_LLM_ERROR_TIMEOUT.
 * Everything runs on the caller's thread-default main context; cancel from that thread.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-conversation.h"
#include "llm-events.h"

#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
        CORRAL_LLM_PROVIDER_ANTHROPIC,
        CORRAL_LLM_PROVIDER_OPENAI,
} CorralLlmProviderKind;

#define CORRAL_LLM_ANTHROPIC_DEFAULT_BASE_URL "https://api.anthropic.com"
#define CORRAL_LLM_OPENAI_DEFAULT_BASE_URL "https://api.openai.com/v1"

#define CORRAL_TYPE_LLM_PROVIDER (corral_llm_provider_get_type ())
G_DECLARE_FINAL_TYPE (CorralLlmProvider, corral_llm_provider, CORRAL, LLM_PROVIDER, GObject)

/* base_url: NULL for the kind's default; api_key: nullable (local OpenAI-compatible servers
 * need none). Fails on a base URL that is not http(s) or a key with characters no HTTP header
 * may carry. (transfer full) */
CorralLlmProvider *corral_llm_provider_new (CorralLlmProviderKind kind,
                                            const char *base_url,
                                            const char *api_key,
                                            GError **error);

CorralLlmProviderKind corral_llm_provider_get_kind (CorralLlmProvider *self);
/* (transfer none) without a trailing slash */
const char *corral_llm_provider_get_base_url (CorralLlmProvider *self);

/* max_attempts counts the first one (1 = never retry). Defaults: 4 attempts, 1000 ms base
 * delay, 60000 ms cap (a retry-after above the cap is cut to it). */
void corral_llm_provider_set_retry (CorralLlmProvider *self,
                                    guint max_attempts,
                                    guint base_delay_ms,
                                    guint max_delay_ms);
/* 0 disables it. Default 120000 ms: models can think for a while before the first token. */
void corral_llm_provider_set_idle_timeout (CorralLlmProvider *self, guint idle_timeout_ms);
void corral_llm_provider_set_limits (CorralLlmProvider *self, const CorralLlmLimits *limits);

/* One cheap request that needs the key (the provider's list of models): TRUE when the
 * provider accepts it; else CORRAL_LLM_ERROR_AUTH for a refused key, or why it could not be
 * checked (NETWORK, TIMEOUT, SERVER...). Never retried; at most 20 s. */
void corral_llm_provider_check_key_async (CorralLlmProvider *self,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback,
                                          gpointer user_data);
gboolean corral_llm_provider_check_key_finish (CorralLlmProvider *self,
                                               GAsyncResult *result,
                                               GError **error);

/* event_func (nullable) is called for each event until the request completes; notify frees
 * event_data after the last call. */
void corral_llm_provider_stream_async (CorralLlmProvider *self,
                                       const CorralLlmConversation *conv,
                                       CorralLlmEventFunc event_func,
                                       gpointer event_data,
                                       GDestroyNotify event_data_notify,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
/* (transfer full) */
CorralLlmResponse *
corral_llm_provider_stream_finish (CorralLlmProvider *self, GAsyncResult *result, GError **error);

G_END_DECLS
