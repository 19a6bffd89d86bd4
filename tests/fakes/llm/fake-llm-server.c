/* fake-llm-server.c — the scripted provider: queue, recording, and streamed replies.
 *
 * A streamed reply is sent one chunk at a time: each chunk is appended to the chunked
 * response body when the previous one has been written ("wrote-chunk"), after delay_ms, so
 * the client sees separate reads and a stall or a cut happens exactly where the script says.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-server.h"

#include <libsoup/soup.h>
#include <string.h>

typedef enum {
        END_COMPLETE,
        END_CLOSE,
        END_STALL,
} End;

typedef struct {
        SoupServerMessage *msg;
        GPtrArray *chunks; /* of GBytes */
        guint next;
        GBytes *repeat; /* sent repeat_left more times after chunks */
        guint64 repeat_left;
        guint delay_ms;
        End end;
        GSource *timer;
        gulong wrote_handler, finished_handler;
        gboolean done;
} Stream;

struct CorralFakeLlmServer {
        SoupServer *soup;
        GSocketService *service;
        guint port;
        GQueue replies; /* of cJSON */
        GPtrArray *requests; /* of cJSON */
        GPtrArray *streams; /* of Stream */
        CorralFakeLlmRecordFunc record_func;
        gpointer record_data;
        char *valid_key; /* the key GET .../models accepts; NULL: any */
        guint n_key_checks;
};

static void stream_schedule (Stream *s);

static void
stream_stop (Stream *s)
{
        s->done = TRUE;
        if (s->timer != NULL) {
                g_source_destroy (s->timer);
                g_clear_pointer (&s->timer, g_source_unref);
        }
}

static void
stream_free (Stream *s)
{
        stream_stop (s);
        if (s->wrote_handler != 0)
                g_signal_handler_disconnect (s->msg, s->wrote_handler);
        if (s->finished_handler != 0)
                g_signal_handler_disconnect (s->msg, s->finished_handler);
        g_object_unref (s->msg);
        g_ptr_array_unref (s->chunks);
        g_clear_pointer (&s->repeat, g_bytes_unref);
        g_free (s);
}

static GBytes *
stream_next_chunk (Stream *s)
{
        if (s->next < s->chunks->len)
                return g_bytes_ref (g_ptr_array_index (s->chunks, s->next++));
        if (s->repeat != NULL && s->repeat_left > 0) {
                s->repeat_left--;
                return g_bytes_ref (s->repeat);
        }
        return NULL;
}

static void
stream_end (Stream *s)
{
        GIOStream *conn;

        s->done = TRUE;
        switch (s->end) {
        case END_COMPLETE:
                soup_message_body_complete (soup_server_message_get_response_body (s->msg));
                soup_server_message_unpause (s->msg);
                break;
        case END_CLOSE:
                /* The client sees the connection drop in the middle of the chunked body. */
                conn = soup_server_message_steal_connection (s->msg);
                if (conn != NULL) {
                        g_io_stream_close (conn, NULL, NULL);
                        g_object_unref (conn);
                }
                break;
        case END_STALL:
        default:
                break; /* stays paused: headers and chunks sent, then silence */
        }
}

static gboolean
stream_step (gpointer data)
{
        Stream *s = data;
        g_autoptr (GBytes) chunk = NULL;

        g_clear_pointer (&s->timer, g_source_unref);
        if (s->done)
                return G_SOURCE_REMOVE;
        chunk = stream_next_chunk (s);
        if (chunk == NULL) {
                stream_end (s);
                return G_SOURCE_REMOVE;
        }
        soup_message_body_append_bytes (soup_server_message_get_response_body (s->msg), chunk);
        soup_server_message_unpause (s->msg);
        return G_SOURCE_REMOVE;
}

static void
stream_schedule (Stream *s)
{
        if (s->done || s->timer != NULL)
                return;
        s->timer = s->delay_ms ? g_timeout_source_new (s->delay_ms) : g_idle_source_new ();
        g_source_set_callback (s->timer, stream_step, s, NULL);
        g_source_attach (s->timer, g_main_context_get_thread_default ());
}

static void
on_wrote_chunk (SoupServerMessage *msg, gpointer data)
{
        stream_schedule (data);
}

static void
on_finished (SoupServerMessage *msg, gpointer data)
{
        stream_stop (data);
}

/* ---- building a streamed reply ---- */

static char *
json_or_string (const cJSON *item)
{
        if (cJSON_IsString (item))
                return g_strdup (item->valuestring);
        return cJSON_PrintUnformatted (item);
}

static void
add_chunk (GPtrArray *chunks, const char *text)
{
        g_ptr_array_add (chunks, g_bytes_new (text, strlen (text)));
}

