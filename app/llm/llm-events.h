/* llm-events.h — what a streaming request reports while it runs, and the limits it keeps.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
        /* Text arrived for block block_index (text, text_len; valid UTF-8, not NUL-terminated
         * in general: use text_len). */
        CORRAL_LLM_EVENT_TEXT_DELTA,
        /* The model started calling tool_name (tool_id) in block block_index; its input
         * arrives with the final response. */
        CORRAL_LLM_EVENT_TOOL_USE_START,
        /* The attempt failed with a transient error; after delay_ms the request starts over
         * as attempt number `attempt`. Everything streamed so far must be discarded. */
        CORRAL_LLM_EVENT_RETRY,
} CorralLlmEventType;

typedef struct {
        CorralLlmEventType type;
        guint block_index;
        const char *text;
        gsize text_len;
        const char *tool_id;
        const char *tool_name;
        guint attempt;
        guint delay_ms;
        const GError *error;
} CorralLlmEvent;

/* Called on the thread-default main context of the caller of stream_async. */
typedef void (*CorralLlmEventFunc) (const CorralLlmEvent *event, gpointer user_data);

/* Bounds on what a provider may send in one reply; anything beyond is a PROTOCOL error. */
typedef struct {
        gsize max_event_bytes; /* one SSE line or event (default 1 MiB) */
        gsize max_response_bytes; /* the whole reply body (default 32 MiB) */
        guint max_blocks; /* content blocks / tool calls (default 256) */
        gsize max_tool_input_bytes; /* one tool call's JSON input (default 4 MiB) */
} CorralLlmLimits;

void corral_llm_limits_init_default (CorralLlmLimits *limits);

G_END_DECLS
