/* fake-llm-server.h — a scripted LLM provider on 127.0.0.1 for tests (never installed).
 *
 * It speaks the real wire formats: every request gets the next scripted reply from a queue
 * (an Anthropic SSE event sequence, OpenAI chunks, an HTTP error, a broken or stalled stream;
 * the format is in README.md), and every request is recorded (method, path, headers, JSON body)
 * so a test can check what the client sent. It runs on the thread-default main context of
 * the thread that created it. A request that finds the queue empty gets a 500 error.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct CorralFakeLlmServer CorralFakeLlmServer;

/* Called for each request received, with its record (see get_request). */
typedef void (*CorralFakeLlmRecordFunc) (const cJSON *record, gpointer user_data);

/* Listens on 127.0.0.1, port 0 (any free port) unless port is given. (transfer full) */
CorralFakeLlmServer *corral_fake_llm_server_new (guint port, GError **error);
void corral_fake_llm_server_free (CorralFakeLlmServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralFakeLlmServer, corral_fake_llm_server_free)

guint corral_fake_llm_server_get_port (CorralFakeLlmServer *server);
/* (transfer full) "http://127.0.0.1:PORT" */
char *corral_fake_llm_server_get_url (CorralFakeLlmServer *server);

/* Queues one reply (takes it; README.md says what it may hold). */
void corral_fake_llm_server_push (CorralFakeLlmServer *server, cJSON *reply);
/* Queues the replies of a script {"replies": [...]}. */
gboolean corral_fake_llm_server_load_script (CorralFakeLlmServer *server,
                                             const char *json,
                                             gsize len,
                                             GError **error);
guint corral_fake_llm_server_get_n_pending (CorralFakeLlmServer *server);

/* Requests received so far. A record is {"method", "path", "headers": {lower-case name: value},
 * "body": the JSON body, or a string when it was not JSON}. (transfer none) */
guint corral_fake_llm_server_get_n_requests (CorralFakeLlmServer *server);
const cJSON *corral_fake_llm_server_get_request (CorralFakeLlmServer *server, guint index);
void corral_fake_llm_server_set_record_func (CorralFakeLlmServer *server,
                                             CorralFakeLlmRecordFunc func,
                                             gpointer user_data);

/* GET .../models (a key check) answers 200 for this key only, 401 for any other (NULL, the
 * default: any key). Such requests are counted here, not among the requests above. */
void corral_fake_llm_server_set_valid_key (CorralFakeLlmServer *server, const char *key);
guint corral_fake_llm_server_get_n_key_checks (CorralFakeLlmServer *server);

/* Reply builders (fake-llm-script.c). (transfer full) */
/* A streamed Anthropic message: text (nullable) in pieces of a few bytes, then, if tool_name
 * is given, one tool_use block whose input_json is streamed in fragments; then message_delta
 * with stop_reason and message_stop. Usage: input 25, output 15, cache read 11, creation 7. */
cJSON *corral_fake_llm_anthropic_reply (const char *text,
                                        const char *tool_id,
                                        const char *tool_name,
                                        const char *input_json,
                                        const char *stop_reason);
/* The same for chat completions: content pieces, one tool call whose arguments come in
 * fragments, finish_reason, a usage chunk (prompt 36 of which 11 cached, completion 15), and
 * [DONE]. */
cJSON *corral_fake_llm_openai_reply (const char *text,
                                     const char *tool_id,
                                     const char *tool_name,
                                     const char *arguments,
                                     const char *finish_reason);
/* An HTTP error with the body {"type": "error", "error": {"type", "message"}}; retry_after
 * (nullable) becomes the retry-after header. */
cJSON *corral_fake_llm_error_reply (guint status,
                                    const char *type,
                                    const char *message,
                                    const char *retry_after);
/* 200 text/event-stream, the chunks sent as they are, then `end` ("complete", "close",
 * "stall"). */
cJSON *corral_fake_llm_raw_reply (const char *const *chunks, const char *end);

G_END_DECLS