static void
add_events (GPtrArray *chunks, const cJSON *events)
{
        const cJSON *ev;

        cJSON_ArrayForEach (ev, events) {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive (ev, "event");
                g_autofree char *data =
                        json_or_string (cJSON_GetObjectItemCaseSensitive (ev, "data"));
                g_autofree char *text = NULL;

                if (cJSON_IsString (name))
                        text = g_strdup_printf ("event: %s\ndata: %s\n\n", name->valuestring,
                                                data ? data : "");
                else
                        text = g_strdup_printf ("data: %s\n\n", data ? data : "");
                add_chunk (chunks, text);
        }
}

/* "split": N re-cuts the whole stream into N-byte pieces (chunk boundaries anywhere). */
static GPtrArray *
resplit (GPtrArray *chunks, gsize n)
{
        g_autoptr (GByteArray) all = g_byte_array_new ();
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);

        for (guint i = 0; i < chunks->len; i++) {
                gsize len;
                const guint8 *p = g_bytes_get_data (g_ptr_array_index (chunks, i), &len);
                g_byte_array_append (all, p, (guint) len);
        }
        for (gsize off = 0; off < all->len; off += n)
                g_ptr_array_add (out, g_bytes_new (all->data + off, MIN (n, all->len - off)));
        g_ptr_array_unref (chunks);
        return out;
}

static GPtrArray *
build_chunks (const cJSON *reply)
{
        GPtrArray *chunks = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
        const cJSON *raw = cJSON_GetObjectItemCaseSensitive (reply, "chunks");
        const cJSON *split = cJSON_GetObjectItemCaseSensitive (reply, "split");
        const cJSON *c;

        add_events (chunks, cJSON_GetObjectItemCaseSensitive (reply, "events"));
        cJSON_ArrayForEach (c, raw) {
                if (cJSON_IsString (c))
                        add_chunk (chunks, c->valuestring);
        }
        if (cJSON_IsNumber (split) && split->valuedouble >= 1)
                chunks = resplit (chunks, (gsize) split->valuedouble);
        return chunks;
}

static End
parse_end (const cJSON *reply)
{
        const char *end = cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (reply, "end"));

        if (g_strcmp0 (end, "close") == 0)
                return END_CLOSE;
        if (g_strcmp0 (end, "stall") == 0)
                return END_STALL;
        return END_COMPLETE;
}

static void
start_stream (CorralFakeLlmServer *server, SoupServerMessage *msg, const cJSON *reply)
{
        Stream *s = g_new0 (Stream, 1);
        const cJSON *repeat = cJSON_GetObjectItemCaseSensitive (reply, "repeat");
        const cJSON *delay = cJSON_GetObjectItemCaseSensitive (reply, "delay_ms");
        const char *rchunk =
                cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (repeat, "chunk"));
        const cJSON *count = cJSON_GetObjectItemCaseSensitive (repeat, "count");

        s->msg = g_object_ref (msg);
        s->chunks = build_chunks (reply);
        if (rchunk != NULL && cJSON_IsNumber (count) && count->valuedouble > 0) {
                s->repeat = g_bytes_new (rchunk, strlen (rchunk));
                s->repeat_left = (guint64) count->valuedouble;
        }
        s->delay_ms = cJSON_IsNumber (delay) ? (guint) delay->valuedouble : 0;
        s->end = parse_end (reply);
        soup_message_headers_set_encoding (soup_server_message_get_response_headers (msg),
                                           SOUP_ENCODING_CHUNKED);
        s->wrote_handler = g_signal_connect (msg, "wrote-chunk", G_CALLBACK (on_wrote_chunk), s);
        s->finished_handler = g_signal_connect (msg, "finished", G_CALLBACK (on_finished), s);
        g_ptr_array_add (server->streams, s);
        /* Nothing to write yet: libsoup sends the headers and then waits for the first chunk. */
        soup_server_message_pause (msg);
        stream_schedule (s);
}

/* ---- handling a request ---- */

static void
set_headers (SoupServerMessage *msg, const cJSON *reply, gboolean streamed)
{
        SoupMessageHeaders *h = soup_server_message_get_response_headers (msg);
        const cJSON *headers = cJSON_GetObjectItemCaseSensitive (reply, "headers");
        const char *type =
                cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (reply, "content_type"));
        const cJSON *item;

        soup_message_headers_replace (h, "Content-Type",
                                      type ? type
                                           : (streamed ? "text/event-stream" : "application/json"));
        cJSON_ArrayForEach (item, headers) {
                if (cJSON_IsString (item))
                        soup_message_headers_replace (h, item->string, item->valuestring);
        }
}

static cJSON *
exhausted_reply (void)
{
        return corral_fake_llm_error_reply (500, "api_error",
                                            "corral-fake-llm: no scripted reply left", NULL);
}

