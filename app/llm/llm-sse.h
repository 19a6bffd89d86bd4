/* llm-sse.h — an incremental parser for text/event-stream (Server-Sent Events).
 *
 * Bytes are fed as they arrive, split anywhere; lines end in CRLF, LF or CR. Each complete
 * event (a blank line after at least one data line) is handed to the callback with its event
 * type ("message" when the event had no "event:" field) and its data lines joined with "\n".
 * Comment lines (":...") and the id/retry fields are ignored; an event with no data is dropped,
 * as the specification says. A line longer than max_line, an event larger than max_event, a
 * NUL byte or data that is not UTF-8 is refused with CORRAL_LLM_ERROR_PROTOCOL: the stream
 * comes from the network and memory stays bounded whatever it holds.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct CorralSseParser CorralSseParser;

/* Returning FALSE (with error set) stops the parser; feed then returns that error. */
typedef gboolean (*CorralSseEventFunc) (const char *event_type,
                                        const char *data,
                                        gsize data_len,
                                        gpointer user_data,
                                        GError **error);

/* (transfer full) */
CorralSseParser *corral_sse_parser_new (gsize max_line,
                                        gsize max_event,
                                        CorralSseEventFunc func,
                                        gpointer user_data);
void corral_sse_parser_free (CorralSseParser *parser);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralSseParser, corral_sse_parser_free)

/* Once it has failed, every later call fails too. */
gboolean
corral_sse_parser_feed (CorralSseParser *parser, const char *buf, gsize len, GError **error);
/* The end of the stream: a half-received event is discarded (as the specification says);
 * returns whether any bytes of one were pending in ret_pending so callers can tell a clean end. */
gboolean corral_sse_parser_finish (CorralSseParser *parser, gboolean *ret_pending, GError **error);

G_END_DECLS
