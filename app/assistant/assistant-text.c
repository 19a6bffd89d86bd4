/* assistant-text.c — text helpers of the agent's tools.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-text.h"

#include <gio/gio.h>
#include <glib/gi18n-lib.h>
#include <string.h>

void
assistant_capture_init (AssistantCapture *capture, gsize limit)
{
        capture->limit = limit;
        capture->head = g_byte_array_new ();
        capture->tail = g_byte_array_new ();
        capture->total = 0;
}

void
assistant_capture_add (AssistantCapture *capture, const guint8 *data, gsize len)
{
        gsize room = capture->limit - MIN (capture->head->len, capture->limit);
        gsize to_head = MIN (room, len);

        capture->total += len;
        g_byte_array_append (capture->head, data, (guint) to_head);
        data += to_head;
        len -= to_head;
        if (len == 0)
                return;
        /* Only the last `limit` bytes matter: skip what would be dropped anyway. */
        if (len > capture->limit) {
                g_byte_array_set_size (capture->tail, 0);
                data += len - capture->limit;
                len = capture->limit;
        }
        g_byte_array_append (capture->tail, data, (guint) len);
        if (capture->tail->len > 2 * capture->limit)
                g_byte_array_remove_range (capture->tail, 0, capture->tail->len - capture->limit);
}

char *
assistant_capture_to_text (const AssistantCapture *capture)
{
        gsize tail_keep = MIN (capture->tail->len, capture->limit);
        guint64 cut = capture->total - capture->head->len - tail_keep;
        g_autofree char *head =
                assistant_text_make_valid ((const char *) capture->head->data, capture->head->len);
        /* An empty GByteArray may have no data at all: no pointer arithmetic on NULL. */
        g_autofree char *tail =
                tail_keep ? assistant_text_make_valid ((const char *) capture->tail->data +
                                                               capture->tail->len - tail_keep,
                                                       tail_keep)
                          : g_strdup ("");

        if (cut == 0)
                return g_strconcat (head, tail, NULL);
        return g_strdup_printf (_ ("%s\n[… %llu bytes cut from the middle of the output (%llu "
                                   "bytes in all); the first and last %llu bytes are shown "
                                   "…]\n%s"),
                                head, (unsigned long long) cut, (unsigned long long) capture->total,
                                (unsigned long long) capture->limit, tail);
}

void
assistant_capture_clear (AssistantCapture *capture)
{
        g_clear_pointer (&capture->head, g_byte_array_unref);
        g_clear_pointer (&capture->tail, g_byte_array_unref);
}

char *
assistant_text_make_valid (const char *data, gsize len)
{
        g_autofree char *valid = NULL;
        GString *out;

        if (len == 0)
                return g_strdup ("");
        valid = g_utf8_make_valid (data, (gssize) len);
        if (!memchr (data, 0, len))
                return g_steal_pointer (&valid);
        /* g_utf8_make_valid keeps NULs; C strings cannot. */
        out = g_string_sized_new (len + 16);
        for (gsize i = 0; i < len; i++) {
                if (data[i] == '\0')
                        g_string_append (out, "\xef\xbf\xbd");
                else
                        g_string_append_c (out, data[i]);
        }
        g_free (g_steal_pointer (&valid));
        valid = g_utf8_make_valid (out->str, (gssize) out->len);
        g_string_free (out, TRUE);
        return g_steal_pointer (&valid);
}

static gboolean
terminal_safe (gunichar c)
{
        if (c == '\n' || c == '\t')
                return TRUE;
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
                return FALSE;
        /* Bidi embeddings, overrides and isolates reorder what the person reads. */
        if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
                return FALSE;
        return TRUE;
}

char *
assistant_text_for_terminal (const char *text)
{
        g_autofree char *valid = g_utf8_make_valid (text, -1);
        GString *out = g_string_sized_new (strlen (valid));

        for (const char *p = valid; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                if (terminal_safe (c))
                        g_string_append_unichar (out, c);
        }
        return g_string_free (out, FALSE);
}

static gboolean
shown_escaped_char (gunichar c)
{
        switch (g_unichar_type (c)) {
        case G_UNICODE_CONTROL: /* C0, DEL, C1 */
        case G_UNICODE_FORMAT: /* bidi controls, zero-width characters */
        case G_UNICODE_LINE_SEPARATOR:
        case G_UNICODE_PARAGRAPH_SEPARATOR:
                return TRUE;
        default:
                return FALSE;
        }
}

