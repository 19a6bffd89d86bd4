/* llm-keys.c — API keys from the environment or the keychain.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-keys.h"

#include "corral-secret-store.h"
#include "llm-error.h"

#include <glib/gi18n.h>
#include <string.h>

const char *
corral_llm_secret_name (CorralLlmProviderKind kind)
{
        return kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "anthropic" : "openai";
}

static const char *
env_key_name (CorralLlmProviderKind kind)
{
        return kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
}

static const char *
env_base_name (CorralLlmProviderKind kind)
{
        return kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
}

void
corral_llm_api_key_free (char *key)
{
        if (key == NULL)
                return;
        explicit_bzero (key, strlen (key));
        g_free (key);
}

static char *
nonempty_env (const char *name)
{
        const char *v = g_getenv (name);

        return v != NULL && *v != '\0' ? g_strdup (v) : NULL;
}

char *
corral_llm_env_base_url (CorralLlmProviderKind kind)
{
        return nonempty_env (env_base_name (kind));
}

char *
corral_llm_api_key_lookup_sync (CorralLlmProviderKind kind,
                                char **ret_base_url,
                                GCancellable *cancellable,
                                GError **error)
{
        g_autoptr (GError) local = NULL;
        char *key = nonempty_env (env_key_name (kind));
        char *stored;

        if (ret_base_url != NULL)
                *ret_base_url = nonempty_env (env_base_name (kind));
        if (key != NULL)
                return key;
        stored = corral_secret_store_lookup_sync (corral_llm_secret_name (kind), NULL, cancellable,
                                                  &local);
        if (stored != NULL) {
                key = g_strdup (stored);
                corral_secret_value_free (stored);
                return key;
        }
        if (ret_base_url != NULL)
                g_clear_pointer (ret_base_url, g_free);
        if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                g_propagate_error (error, g_steal_pointer (&local));
                return NULL;
        }
        g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NO_API_KEY,
                     _ ("No API key for %s: set %s, or store one in the keychain as the secret "
                        "“%s” (%s)."),
                     kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "Anthropic" : "OpenAI",
                     env_key_name (kind), corral_llm_secret_name (kind),
                     local ? local->message : _ ("not found"));
        return NULL;
}

typedef struct {
        char *key;
        char *base_url;
} LookupResult;

static void
lookup_result_free (LookupResult *r)
{
        corral_llm_api_key_free (r->key);
        g_free (r->base_url);
        g_free (r);
}

static void
lookup_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        LookupResult *r = g_new0 (LookupResult, 1);
        GError *error = NULL;

        r->key = corral_llm_api_key_lookup_sync (GPOINTER_TO_INT (data), &r->base_url, cancellable,
                                                 &error);
        if (r->key == NULL) {
                lookup_result_free (r);
                g_task_return_error (task, error);
                return;
        }
        g_task_return_pointer (task, r, (GDestroyNotify) lookup_result_free);
}

void
corral_llm_api_key_lookup_async (CorralLlmProviderKind kind,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);

        g_task_set_source_tag (task, corral_llm_api_key_lookup_async);
        g_task_set_task_data (task, GINT_TO_POINTER (kind), NULL);
        g_task_run_in_thread (task, lookup_thread);
}

char *
corral_llm_api_key_lookup_finish (GAsyncResult *result, char **ret_base_url, GError **error)
{
        LookupResult *r = g_task_propagate_pointer (G_TASK (result), error);
        char *key;

        if (r == NULL)
                return NULL;
        key = g_steal_pointer (&r->key);
        if (ret_base_url != NULL)
                *ret_base_url = g_steal_pointer (&r->base_url);
        lookup_result_free (r);
        return key;
}

CorralLlmProvider *
corral_llm_provider_new_for_kind_sync (CorralLlmProviderKind kind,
                                       GCancellable *cancellable,
                                       GError **error)
{
        g_autoptr (GError) local = NULL;
        g_autofree char *base_url = NULL;
        char *key = corral_llm_api_key_lookup_sync (kind, &base_url, cancellable, &local);
        CorralLlmProvider *provider;

        if (key == NULL) {
                /* A local OpenAI-compatible server (llama.cpp, Ollama) needs no key. */
                g_autofree char *env_base = nonempty_env (env_base_name (kind));
                if (kind != CORRAL_LLM_PROVIDER_OPENAI || env_base == NULL ||
                    !g_error_matches (local, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NO_API_KEY)) {
                        g_propagate_error (error, g_steal_pointer (&local));
                        return NULL;
                }
                return corral_llm_provider_new (kind, env_base, NULL, error);
        }
        provider = corral_llm_provider_new (kind, base_url, key, error);
        corral_llm_api_key_free (key);
        return provider;
}
