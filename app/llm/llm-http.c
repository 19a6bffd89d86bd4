/* llm-http.c — what a provider's HTTP status and error body mean.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-http.h"

#include "llm-error.h"
#include "llm-assemble.h"
#include "llm-wire.h"

#include <glib/gi18n.h>
#include <stdlib.h>
#include <string.h>

/* Both APIs put {"error": {"type": ..., "message": ...}} in an error body. */
static void
parse_error_body (const char *body, gsize len, char **ret_type, char **ret_message)
{
        g_autoptr (cJSON) json = body ? cJSON_ParseWithLength (body, len) : NULL;
        const cJSON *err = cJSON_GetObjectItemCaseSensitive (json, "error");

        if (cJSON_IsString (err)) {
                *ret_message = g_strdup (err->valuestring);
                return;
        }
        *ret_type = g_strdup (corral_llm_json_string (err, "type"));
        *ret_message = g_strdup (corral_llm_json_string (err, "message"));
        if (*ret_message == NULL && body != NULL && json == NULL)
                *ret_message = g_strndup (body, len);
}

GError *
corral_llm_http_error (CorralLlmProviderKind kind,
                       guint status,
                       const char *body,
                       gsize body_len,
                       const char *api_key)
{
        g_autofree char *type = NULL, *raw = NULL, *message = NULL;

        parse_error_body (body, body_len, &type, &raw);
        message = corral_llm_clean_server_message (raw ? raw : "", api_key);
        /* The server's words are left out here: some echo part of the key back. Where the key
         * is changed is the caller's to say (the app's Preferences, corralctl's secret). */
        if (status == 401 || status == 403)
                return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH,
                                    _ ("The API key was refused (HTTP %u)."), status);
        if (status == 529 ||
            corral_llm_error_code_for_type (type, -1) == CORRAL_LLM_ERROR_OVERLOADED)
                return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_OVERLOADED,
                                    _ ("The provider is overloaded (HTTP %u); try again in a "
                                       "moment."),
                                    status);
        if (status == 429)
                return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_RATE_LIMITED,
                                    _ ("The provider’s rate limit was reached (HTTP 429): %s"),
                                    message);
        if (status >= 500 || status == 408)
                return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_SERVER,
                                    _ ("The provider had an internal error (HTTP %u): %s"), status,
                                    message);
        if (status >= 400)
                return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_INVALID_REQUEST,
                                    _ ("The provider refused the request (HTTP %u): %s"), status,
                                    message);
        return g_error_new (CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                            _ ("The provider answered with an unexpected HTTP status %u."), status);
}

static gint64
parse_ms (const char *value, gint64 scale)
{
        char *end = NULL;
        double v;

        if (value == NULL)
                return -1;
        v = g_ascii_strtod (value, &end);
        /* An HTTP date (the other form of retry-after) is not worth a clock comparison. */
        if (end == value || *end != '\0' || !(v >= 0 && v < 1e9))
                return -1;
        return (gint64) (v * (double) scale);
}

gint64
corral_llm_http_retry_after_ms (SoupMessageHeaders *headers)
{
        gint64 ms = parse_ms (soup_message_headers_get_one (headers, "retry-after-ms"), 1);

        if (ms >= 0)
                return ms;
        return parse_ms (soup_message_headers_get_one (headers, "retry-after"), 1000);
}

void
corral_llm_http_add_headers (CorralLlmProviderKind kind,
                             SoupMessageHeaders *headers,
                             const char *api_key)
{
        soup_message_headers_replace (headers, "Accept", "text/event-stream");
        soup_message_headers_replace (headers, "User-Agent", "corral/" CORRAL_VERSION);
        if (kind == CORRAL_LLM_PROVIDER_ANTHROPIC) {
                soup_message_headers_replace (headers, "anthropic-version", "2023-06-01");
                if (api_key != NULL)
                        soup_message_headers_replace (headers, "x-api-key", api_key);
        } else if (api_key != NULL) {
                g_autofree char *bearer = g_strconcat ("Bearer ", api_key, NULL);
                soup_message_headers_replace (headers, "Authorization", bearer);
                explicit_bzero (bearer, strlen (bearer));
        }
}

gboolean
corral_llm_http_key_is_valid (const char *api_key)
{
        if (api_key == NULL || *api_key == '\0')
                return FALSE;
        for (const char *c = api_key; *c; c++)
                if (*c <= ' ' || *c >= 0x7f)
                        return FALSE;
        return TRUE;
}
