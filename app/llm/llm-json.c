/* llm-json.c — JSON helpers shared by the wire formats.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-wire.h"

#include "llm-error.h"

#include <glib/gi18n.h>
#include <string.h>

#define MAX_SERVER_MESSAGE_CHARS 300

void
corral_llm_json_add_text (cJSON *object, const char *name, const char *text)
{
        g_autofree char *valid = g_utf8_make_valid (text ? text : "", -1);

        cJSON_AddStringToObject (object, name, valid);
}

cJSON *
corral_llm_json_parse_event (const char *data, gsize len, const char *what, GError **error)
{
        cJSON *json = cJSON_ParseWithLength (data, len);

        if (!cJSON_IsObject (json)) {
                cJSON_Delete (json);
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent a “%s” event that is not a JSON object."), what);
                return NULL;
        }
        return json;
}

int
corral_llm_error_code_for_type (const char *type, int fallback)
{
        static const struct {
                const char *type;
                CorralLlmError code;
        } map[] = {
                { "overloaded_error", CORRAL_LLM_ERROR_OVERLOADED },
                { "rate_limit_error", CORRAL_LLM_ERROR_RATE_LIMITED },
                { "rate_limit_exceeded", CORRAL_LLM_ERROR_RATE_LIMITED },
                { "api_error", CORRAL_LLM_ERROR_SERVER },
                { "server_error", CORRAL_LLM_ERROR_SERVER },
                { "authentication_error", CORRAL_LLM_ERROR_AUTH },
                { "permission_error", CORRAL_LLM_ERROR_AUTH },
                { "invalid_request_error", CORRAL_LLM_ERROR_INVALID_REQUEST },
                { "not_found_error", CORRAL_LLM_ERROR_INVALID_REQUEST },
                { "request_too_large", CORRAL_LLM_ERROR_INVALID_REQUEST },
        };

        for (gsize i = 0; type != NULL && i < G_N_ELEMENTS (map); i++)
                if (strcmp (map[i].type, type) == 0)
                        return map[i].code;
        return fallback;
}

static void
redact (GString *s, const char *secret)
{
        gsize n = secret ? strlen (secret) : 0;
        char *hit;

        /* A short "key" (a local server's dummy) would redact ordinary words. */
        if (n < 8)
                return;
        while ((hit = strstr (s->str, secret)) != NULL) {
                gsize pos = (gsize) (hit - s->str);
                g_string_erase (s, (gssize) pos, (gssize) n);
                g_string_insert (s, (gssize) pos, "[redacted]");
        }
}

char *
corral_llm_clean_server_message (const char *message, const char *api_key)
{
        g_autofree char *made_valid = g_utf8_make_valid (message ? message : "", -1);
        g_autoptr (GString) valid = g_string_new (made_valid);
        GString *s = g_string_new (NULL);
        glong n = 0;

        /* Redact before cutting, so that no prefix of the key survives the cut. */
        redact (valid, api_key);
        for (const char *c = valid->str; *c; c = g_utf8_next_char (c)) {
                gunichar u = g_utf8_get_char (c);
                if (n++ >= MAX_SERVER_MESSAGE_CHARS) {
                        g_string_append (s, "…");
                        break;
                }
                g_string_append_unichar (s, g_unichar_iscntrl (u) ? ' ' : u);
        }
        return g_string_free (s, FALSE);
}
