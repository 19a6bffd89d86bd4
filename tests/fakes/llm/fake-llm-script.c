/* fake-llm-script.c — builders for the fake provider's common replies, in each API's real
 * event shapes (https://docs.anthropic.com/en/api/messages-streaming and OpenAI's
 * chat.completion.chunk).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-server.h"

#include <string.h>

#define PIECE 5 /* bytes per streamed piece, so that every test crosses fragment boundaries */

static void
add_event (cJSON *events, const char *name, cJSON *data)
{
        cJSON *ev = cJSON_CreateObject ();

        if (name != NULL)
                cJSON_AddStringToObject (ev, "event", name);
        cJSON_AddItemToObject (ev, "data", data);
        cJSON_AddItemToArray (events, ev);
}

/* Pieces of about PIECE bytes, never splitting a UTF-8 character. */
static GPtrArray *
pieces (const char *text)
{
        GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
        const char *p = text;

        while (p != NULL && *p) {
                const char *end = p;
                while (*end && end - p < PIECE)
                        end = g_utf8_next_char (end);
                g_ptr_array_add (out, g_strndup (p, (gsize) (end - p)));
                p = end;
        }
        return out;
}

static cJSON *
anthropic_typed (const char *type)
{
        cJSON *o = cJSON_CreateObject ();

        cJSON_AddStringToObject (o, "type", type);
        return o;
}

static void
anthropic_start (cJSON *events)
{
        cJSON *data = anthropic_typed ("message_start");
        cJSON *m = cJSON_AddObjectToObject (data, "message");
        cJSON *usage;

        cJSON_AddStringToObject (m, "id", "msg_fake_01");
        cJSON_AddStringToObject (m, "type", "message");
        cJSON_AddStringToObject (m, "role", "assistant");
        cJSON_AddStringToObject (m, "model", "claude-fake");
        cJSON_AddArrayToObject (m, "content");
        cJSON_AddNullToObject (m, "stop_reason");
        usage = cJSON_AddObjectToObject (m, "usage");
        cJSON_AddNumberToObject (usage, "input_tokens", 25);
        cJSON_AddNumberToObject (usage, "cache_creation_input_tokens", 7);
        cJSON_AddNumberToObject (usage, "cache_read_input_tokens", 11);
        cJSON_AddNumberToObject (usage, "output_tokens", 1);
        add_event (events, "message_start", data);
        add_event (events, "ping", anthropic_typed ("ping"));
}

static void
anthropic_block (cJSON *events,
                 int index,
                 cJSON *block,
                 const char *delta_type,
                 const char *field,
                 const char *content)
{
        g_autoptr (GPtrArray) parts = pieces (content);
        cJSON *data = anthropic_typed ("content_block_start");

        cJSON_AddNumberToObject (data, "index", index);
        cJSON_AddItemToObject (data, "content_block", block);
        add_event (events, "content_block_start", data);
        for (guint i = 0; i < parts->len; i++) {
                cJSON *delta;
                data = anthropic_typed ("content_block_delta");
                cJSON_AddNumberToObject (data, "index", index);
                delta = cJSON_AddObjectToObject (data, "delta");
                cJSON_AddStringToObject (delta, "type", delta_type);
                cJSON_AddStringToObject (delta, field, g_ptr_array_index (parts, i));
                add_event (events, "content_block_delta", data);
        }
        data = anthropic_typed ("content_block_stop");
        cJSON_AddNumberToObject (data, "index", index);
        add_event (events, "content_block_stop", data);
}

cJSON *
corral_fake_llm_anthropic_reply (const char *text,
                                 const char *tool_id,
                                 const char *tool_name,
                                 const char *input_json,
                                 const char *stop_reason)
{
        cJSON *reply = cJSON_CreateObject ();
        cJSON *events = cJSON_AddArrayToObject (reply, "events");
        cJSON *data, *delta;
        int index = 0;

        anthropic_start (events);
        if (text != NULL) {
                cJSON *block = anthropic_typed ("text");
                cJSON_AddStringToObject (block, "text", "");
                anthropic_block (events, index++, block, "text_delta", "text", text);
        }
        if (tool_name != NULL) {
                cJSON *block = anthropic_typed ("tool_use");
                cJSON_AddStringToObject (block, "id", tool_id);
                cJSON_AddStringToObject (block, "name", tool_name);
                cJSON_AddObjectToObject (block, "input");
                anthropic_block (events, index++, block, "input_json_delta", "partial_json",
                                 input_json ? input_json : "");
        }
        data = anthropic_typed ("message_delta");
        delta = cJSON_AddObjectToObject (data, "delta");
        cJSON_AddStringToObject (delta, "stop_reason", stop_reason);
        cJSON_AddNullToObject (delta, "stop_sequence");
        cJSON_AddNumberToObject (cJSON_AddObjectToObject (data, "usage"), "output_tokens", 15);
        add_event (events, "message_delta", data);
        add_event (events, "message_stop", anthropic_typed ("message_stop"));
        return reply;
}

