/* llm-provider.c — the provider object: configuration, and stream_async / _finish.
 *
 * The life of one request (attempts, reads, retries) is in llm-request.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-provider-private.h"

#include "llm-error.h"
#include "llm-http.h"

#include <glib/gi18n.h>
#include <string.h>

G_DEFINE_FINAL_TYPE (CorralLlmProvider, corral_llm_provider, G_TYPE_OBJECT)

static void
corral_llm_provider_finalize (GObject *object)
{
        CorralLlmProvider *self = CORRAL_LLM_PROVIDER (object);

        if (self->api_key != NULL)
                explicit_bzero (self->api_key, strlen (self->api_key));
        g_clear_pointer (&self->api_key, g_free);
        g_clear_pointer (&self->base_url, g_free);
        g_clear_object (&self->session);
        g_clear_pointer (&self->managed, corral_policy_unref);
        G_OBJECT_CLASS (corral_llm_provider_parent_class)->finalize (object);
}

static void
corral_llm_provider_class_init (CorralLlmProviderClass *klass)
{
        G_OBJECT_CLASS (klass)->finalize = corral_llm_provider_finalize;
}

static void
corral_llm_provider_init (CorralLlmProvider *self)
{
        self->max_attempts = 4;
        self->base_delay_ms = 1000;
        self->max_delay_ms = 60000;
        self->idle_timeout_ms = 120000;
        corral_llm_limits_init_default (&self->limits);
        /* Our own idle timer covers silence; libsoup's would fail long generations. */
        self->session = soup_session_new_with_options ("timeout", 0, "user-agent",
                                                       "corral/" CORRAL_VERSION, NULL);
}

static gboolean
check_base_url (const char *base_url, GError **error)
{
        g_autoptr (GUri) uri = g_uri_parse (base_url, G_URI_FLAGS_NONE, NULL);
        const char *scheme = uri ? g_uri_get_scheme (uri) : NULL;

        if (uri == NULL || g_uri_get_host (uri) == NULL ||
            (g_strcmp0 (scheme, "http") != 0 && g_strcmp0 (scheme, "https") != 0)) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST,
                             _ ("The provider address “%s” is not an http or https URL."),
                             base_url);
                return FALSE;
        }
        return TRUE;
}

/* Two base URLs name the same server when they differ only by trailing slashes. */
static gboolean
same_base_url (const char *a, const char *b)
{
        gsize la = strlen (a), lb = strlen (b);

        while (la > 0 && a[la - 1] == '/')
                la--;
        while (lb > 0 && b[lb - 1] == '/')
                lb--;
        return la == lb && strncmp (a, b, la) == 0;
}

/* The organisation's providers.allowed and providers.baseUrl (locked; corral-policy.h): every
 * provider object is made here, for the app, corralctl and the key check alike. */
static gboolean
provider_allowed (CorralPolicy *managed,
                  CorralLlmProviderKind kind,
                  const char *base_url,
                  GError **error)
{
        const char *fixed = NULL;
        CorralPolicySetting how;

        if (!corral_policy_allows (managed, "providers.allowed",
                                   kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "anthropic"
                                                                         : "openai-compatible",
                                   error))
                return FALSE;
        if (corral_policy_get_string (managed, "providers.baseUrl", &fixed, &how) && how.locked &&
            !same_base_url (fixed, base_url)) {
                g_set_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED,
                             _ ("The assistant may only use the model server at %s (set by your "
                                "organisation); change the server address in Preferences."),
                             fixed);
                return FALSE;
        }
        return TRUE;
}