static void
reply_to (CorralFakeLlmServer *server, SoupServerMessage *msg, const cJSON *reply)
{
        const cJSON *status = cJSON_GetObjectItemCaseSensitive (reply, "status");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive (reply, "body");
        gboolean streamed = body == NULL;

        soup_server_message_set_status (
                msg, cJSON_IsNumber (status) ? (guint) status->valuedouble : 200, NULL);
        set_headers (msg, reply, streamed);
        if (!streamed) {
                g_autofree char *text = json_or_string (body);
                soup_message_body_append (soup_server_message_get_response_body (msg),
                                          SOUP_MEMORY_COPY, text, strlen (text));
                return;
        }
        start_stream (server, msg, reply);
}

static cJSON *
record_request (SoupServerMessage *msg, const char *path)
{
        cJSON *record = cJSON_CreateObject ();
        cJSON *headers = cJSON_AddObjectToObject (record, "headers");
        SoupMessageHeadersIter iter;
        const char *name, *value;
        g_autoptr (GBytes) body =
                soup_message_body_flatten (soup_server_message_get_request_body (msg));
        gsize len;
        const char *data = g_bytes_get_data (body, &len);
        cJSON *json = data ? cJSON_ParseWithLength (data, len) : NULL;

        cJSON_AddStringToObject (record, "method", soup_server_message_get_method (msg));
        cJSON_AddStringToObject (record, "path", path);
        soup_message_headers_iter_init (&iter, soup_server_message_get_request_headers (msg));
        while (soup_message_headers_iter_next (&iter, &name, &value)) {
                g_autofree char *lower = g_ascii_strdown (name, -1);
                cJSON_DeleteItemFromObjectCaseSensitive (headers, lower);
                cJSON_AddStringToObject (headers, lower, value);
        }
        if (json == NULL) {
                g_autofree char *text = g_utf8_make_valid (data ? data : "", (gssize) len);
                json = cJSON_CreateString (text);
        }
        cJSON_AddItemToObject (record, "body", json);
        return record;
}

/* The key a request carries: x-api-key (Anthropic) or "Authorization: Bearer" (OpenAI). */
static const char *
request_key (SoupServerMessage *msg)
{
        SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
        const char *auth = soup_message_headers_get_one (h, "authorization");

        if (auth && g_str_has_prefix (auth, "Bearer "))
                return auth + strlen ("Bearer ");
        return soup_message_headers_get_one (h, "x-api-key");
}

/* GET .../models, what a key check asks: the list when the key is the valid one, else the
 * provider's 401. Not a scripted reply, not recorded among the requests. */
static void
answer_models (CorralFakeLlmServer *server, SoupServerMessage *msg)
{
        const char *key = request_key (msg);
        const char *body;

        server->n_key_checks++;
        if (server->valid_key && g_strcmp0 (key, server->valid_key) != 0) {
                soup_server_message_set_status (msg, 401, NULL);
                body = "{\"type\": \"error\", \"error\": {\"type\": "
                       "\"authentication_error\", \"message\": \"invalid x-api-key\"}}";
        } else {
                soup_server_message_set_status (msg, 200, NULL);
                body = "{\"data\": [{\"type\": \"model\", \"id\": \"corral-fake-model\", "
                       "\"display_name\": \"Fake\"}], \"has_more\": false}";
        }
        soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                      "content-type", "application/json");
        soup_message_body_append (soup_server_message_get_response_body (msg), SOUP_MEMORY_STATIC,
                                  body, strlen (body));
}

static void
handle (SoupServer *soup,
        SoupServerMessage *msg,
        const char *path,
        GHashTable *query,
        gpointer data)
{
        CorralFakeLlmServer *server = data;
        cJSON *record, *reply;

        if (g_str_equal (soup_server_message_get_method (msg), "GET") &&
            g_str_has_suffix (path, "/models")) {
                answer_models (server, msg);
                return;
        }
        record = record_request (msg, path);
        reply = g_queue_pop_head (&server->replies);

        g_ptr_array_add (server->requests, record);
        if (server->record_func != NULL)
                server->record_func (record, server->record_data);
        if (reply == NULL)
                reply = exhausted_reply ();
        reply_to (server, msg, reply);
        cJSON_Delete (reply);
}

/* ---- the server ---- */

/* Connections are accepted here and handed to the SoupServer, rather than letting it listen:
 * libsoup 3.2's own listener leaks the GSocket of every connection it accepts, which would
 * drown the valgrind run in leaks that are not ours. */
