/* corral-agent-error.c — the error domain, and turning the guest's error objects into GErrors.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-agent-private.h"

#include <glib/gi18n-lib.h>

/* clang-format off */
G_DEFINE_QUARK (corral-agent-error-quark, corral_agent_error)
/* clang-format on */

static const struct {
        const char *code;
        CorralAgentError error;
} error_codes[] = {
        { "invalid-request", CORRAL_AGENT_ERROR_INVALID_REQUEST },
        { "unknown-method", CORRAL_AGENT_ERROR_UNKNOWN_METHOD },
        { "not-found", CORRAL_AGENT_ERROR_NOT_FOUND },
        { "exists", CORRAL_AGENT_ERROR_EXISTS },
        { "permission-denied", CORRAL_AGENT_ERROR_PERMISSION_DENIED },
        { "too-large", CORRAL_AGENT_ERROR_TOO_LARGE },
        { "timeout", CORRAL_AGENT_ERROR_TIMEOUT },
        { "busy", CORRAL_AGENT_ERROR_BUSY },
        { "io", CORRAL_AGENT_ERROR_IO },
        { "unsupported-version", CORRAL_AGENT_ERROR_UNSUPPORTED_VERSION },
        { "internal", CORRAL_AGENT_ERROR_INTERNAL },
};

/* Bidirectional overrides and isolates can make a message display as something else. */
static gboolean
is_bidi_control (gunichar c)
{
        return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x200E ||
               c == 0x200F || c == 0x061C;
}

/* Guest text may end up in a terminal, a log or a dialog: keep it short and free of control
 * characters. Invalid UTF-8 (should not get past proto_json_parse) becomes U+FFFD. */
char *
_corral_agent_sanitize (const char *text, gsize max_bytes)
{
        g_autofree char *valid = g_utf8_make_valid (text ? text : "", -1);
        GString *out = g_string_new (NULL);

        for (const char *p = valid; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);

                if (c == '\n' || c == '\t' || c == '\r')
                        c = ' ';
                else if (g_unichar_iscntrl (c) || is_bidi_control (c))
                        continue;
                if (out->len + 6 > max_bytes) {
                        g_string_append (out, "…");
                        break;
                }
                g_string_append_unichar (out, c);
        }
        return g_string_free (out, FALSE);
}

static gboolean
errno_name_ok (const char *name)
{
        gsize len = strlen (name);

        if (len == 0 || len > 16)
                return FALSE;
        for (const char *p = name; *p; p++)
                if (!g_ascii_isupper (*p) && !g_ascii_isdigit (*p))
                        return FALSE;
        return TRUE;
}

GError *
_corral_agent_error_from_json (const cJSON *error)
{
        const char *code = NULL, *message = NULL, *errname = NULL;
        CorralAgentError domain_code = CORRAL_AGENT_ERROR_INTERNAL;
        g_autofree char *text = NULL;
        gboolean known = FALSE;

        if (!cJSON_IsObject (error) || proto_json_get_string (error, "code", 64, &code) < 0)
                return g_error_new (CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL,
                                    _ ("The guest agent sent a malformed error"));
        for (gsize i = 0; i < G_N_ELEMENTS (error_codes); i++) {
                if (g_str_equal (code, error_codes[i].code)) {
                        domain_code = error_codes[i].error;
                        known = TRUE;
                }
        }
        if (proto_json_get_string (error, "message", 0, &message) < 0)
                message = NULL;
        if (proto_json_get_string (error, "errno", 16, &errname) < 0 || !errno_name_ok (errname))
                errname = NULL;

        text = _corral_agent_sanitize (message ? message : code, CORRAL_AGENT_MAX_MESSAGE);
        if (!known) {
                g_autofree char *safe_code = _corral_agent_sanitize (code, 64);

                return g_error_new (CORRAL_AGENT_ERROR, domain_code,
                                    _ ("Guest agent error (unknown code “%s”): %s"), safe_code,
                                    text);
        }
        if (errname)
                return g_error_new (CORRAL_AGENT_ERROR, domain_code, "%s (%s)", text, errname);
        return g_error_new_literal (CORRAL_AGENT_ERROR, domain_code, text);
}

static void
debug_ignore_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;
        cJSON *reply =
                corral_agent_client_call_finish (CORRAL_AGENT_CLIENT (source), result, &error);

        if (error)
                g_debug ("%s: %s", (const char *) user_data, error->message);
        cJSON_Delete (reply);
}

void
_corral_agent_call_ignore (CorralAgentClient *client, const char *method, cJSON *params)
{
        corral_agent_client_call_async (client, method, params, NULL, debug_ignore_cb,
                                        (gpointer) method);
}
