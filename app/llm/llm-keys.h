/* llm-keys.h — where a provider's API key and base URL come from.
 *
 * In this order:
 *   1. the environment, for command-line use: ANTHROPIC_API_KEY / OPENAI_API_KEY, and
 *      ANTHROPIC_BASE_URL / OPENAI_BASE_URL for the base URL;
 *   2. the desktop keychain, through keychain-bridge: the secret named "anthropic" or "openai"
 *      (store it with `corralctl secret set anthropic --host api.anthropic.com ...`).
 * Never from a file or the command line, where other users and shell histories can read it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-provider.h"

G_BEGIN_DECLS

/* The keychain secret name for kind: "anthropic" or "openai". */
const char *corral_llm_secret_name (CorralLlmProviderKind kind);
/* (transfer full) (nullable) the base URL the environment sets for kind (ANTHROPIC_BASE_URL,
 * OPENAI_BASE_URL), as corral_llm_api_key_lookup_sync reports it. */
char *corral_llm_env_base_url (CorralLlmProviderKind kind);

/* (transfer full) the key (wipe and free with corral_llm_api_key_free), and in
 * ret_base_url (nullable out; transfer full, NULL for the default) the base URL from the
 * environment. CORRAL_LLM_ERROR_NO_API_KEY when neither source has a key. Blocks on the
 * keychain: call it from a worker thread, or use the async form. */
char *corral_llm_api_key_lookup_sync (CorralLlmProviderKind kind,
                                      char **ret_base_url,
                                      GCancellable *cancellable,
                                      GError **error);
void corral_llm_api_key_lookup_async (CorralLlmProviderKind kind,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data);
char *corral_llm_api_key_lookup_finish (GAsyncResult *result, char **ret_base_url, GError **error);

void corral_llm_api_key_free (char *key);

/* A provider configured from the environment or the keychain; for an OpenAI-compatible
 * server given by OPENAI_BASE_URL, a missing key is not an error (local servers need none).
 * (transfer full) */
CorralLlmProvider *corral_llm_provider_new_for_kind_sync (CorralLlmProviderKind kind,
                                                          GCancellable *cancellable,
                                                          GError **error);

G_END_DECLS
