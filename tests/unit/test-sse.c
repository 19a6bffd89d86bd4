/* test-sse.c — the text/event-stream parser: chunk boundaries anywhere, line endings, comments,
 * multi-line data, events without data, and the refusals (long lines, big events, NUL, bad
 * UTF-8).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-error.h"
#include "llm-sse.h"

#include <string.h>

typedef struct {
        GString *log; /* "type|data\n" per event */
} Sink;

static gboolean
on_event (const char *type, const char *data, gsize len, gpointer user_data, GError **error)
{
        Sink *sink = user_data;

        g_assert_cmpuint (strlen (data), ==, len);
        g_string_append_printf (sink->log, "%s|%s\n", type, data);
        return TRUE;
}

/* Feeds input cut into pieces of `step` bytes (0: all at once); returns the event log. */
static char *
parse (const char *input, gsize len, gsize step, GError **error)
{
        Sink sink = { g_string_new (NULL) };
        g_autoptr (CorralSseParser) p = corral_sse_parser_new (64, 256, on_event, &sink);
        gsize off = 0;

        if (step == 0)
                step = len ? len : 1;
        for (; off < len; off += step) {
                if (!corral_sse_parser_feed (p, input + off, MIN (step, len - off), error)) {
                        g_string_free (sink.log, TRUE);
                        return NULL;
                }
        }
        if (!corral_sse_parser_finish (p, NULL, error)) {
                g_string_free (sink.log, TRUE);
                return NULL;
        }
        return g_string_free (sink.log, FALSE);
}

static void
check_all_splits (const char *input, const char *expected)
{
        gsize len = strlen (input);

        for (gsize step = 0; step <= len; step++) {
                g_autoptr (GError) error = NULL;
                g_autofree char *log = parse (input, len, step, &error);
                g_assert_no_error (error);
                g_assert_cmpstr (log, ==, expected);
        }
}

static void
test_basic (void)
{
        check_all_splits ("event: message_start\ndata: {\"a\":1}\n\n", "message_start|{\"a\":1}\n");
        check_all_splits ("data: one\n\ndata: two\n\n", "message|one\nmessage|two\n");
        /* No space after the colon, and a value that starts with a space kept after one. */
        check_all_splits ("data:x\n\ndata:  y\n\n", "message|x\nmessage| y\n");
}

static void
test_line_endings (void)
{
        const char *expected = "ping|{}\nmessage|last\n";

        check_all_splits ("event: ping\ndata: {}\n\ndata: last\n\n", expected);
        check_all_splits ("event: ping\r\ndata: {}\r\n\r\ndata: last\r\n\r\n", expected);
        check_all_splits ("event: ping\rdata: {}\r\rdata: last\r\r", expected);
        check_all_splits ("event: ping\r\ndata: {}\n\rdata: last\r\n\n", expected);
}

static void
test_comments_and_fields (void)
{
        check_all_splits (": keep-alive\n\n:another\nid: 7\nretry: 100\nunknown: x\ndata: a\n\n",
                          "message|a\n");
}

static void
test_multiline (void)
{
        check_all_splits ("data: first\ndata: second\ndata:\ndata: fourth\n\n",
                          "message|first\nsecond\n\nfourth\n");
}

static void
test_event_without_data (void)
{
        /* The type applies to one event only, and an event without data is not dispatched. */
        check_all_splits ("event: ping\n\ndata: a\n\nevent: x\nid: 3\n\n", "message|a\n");
}

static void
test_unterminated (void)
{
        Sink sink = { g_string_new (NULL) };
        g_autoptr (CorralSseParser) p = corral_sse_parser_new (64, 256, on_event, &sink);
        gboolean pending = FALSE;
        const char *input = "data: a\n\ndata: half";

        g_assert_true (corral_sse_parser_feed (p, input, strlen (input), NULL));
        g_assert_true (corral_sse_parser_finish (p, &pending, NULL));
        g_assert_true (pending);
        g_assert_cmpstr (sink.log->str, ==, "message|a\n");
        g_string_free (sink.log, TRUE);
}

static void
check_refused (const char *input, gsize len)
{
        for (gsize step = 0; step <= 7; step++) {
                g_autoptr (GError) error = NULL;
                g_autofree char *log = parse (input, len, step, &error);
                g_assert_null (log);
                g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
        }
}

static void
test_refusals (void)
{
        g_autofree char *long_line = g_strnfill (65, 'x');
        g_autofree char *long_event = NULL;
        GString *s = g_string_new (NULL);

        check_refused (long_line, strlen (long_line));
        for (int i = 0; i < 10; i++)
                g_string_append (s, "data: 0123456789012345678901234567890\n");
        long_event = g_string_free (s, FALSE);
        check_refused (long_event, strlen (long_event));
        check_refused ("data: a\0b\n\n", 11);
        check_refused ("data: \xff\xfe\n\n", 10);
}

static gboolean
on_event_fail (const char *type, const char *data, gsize len, gpointer user_data, GError **error)
{
        g_set_error_literal (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_SERVER, "stop");
        return FALSE;
}

static void
test_callback_error_sticks (void)
{
        g_autoptr (CorralSseParser) p = corral_sse_parser_new (64, 256, on_event_fail, NULL);
        g_autoptr (GError) error = NULL;

        g_assert_false (corral_sse_parser_feed (p, "data: a\n\n", 9, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_SERVER);
        g_clear_error (&error);
        g_assert_false (corral_sse_parser_feed (p, "data: b\n\n", 9, &error));
        g_assert_error (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/sse/basic", test_basic);
        g_test_add_func ("/sse/line-endings", test_line_endings);
        g_test_add_func ("/sse/comments-and-fields", test_comments_and_fields);
        g_test_add_func ("/sse/multiline", test_multiline);
        g_test_add_func ("/sse/event-without-data", test_event_without_data);
        g_test_add_func ("/sse/unterminated", test_unterminated);
        g_test_add_func ("/sse/refusals", test_refusals);
        g_test_add_func ("/sse/callback-error-sticks", test_callback_error_sticks);
        return g_test_run ();
}
