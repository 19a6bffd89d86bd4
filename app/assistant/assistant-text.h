/* assistant-text.h — text helpers of the agent's tools: pure functions, unit-tested.
 *
 * Everything here takes untrusted text (model input, command output, file contents) and
 * returns valid UTF-8 with no NUL, bounded by what the caller asked for.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Keeps the first and the last `limit` bytes of a stream, counting what falls in between. */
typedef struct {
        gsize limit;
        GByteArray *head;
        GByteArray *tail; /* bounded to 2 * limit, compacted to the last limit bytes */
        guint64 total;
} AssistantCapture;

void assistant_capture_init (AssistantCapture *capture, gsize limit);
void assistant_capture_add (AssistantCapture *capture, const guint8 *data, gsize len);
/* The kept text, with a note "[… N bytes cut …]" where the middle was dropped. (transfer full) */
char *assistant_capture_to_text (const AssistantCapture *capture);
void assistant_capture_clear (AssistantCapture *capture);

/* Valid UTF-8 with NUL bytes replaced by U+FFFD. (transfer full) */
char *assistant_text_make_valid (const char *data, gsize len);

/* For a terminal: C0 controls but \n and \t, DEL, C1 controls and bidi overrides removed, so
 * that a model or a command cannot move the cursor or fake output. (transfer full) */
char *assistant_text_for_terminal (const char *text);

/* Text the model or the guest chose, shown on one line: \n, \r, \t, other controls, bidi and
 * zero-width characters and line separators written as escapes, so that it cannot draw a line
 * of its own; at most max_chars characters (then "…"). (transfer full) */
char *assistant_text_escaped (const char *text, gsize max_chars);

/* Lines first..last (1-based, inclusive; last -1 = to the end), each "%6u\t%s". Fails with
 * G_IO_ERROR_INVALID_ARGUMENT for a range outside the text. ret_n_lines: the text's lines. */
char *assistant_text_number_lines (
        const char *text, gint64 first, gint64 last, guint *ret_n_lines, GError **error);
guint assistant_text_count_lines (const char *text);

/* Non-overlapping occurrences of needle (not empty). */
guint assistant_text_count (const char *haystack, const char *needle);
/* haystack with its single occurrence of needle replaced; ret_line: the 1-based line where the
 * replacement starts. (transfer full) */
char *assistant_text_replace_once (const char *haystack,
                                   const char *needle,
                                   const char *replacement,
                                   guint *ret_line);
/* text with new_text inserted after line `after` (0: at the start); fails past the last line. */
char *
assistant_text_insert_after (const char *text, guint after, const char *new_text, GError **error);

/* A numbered excerpt: `context` lines either side of lines first..last. (transfer full) */
char *assistant_text_snippet (const char *text, guint first, guint last, guint context);

/* At most max bytes of text (cut at a character boundary), with a note saying how much was
 * cut. (transfer full) */
char *assistant_text_truncate (const char *text, gsize max);

G_END_DECLS
