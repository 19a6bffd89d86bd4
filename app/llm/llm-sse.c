/* llm-sse.c — incremental text/event-stream parser with limits.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-sse.h"

#include "llm-error.h"

#include <glib/gi18n.h>
#include <string.h>

struct CorralSseParser {
        gsize max_line;
        gsize max_event;
        CorralSseEventFunc func;
        gpointer user_data;
        GString *line;
        GString *data;
        char *event_type;
        gboolean have_data;
        gboolean after_cr; /* the last byte was CR: a following LF belongs to it */
        gboolean failed;
};

CorralSseParser *
corral_sse_parser_new (gsize max_line, gsize max_event, CorralSseEventFunc func, gpointer user_data)
{
        CorralSseParser *p = g_new0 (CorralSseParser, 1);

        p->max_line = max_line;
        p->max_event = max_event;
        p->func = func;
        p->user_data = user_data;
        p->line = g_string_new (NULL);
        p->data = g_string_new (NULL);
        return p;
}

void
corral_sse_parser_free (CorralSseParser *parser)
{
        if (parser == NULL)
                return;
        g_string_free (parser->line, TRUE);
        g_string_free (parser->data, TRUE);
        g_free (parser->event_type);
        g_free (parser);
}

static gboolean
dispatch (CorralSseParser *p, GError **error)
{
        g_autofree char *type = g_steal_pointer (&p->event_type);
        gboolean have_data = p->have_data;

        p->have_data = FALSE;
        if (!have_data) {
                g_string_truncate (p->data, 0);
                return TRUE;
        }
        /* Every data line added a "\n"; the last one is not part of the data. */
        if (p->data->len > 0)
                g_string_truncate (p->data, p->data->len - 1);
        if (!g_utf8_validate_len (p->data->str, p->data->len, NULL)) {
                g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                             _ ("The provider sent an event that is not valid UTF-8."));
                return FALSE;
        }
        if (!p->func (type && *type ? type : "message", p->data->str, p->data->len, p->user_data,
                      error))
                return FALSE;
        g_string_truncate (p->data, 0);
        return TRUE;
}

static gboolean
process_field (
        CorralSseParser *p, const char *name, const char *value, gsize value_len, GError **error)
{
        if (strcmp (name, "data") == 0) {
                if (p->data->len + value_len + 1 > p->max_event) {
                        g_set_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL,
                                     _ ("The provider sent an event larger than %llu bytes."),
                                     (unsigned long long) p->max_event);
                        return FALSE;
                }
                g_string_append_len (p->data, value, value_len);
                g_string_append_c (p->data, '\n');
                p->have_data = TRUE;
        } else if (strcmp (name, "event") == 0) {
                g_free (p->event_type);
                p->event_type = g_strndup (value, value_len);
        }
        /* "id", "retry" and unknown fields mean nothing to a one-shot request. */
        return TRUE;
}

static gboolean
process_line (CorralSseParser *p, GError **error)
{
        char *line = p->line->str;
        char *colon;
        const char *value = "";
        gsize value_len = 0;

        if (p->line->len == 0)
                return dispatch (p, error);
        if (line[0] == ':')
                return TRUE;
        colon = strchr (line, ':');
        if (colon != NULL) {
                *colon = '\0';
                value = colon + 1;
                if (*value == ' ')
                        value++;
                value_len = p->line->len - (gsize) (value - line);
        }
        return process_field (p, line, value, value_len, error);
}

static gboolean
end_line (CorralSseParser *p, GError **error)
{
        gboolean ok = process_line (p, error);

        g_string_truncate (p->line, 0);
        return ok;
}

static gboolean
fail (CorralSseParser *p, GError **error, const char *message)
{
        p->failed = TRUE;
        g_set_error_literal (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL, message);
        return FALSE;
}

gboolean
corral_sse_parser_feed (CorralSseParser *parser, const char *buf, gsize len, GError **error)
{
        CorralSseParser *p = parser;

        if (p->failed)
                return fail (p, error, _ ("The provider's event stream was already broken."));
        for (gsize i = 0; i < len; i++) {
                char c = buf[i];
                gboolean after_cr = p->after_cr;

                p->after_cr = FALSE;
                if (c == '\n' && after_cr)
                        continue;
                if (c == '\r' || c == '\n') {
                        p->after_cr = (c == '\r');
                        if (!end_line (p, error)) {
                                p->failed = TRUE;
                                return FALSE;
                        }
                        continue;
                }
                if (c == '\0')
                        return fail (p, error,
                                     _ ("The provider's event stream contains a NUL byte."));
                if (p->line->len >= p->max_line)
                        return fail (p, error, _ ("The provider sent a line that is too long."));
                g_string_append_c (p->line, c);
        }
        return TRUE;
}

gboolean
corral_sse_parser_finish (CorralSseParser *parser, gboolean *ret_pending, GError **error)
{
        if (parser->failed)
                return fail (parser, error, _ ("The provider's event stream was already broken."));
        if (ret_pending)
                *ret_pending = parser->line->len > 0 || parser->have_data;
        g_string_truncate (parser->line, 0);
        g_string_truncate (parser->data, 0);
        parser->have_data = FALSE;
        g_clear_pointer (&parser->event_type, g_free);
        return TRUE;
}