char *
assistant_text_escaped (const char *text, gsize max_chars)
{
        g_autofree char *valid = g_utf8_make_valid (text, -1);
        GString *out = g_string_sized_new (strlen (valid));
        gsize n = 0;

        for (const char *p = valid; *p; p = g_utf8_next_char (p), n++) {
                gunichar c = g_utf8_get_char (p);

                if (n == max_chars) {
                        g_string_append (out, "…");
                        break;
                }
                if (c == '\n')
                        g_string_append (out, "\\n");
                else if (c == '\r')
                        g_string_append (out, "\\r");
                else if (c == '\t')
                        g_string_append (out, "\\t");
                else if (c < 0x80 && shown_escaped_char (c))
                        g_string_append_printf (out, "\\x%02x", c);
                else if (shown_escaped_char (c))
                        g_string_append_printf (out, "\\u%04X", c);
                else
                        g_string_append_unichar (out, c);
        }
        return g_string_free (out, FALSE);
}

guint
assistant_text_count_lines (const char *text)
{
        guint n = 0;
        const char *p = text;

        if (!*text)
                return 0;
        while ((p = strchr (p, '\n'))) {
                n++;
                p++;
        }
        /* A last line without a newline still counts. */
        return text[strlen (text) - 1] == '\n' ? n : n + 1;
}

/* Points at the start of line n (1-based), or NULL past the end. */
static const char *
line_start (const char *text, guint n)
{
        const char *p = text;

        for (guint i = 1; i < n; i++) {
                p = strchr (p, '\n');
                if (!p)
                        return NULL;
                p++;
        }
        return p;
}

static void
append_numbered (GString *out, const char *text, guint first, guint last)
{
        const char *p = line_start (text, first);

        for (guint n = first; p && *p && n <= last; n++) {
                const char *nl = strchr (p, '\n');
                gsize len = nl ? (gsize) (nl - p) : strlen (p);

                g_string_append_printf (out, "%6u\t%.*s\n", n, (int) len, p);
                p = nl ? nl + 1 : NULL;
        }
}

char *
assistant_text_number_lines (
        const char *text, gint64 first, gint64 last, guint *ret_n_lines, GError **error)
{
        guint n = assistant_text_count_lines (text);
        GString *out;

        if (ret_n_lines)
                *ret_n_lines = n;
        if (last < 0 || last > n)
                last = n;
        if (first < 1 || (n > 0 && first > n) || (n == 0 && first > 1) || first > last + 1) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("The line range starts at %lld but the file has %u lines."),
                             (long long) first, n);
                return NULL;
        }
        out = g_string_new (NULL);
        append_numbered (out, text, (guint) first, (guint) last);
        return g_string_free (out, FALSE);
}

guint
assistant_text_count (const char *haystack, const char *needle)
{
        gsize len = strlen (needle);
        guint n = 0;

        g_return_val_if_fail (len > 0, 0);
        for (const char *p = strstr (haystack, needle); p; p = strstr (p + len, needle))
                n++;
        return n;
}

static guint
line_of (const char *text, const char *at)
{
        guint line = 1;

        for (const char *p = text; p < at; p++)
                if (*p == '\n')
                        line++;
        return line;
}

char *
assistant_text_replace_once (const char *haystack,
                             const char *needle,
                             const char *replacement,
                             guint *ret_line)
{
        const char *at = strstr (haystack, needle);
        GString *out;

        g_return_val_if_fail (at != NULL, NULL);
        out = g_string_new_len (haystack, at - haystack);
        g_string_append (out, replacement);
        g_string_append (out, at + strlen (needle));
        if (ret_line)
                *ret_line = line_of (haystack, at);
        return g_string_free (out, FALSE);
}

char *
assistant_text_insert_after (const char *text, guint after, const char *new_text, GError **error)
{
        guint n = assistant_text_count_lines (text);
        const char *at;
        GString *out;

        if (after > n) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("insert_line is %u but the file has %u lines (use 0 to insert "
                                "at the start, %u to append)."),
                             after, n, n);
                return NULL;
        }
        at = after == 0 ? text : line_start (text, after + 1);
        if (!at)
                at = text + strlen (text);
        out = g_string_new_len (text, at - text);
        /* Appending after a last line that has no newline must not glue the lines together. */
        if (out->len > 0 && out->str[out->len - 1] != '\n')
                g_string_append_c (out, '\n');
        g_string_append (out, new_text);
        if (*new_text && new_text[strlen (new_text) - 1] != '\n' && *at)
                g_string_append_c (out, '\n');
        g_string_append (out, at);
        return g_string_free (out, FALSE);
}

char *
assistant_text_snippet (const char *text, guint first, guint last, guint context)
{
        GString *out = g_string_new (NULL);
        guint from = first > context ? first - context : 1;

        append_numbered (out, text, from, last + context);
        return g_string_free (out, FALSE);
}

char *
assistant_text_truncate (const char *text, gsize max)
{
        gsize len = strlen (text);
        const char *end;

        if (len <= max)
                return g_strdup (text);
        end = g_utf8_find_prev_char (text, text + max + 1);
        if (!end)
                end = text;
        return g_strdup_printf (
                _ ("%.*s\n[… %llu more bytes cut (%llu bytes in all) …]"), (int) (end - text), text,
                (unsigned long long) (len - (gsize) (end - text)), (unsigned long long) len);
}