CorralLlmProvider *
corral_llm_provider_new (CorralLlmProviderKind kind,
                         const char *base_url,
                         const char *api_key,
                         GError **error)
{
        g_autoptr (CorralLlmProvider) self = NULL;
        g_autoptr (CorralPolicy) managed = NULL;
        gboolean anthropic = kind == CORRAL_LLM_PROVIDER_ANTHROPIC;

        if (base_url == NULL || *base_url == '\0')
                base_url = anthropic ? CORRAL_LLM_ANTHROPIC_DEFAULT_BASE_URL
                                     : CORRAL_LLM_OPENAI_DEFAULT_BASE_URL;
        if (!check_base_url (base_url, error))
                return NULL;
        if (api_key != NULL && !corral_llm_http_key_is_valid (api_key)) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH,
                             _ ("The API key contains characters that an API key cannot have "
                                "(spaces, line breaks or non-ASCII)."));
                return NULL;
        }
        if (!(managed = corral_policy_load_default (error)) ||
            !provider_allowed (managed, kind, base_url, error))
                return NULL;
        self = g_object_new (CORRAL_TYPE_LLM_PROVIDER, NULL);
        self->managed = g_steal_pointer (&managed);
        self->kind = kind;
        self->wire = anthropic ? &corral_llm_anthropic_wire : &corral_llm_openai_wire;
        self->base_url = g_strdup (base_url);
        while (g_str_has_suffix (self->base_url, "/"))
                self->base_url[strlen (self->base_url) - 1] = '\0';
        self->api_key = g_strdup (api_key);
        return g_steal_pointer (&self);
}

CorralLlmProviderKind
corral_llm_provider_get_kind (CorralLlmProvider *self)
{
        return self->kind;
}

const char *
corral_llm_provider_get_base_url (CorralLlmProvider *self)
{
        return self->base_url;
}

void
corral_llm_provider_set_retry (CorralLlmProvider *self,
                               guint max_attempts,
                               guint base_delay_ms,
                               guint max_delay_ms)
{
        g_return_if_fail (CORRAL_IS_LLM_PROVIDER (self));
        self->max_attempts = MAX (max_attempts, 1);
        self->base_delay_ms = base_delay_ms;
        self->max_delay_ms = max_delay_ms;
}

void
corral_llm_provider_set_idle_timeout (CorralLlmProvider *self, guint idle_timeout_ms)
{
        g_return_if_fail (CORRAL_IS_LLM_PROVIDER (self));
        self->idle_timeout_ms = idle_timeout_ms;
}

void
corral_llm_provider_set_limits (CorralLlmProvider *self, const CorralLlmLimits *limits)
{
        g_return_if_fail (CORRAL_IS_LLM_PROVIDER (self) && limits != NULL);
        self->limits = *limits;
}

static gboolean
model_allowed (CorralLlmProvider *self, const CorralLlmConversation *conv, GError **error)
{
        if (!self->managed)
                return TRUE;
        return corral_policy_allows (self->managed, "providers.allowedModels",
                                     conv->model ? conv->model : "", error);
}

void
corral_llm_provider_stream_async (CorralLlmProvider *self,
                                  const CorralLlmConversation *conv,
                                  CorralLlmEventFunc event_func,
                                  gpointer event_data,
                                  GDestroyNotify event_data_notify,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) body = NULL;
        CorralLlmRequest *req;
        char *json;

        g_return_if_fail (CORRAL_IS_LLM_PROVIDER (self));
        g_return_if_fail (conv != NULL);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_llm_provider_stream_async);
        /* providers.allowedModels: a model the organisation did not allow is never asked. */
        json = model_allowed (self, conv, &error) ? self->wire->build_body (conv, &error) : NULL;
        if (json == NULL) {
                if (event_data_notify != NULL)
                        event_data_notify (event_data);
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        body = g_bytes_new_take (json, strlen (json));
        req = corral_llm_request_new (self, body, event_func, event_data, event_data_notify,
                                      cancellable);
        /* Anthropic's computer tool is a beta: its header goes with the request. */
        req->beta = g_strdup (corral_llm_conversation_get_beta (conv));
        g_task_set_task_data (task, req, (GDestroyNotify) corral_llm_request_free);
        corral_llm_request_start (g_steal_pointer (&task));
}

CorralLlmResponse *
corral_llm_provider_stream_finish (CorralLlmProvider *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