static cJSON *
openai_chunk (cJSON *delta, const char *finish_reason)
{
        cJSON *chunk = cJSON_CreateObject ();
        cJSON *choice = cJSON_CreateObject ();

        cJSON_AddStringToObject (chunk, "id", "chatcmpl-fake");
        cJSON_AddStringToObject (chunk, "object", "chat.completion.chunk");
        cJSON_AddNumberToObject (chunk, "created", 1700000000);
        cJSON_AddStringToObject (chunk, "model", "gpt-fake");
        cJSON_AddNumberToObject (choice, "index", 0);
        cJSON_AddItemToObject (choice, "delta", delta);
        if (finish_reason != NULL)
                cJSON_AddStringToObject (choice, "finish_reason", finish_reason);
        else
                cJSON_AddNullToObject (choice, "finish_reason");
        cJSON_AddItemToArray (cJSON_AddArrayToObject (chunk, "choices"), choice);
        return chunk;
}

static cJSON *
openai_tool_delta (const char *id, const char *name, const char *arguments)
{
        cJSON *delta = cJSON_CreateObject ();
        cJSON *call = cJSON_CreateObject ();
        cJSON *function;

        cJSON_AddNumberToObject (call, "index", 0);
        if (id != NULL) {
                cJSON_AddStringToObject (call, "id", id);
                cJSON_AddStringToObject (call, "type", "function");
        }
        function = cJSON_AddObjectToObject (call, "function");
        if (name != NULL)
                cJSON_AddStringToObject (function, "name", name);
        cJSON_AddStringToObject (function, "arguments", arguments);
        cJSON_AddItemToArray (cJSON_AddArrayToObject (delta, "tool_calls"), call);
        return delta;
}

static void
openai_usage (cJSON *events)
{
        cJSON *chunk = cJSON_CreateObject ();
        cJSON *usage, *details;

        cJSON_AddStringToObject (chunk, "id", "chatcmpl-fake");
        cJSON_AddStringToObject (chunk, "object", "chat.completion.chunk");
        cJSON_AddArrayToObject (chunk, "choices");
        usage = cJSON_AddObjectToObject (chunk, "usage");
        cJSON_AddNumberToObject (usage, "prompt_tokens", 36);
        cJSON_AddNumberToObject (usage, "completion_tokens", 15);
        cJSON_AddNumberToObject (usage, "total_tokens", 51);
        details = cJSON_AddObjectToObject (usage, "prompt_tokens_details");
        cJSON_AddNumberToObject (details, "cached_tokens", 11);
        add_event (events, NULL, chunk);
}

cJSON *
corral_fake_llm_openai_reply (const char *text,
                              const char *tool_id,
                              const char *tool_name,
                              const char *arguments,
                              const char *finish_reason)
{
        cJSON *reply = cJSON_CreateObject ();
        cJSON *events = cJSON_AddArrayToObject (reply, "events");
        cJSON *delta = cJSON_CreateObject ();

        cJSON_AddStringToObject (delta, "role", "assistant");
        cJSON_AddStringToObject (delta, "content", "");
        add_event (events, NULL, openai_chunk (delta, NULL));
        if (text != NULL) {
                g_autoptr (GPtrArray) parts = pieces (text);
                for (guint i = 0; i < parts->len; i++) {
                        delta = cJSON_CreateObject ();
                        cJSON_AddStringToObject (delta, "content", g_ptr_array_index (parts, i));
                        add_event (events, NULL, openai_chunk (delta, NULL));
                }
        }
        if (tool_name != NULL) {
                g_autoptr (GPtrArray) parts = pieces (arguments ? arguments : "");
                add_event (events, NULL,
                           openai_chunk (openai_tool_delta (tool_id, tool_name, ""), NULL));
                for (guint i = 0; i < parts->len; i++)
                        add_event (events, NULL,
                                   openai_chunk (openai_tool_delta (NULL, NULL,
                                                                    g_ptr_array_index (parts, i)),
                                                 NULL));
        }
        add_event (events, NULL, openai_chunk (cJSON_CreateObject (), finish_reason));
        openai_usage (events);
        add_event (events, NULL, cJSON_CreateString ("[DONE]"));
        return reply;
}

cJSON *
corral_fake_llm_error_reply (guint status,
                             const char *type,
                             const char *message,
                             const char *retry_after)
{
        cJSON *reply = cJSON_CreateObject ();
        cJSON *body, *err;

        cJSON_AddNumberToObject (reply, "status", status);
        if (retry_after != NULL)
                cJSON_AddStringToObject (cJSON_AddObjectToObject (reply, "headers"), "retry-after",
                                         retry_after);
        body = cJSON_AddObjectToObject (reply, "body");
        cJSON_AddStringToObject (body, "type", "error");
        err = cJSON_AddObjectToObject (body, "error");
        cJSON_AddStringToObject (err, "type", type);
        cJSON_AddStringToObject (err, "message", message);
        return reply;
}

cJSON *
corral_fake_llm_raw_reply (const char *const *chunks, const char *end)
{
        cJSON *reply = cJSON_CreateObject ();
        cJSON *arr = cJSON_AddArrayToObject (reply, "chunks");

        for (gsize i = 0; chunks != NULL && chunks[i] != NULL; i++)
                cJSON_AddItemToArray (arr, cJSON_CreateString (chunks[i]));
        cJSON_AddStringToObject (reply, "end", end ? end : "complete");
        return reply;
}