static gboolean
on_incoming (GSocketService *service, GSocketConnection *conn, GObject *source, gpointer data)
{
        CorralFakeLlmServer *server = data;
        g_autoptr (GSocketAddress) local = g_socket_connection_get_local_address (conn, NULL);
        g_autoptr (GSocketAddress) remote = g_socket_connection_get_remote_address (conn, NULL);

        if (local != NULL && remote != NULL)
                soup_server_accept_iostream (server->soup, G_IO_STREAM (conn), local, remote, NULL);
        return TRUE;
}

static gboolean
listen_loopback (CorralFakeLlmServer *server, guint port, GError **error)
{
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, (guint16) port);
        g_autoptr (GSocketAddress) bound = NULL;

        server->service = g_socket_service_new ();
        if (!g_socket_listener_add_address (G_SOCKET_LISTENER (server->service), addr,
                                            G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL,
                                            &bound, error))
                return FALSE;
        server->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
        g_signal_connect (server->service, "incoming", G_CALLBACK (on_incoming), server);
        g_socket_service_start (server->service);
        return TRUE;
}

CorralFakeLlmServer *
corral_fake_llm_server_new (guint port, GError **error)
{
        CorralFakeLlmServer *server = g_new0 (CorralFakeLlmServer, 1);

        g_queue_init (&server->replies);
        server->requests = g_ptr_array_new_with_free_func ((GDestroyNotify) cJSON_Delete);
        server->streams = g_ptr_array_new_with_free_func ((GDestroyNotify) stream_free);
        server->soup = soup_server_new ("server-header", "corral-fake-llm", NULL);
        soup_server_add_handler (server->soup, NULL, handle, server, NULL);
        if (!listen_loopback (server, port, error)) {
                corral_fake_llm_server_free (server);
                return NULL;
        }
        return server;
}

void
corral_fake_llm_server_free (CorralFakeLlmServer *server)
{
        if (server == NULL)
                return;
        for (guint i = 0; i < server->streams->len; i++)
                stream_stop (g_ptr_array_index (server->streams, i));
        if (server->service != NULL) {
                g_socket_service_stop (server->service);
                g_socket_listener_close (G_SOCKET_LISTENER (server->service));
                g_signal_handlers_disconnect_by_data (server->service, server);
                g_clear_object (&server->service);
        }
        soup_server_disconnect (server->soup);
        g_clear_object (&server->soup);
        g_ptr_array_unref (server->streams);
        g_ptr_array_unref (server->requests);
        g_queue_clear_full (&server->replies, (GDestroyNotify) cJSON_Delete);
        g_free (server->valid_key);
        g_free (server);
}

guint
corral_fake_llm_server_get_port (CorralFakeLlmServer *server)
{
        return server->port;
}

char *
corral_fake_llm_server_get_url (CorralFakeLlmServer *server)
{
        return g_strdup_printf ("http://127.0.0.1:%u", server->port);
}

void
corral_fake_llm_server_push (CorralFakeLlmServer *server, cJSON *reply)
{
        g_return_if_fail (cJSON_IsObject (reply));
        g_queue_push_tail (&server->replies, reply);
}

gboolean
corral_fake_llm_server_load_script (CorralFakeLlmServer *server,
                                    const char *json,
                                    gsize len,
                                    GError **error)
{
        cJSON *script = cJSON_ParseWithLength (json, len);
        cJSON *replies = cJSON_GetObjectItemCaseSensitive (script, "replies");
        cJSON *reply;

        if (!cJSON_IsArray (replies)) {
                cJSON_Delete (script);
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                             "the script is not a JSON object with a \"replies\" array");
                return FALSE;
        }
        while ((reply = cJSON_DetachItemFromArray (replies, 0)) != NULL) {
                if (!cJSON_IsObject (reply)) {
                        cJSON_Delete (reply);
                        continue;
                }
                corral_fake_llm_server_push (server, reply);
        }
        cJSON_Delete (script);
        return TRUE;
}

guint
corral_fake_llm_server_get_n_pending (CorralFakeLlmServer *server)
{
        return server->replies.length;
}

guint
corral_fake_llm_server_get_n_requests (CorralFakeLlmServer *server)
{
        return server->requests->len;
}

const cJSON *
corral_fake_llm_server_get_request (CorralFakeLlmServer *server, guint index)
{
        g_return_val_if_fail (index < server->requests->len, NULL);
        return g_ptr_array_index (server->requests, index);
}

void
corral_fake_llm_server_set_record_func (CorralFakeLlmServer *server,
                                        CorralFakeLlmRecordFunc func,
                                        gpointer user_data)
{
        server->record_func = func;
        server->record_data = user_data;
}

void
corral_fake_llm_server_set_valid_key (CorralFakeLlmServer *server, const char *key)
{
        g_free (server->valid_key);
        server->valid_key = g_strdup (key);
}

guint
corral_fake_llm_server_get_n_key_checks (CorralFakeLlmServer *server)
{
        return server->n_key_checks;
}
