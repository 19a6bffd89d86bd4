/* test-agent-fake.c — the client against a scripted agent: handshake, ids, credit, violations.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include <unistd.h>

typedef struct {
        CorralAgentClient *client;
        FakePeer *peer;
        GError *disconnect_error;
        gboolean disconnected;
        guint watch_events;
} Fixture;

static void
on_disconnected (CorralAgentClient *client, GError *error, Fixture *fx)
{
        g_assert_false (fx->disconnected);
        fx->disconnected = TRUE;
        fx->disconnect_error = g_error_copy (error);
}

static void
on_watch_event (
        CorralAgentClient *client, guint watch, const char *path, const char *kind, Fixture *fx)
{
        fx->watch_events++;
}

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
        fx->client = corral_agent_client_new ();
        g_signal_connect (fx->client, "disconnected", G_CALLBACK (on_disconnected), fx);
        g_signal_connect (fx->client, "watch-event", G_CALLBACK (on_watch_event), fx);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
        g_signal_handlers_disconnect_by_data (fx->client, fx);
        g_clear_object (&fx->client);
        g_clear_pointer (&fx->peer, fake_peer_free);
        g_clear_error (&fx->disconnect_error);
}

static void
connect_peer (Fixture *fx, guint32 window)
{
        fx->peer = fake_peer_connect (fx->client, window);
}

/* Expects the connection to be closed with a protocol error, and the peer to see EOF. */
static void
assert_protocol_error (Fixture *fx)
{
        g_autoptr (GBytes) payload = NULL;
        ProtoFrame f;

        test_wait_flag (&fx->disconnected, 10000, "disconnected");
        g_assert_error (fx->disconnect_error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_PROTOCOL);
        g_assert_false (corral_agent_client_get_connected (fx->client));
        while (fake_peer_read (fx->peer, &f, &payload))
                g_clear_pointer (&payload, g_bytes_unref);
        g_assert_true (fx->peer->eof);
}

static cJSON *
obj_with_bool (const char *key)
{
        cJSON *obj = cJSON_CreateObject ();

        cJSON_AddBoolToObject (obj, key, TRUE);
        return obj;
}

/* Handshake ------------------------------------------------------------------------------------ */

static void
test_stale_frames_dropped (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        g_autoptr (cJSON) req = NULL;
        g_autofree char *nonce = NULL;
        GAsyncResult *slot = NULL;
        cJSON *event, *params;
        guint64 id;
        int fd;
        char garbage[3000];

        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, NULL, test_store_result, &slot);
        nonce = fake_peer_read_hello (fx->peer);

        /* What a virtio-serial buffer may hold from an earlier session: half frames, replies,
         * events, the agent's answer to an earlier HELLO. */
        memset (garbage, 'x', sizeof garbage);
        garbage[100] = (char) PROTO_MAGIC0;
        fake_peer_send_raw (fx->peer, garbage, sizeof garbage);
        fake_peer_send_result (fx->peer, 1, obj_with_bool ("stale"));
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "watch", 1);
        cJSON_AddStringToObject (params, "path", "/stale");
        cJSON_AddStringToObject (params, "kind", "create");
        event = proto_event_new ("watch.event", params);
        fake_peer_send_json (fx->peer, PROTO_FRAME_EVENT, event);
        fake_peer_send_hello (fx->peer, "00000000000000000000000000000000", 8192);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, 1, 5, "stale", 5);
        fake_peer_send_hello (fx->peer, nonce, 65536);

        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_connect_fd_finish (fx->client, result, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (corral_agent_client_get_window (fx->client), ==, 65536);
        g_assert_cmpstr (corral_agent_client_get_agent_version (fx->client), ==, "fake-1");

        corral_agent_client_call_async (fx->client, "echo", NULL, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);
        g_assert_cmpuint (id, ==, 1);
        fake_peer_send_result (fx->peer, id, obj_with_bool ("real"));
        g_clear_object (&result);
        result = test_wait_result (&slot);
        reply = corral_agent_client_call_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_nonnull (cJSON_GetObjectItem (reply, "real"));
        g_assert_null (cJSON_GetObjectItem (reply, "stale"));
        g_assert_cmpuint (fx->watch_events, ==, 0);
        g_assert_false (fx->disconnected);
}

static void
hello_error_case (Fixture *fx, cJSON *hello, gint code)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *nonce = NULL;
        GAsyncResult *slot = NULL;
        int fd;

        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, NULL, test_store_result, &slot);
        nonce = fake_peer_read_hello (fx->peer);
        cJSON_AddStringToObject (hello, "nonce", nonce);
        fake_peer_send_json (fx->peer, PROTO_FRAME_HELLO, hello);
        result = test_wait_result (&slot);
        g_assert_false (corral_agent_client_connect_fd_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, code);
        g_assert_false (corral_agent_client_get_connected (fx->client));
        /* A failed connect is not a disconnect. */
        g_assert_false (fx->disconnected);
}

static void
test_hello_unsupported (Fixture *fx, gconstpointer data)
{
        cJSON *hello = cJSON_CreateObject ();

        cJSON_AddStringToObject (hello, "role", "agent");
        cJSON_AddItemToObject (hello, "error",
                               proto_error_new ("unsupported-version", "too old", 0));
        hello_error_case (fx, hello, CORRAL_AGENT_ERROR_UNSUPPORTED_VERSION);
}

static void
test_hello_future_version (Fixture *fx, gconstpointer data)
{
        cJSON *hello = cJSON_CreateObject ();

        cJSON_AddStringToObject (hello, "role", "agent");
        cJSON_AddNumberToObject (hello, "version", 7);
        hello_error_case (fx, hello, CORRAL_AGENT_ERROR_UNSUPPORTED_VERSION);
}

static void
test_hello_bad_window (Fixture *fx, gconstpointer data)
{
        cJSON *hello = cJSON_CreateObject ();

        cJSON_AddStringToObject (hello, "role", "agent");
        cJSON_AddNumberToObject (hello, "version", 1);
        cJSON_AddNumberToObject (hello, "window", 1024.0 * 1024 * 1024);
        hello_error_case (fx, hello, CORRAL_AGENT_ERROR_PROTOCOL);
}

static void
test_connect_cancelled (Fixture *fx, gconstpointer data)
{
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *nonce = NULL;
        GAsyncResult *slot = NULL;
        int fd;

        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, cancellable, test_store_result,
                                              &slot);
        nonce = fake_peer_read_hello (fx->peer);
        g_cancellable_cancel (cancellable);
        result = test_wait_result (&slot);
        g_assert_false (corral_agent_client_connect_fd_finish (fx->client, result, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_assert_false (corral_agent_client_get_connected (fx->client));
        /* The client closed its end; a late HELLO goes nowhere. */
        fake_peer_send_hello (fx->peer, nonce, 65536);
        fake_peer_pump (fx->peer, 100);
        g_assert_true (fx->peer->eof);
}

static void
test_handshake_timeout (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *nonce = NULL;
        GAsyncResult *slot = NULL;
        int fd;

        corral_agent_client_set_heartbeat (fx->client, 50, 3);
        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, NULL, test_store_result, &slot);
        nonce = fake_peer_read_hello (fx->peer);
        /* Stale frames keep coming (so the peer looks alive), but never our HELLO. */
        while (!slot) {
                fake_peer_send_hello (fx->peer, "ffffffffffffffffffffffffffffffff", 65536);
                test_spin (20);
        }
        result = test_wait_result (&slot);
        g_assert_false (corral_agent_client_connect_fd_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TIMEOUT);
}

/* Requests ------------------------------------------------------------------------------------ */

static void
test_non_utf8_refused (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        cJSON *params = cJSON_CreateObject ();

        connect_peer (fx, 65536);
        cJSON_AddStringToObject (params, "path", "/tmp/\xff\xfe");
        reply = test_call (fx->client, "file.stat", params, &error);
        g_assert_null (reply);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INVALID_REQUEST);
        g_assert_true (corral_agent_client_get_connected (fx->client));
}

static void
test_unknown_ids_ignored (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        g_autoptr (cJSON) req = NULL;
        GAsyncResult *slot = NULL;
        cJSON *params;
        guint8 credit[4] = { 0, 0, 1, 0 };
        guint64 id;

        connect_peer (fx, 65536);
        corral_agent_client_call_async (fx->client, "m", NULL, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);

        fake_peer_send_result (fx->peer, id + 1000, obj_with_bool ("wrong"));
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, 1, 999, "abc", 3);
        fake_peer_send (fx->peer, PROTO_FRAME_CREDIT, 0, 999, credit, 4);
        fake_peer_send (fx->peer, PROTO_FRAME_CLOSE, 0, 999, NULL, 0);
        fake_peer_send_json (fx->peer, PROTO_FRAME_EVENT,
                             proto_event_new ("future.event", cJSON_CreateObject ()));
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "proc", 3);
        cJSON_AddNumberToObject (params, "channel", 999);
        cJSON_AddNumberToObject (params, "code", 0);
        fake_peer_send_json (fx->peer, PROTO_FRAME_EVENT, proto_event_new ("exec.exit", params));
        fake_peer_send_result (fx->peer, id, obj_with_bool ("right"));

        result = test_wait_result (&slot);
        reply = corral_agent_client_call_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_nonnull (cJSON_GetObjectItem (reply, "right"));
        g_assert_true (corral_agent_client_get_connected (fx->client));
        g_assert_false (fx->disconnected);
}

static void
test_error_sanitized (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        g_autoptr (cJSON) req = NULL;
        g_autoptr (GString) msg =
                g_string_new ("\x1b]0;owned\x07\x1b[31mred\nline\r\t\xe2\x80\xae");
        GAsyncResult *slot = NULL;
        guint64 id;

        for (int i = 0; i < 2000; i++)
                g_string_append (msg, "long ");
        connect_peer (fx, 65536);
        corral_agent_client_call_async (fx->client, "m", NULL, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);
        fake_peer_send_json (fx->peer, PROTO_FRAME_RESPONSE,
                             proto_error_response_new (id, "not-found", msg->str, ENOENT));
        result = test_wait_result (&slot);
        reply = corral_agent_client_call_finish (fx->client, result, &error);
        g_assert_null (reply);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND);
        g_assert_cmpuint (strlen (error->message), <=, 300);
        for (const char *p = error->message; *p; p++)
                g_assert_false (g_ascii_iscntrl (*p));
        g_assert_null (strstr (error->message, "\xe2\x80\xae"));
        g_assert_nonnull (strstr (error->message, "red line"));
        g_assert_nonnull (strstr (error->message, "ENOENT"));
}

static void
test_cancel_drops_reply (Fixture *fx, gconstpointer data)
{
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = NULL;
        g_autoptr (cJSON) req = NULL;
        g_autoptr (cJSON) req2 = NULL;
        GAsyncResult *slot = NULL;
        guint64 id, id2;

        connect_peer (fx, 65536);
        corral_agent_client_call_async (fx->client, "slow", NULL, cancellable, test_store_result,
                                        &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);
        g_cancellable_cancel (cancellable);
        result = test_wait_result (&slot);
        g_assert_null (corral_agent_client_call_finish (fx->client, result, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_clear_error (&error);
        g_clear_object (&result);

        /* The late reply is ignored, the next request gets a fresh id and its own reply. */
        fake_peer_send_result (fx->peer, id, obj_with_bool ("late"));
        corral_agent_client_call_async (fx->client, "next", NULL, NULL, test_store_result, &slot);
        req2 = fake_peer_read_request (fx->peer, &id2, NULL);
        g_assert_cmpuint (id2, >, id);
        fake_peer_send_result (fx->peer, id2, obj_with_bool ("next"));
        result = test_wait_result (&slot);
        reply = corral_agent_client_call_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_nonnull (cJSON_GetObjectItem (reply, "next"));
        g_assert_true (corral_agent_client_get_connected (fx->client));
}

static void
test_reconnect (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) req = NULL;
        g_autoptr (cJSON) req2 = NULL;
        g_autofree char *nonce1 = NULL;
        g_autofree char *nonce2 = NULL;
        GAsyncResult *slot = NULL;
        guint64 id1, id2;
        int fd;

        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, NULL, test_store_result, &slot);
        nonce1 = fake_peer_read_hello (fx->peer);
        fake_peer_send_hello (fx->peer, nonce1, 65536);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_connect_fd_finish (fx->client, result, NULL));
        g_clear_object (&result);

        corral_agent_client_call_async (fx->client, "pending", NULL, NULL, test_store_result,
                                        &slot);
        req = fake_peer_read_request (fx->peer, &id1, NULL);
        close (fx->peer->fd);
        fx->peer->fd = -1;
        result = test_wait_result (&slot);
        g_assert_null (corral_agent_client_call_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST);
        g_assert_true (fx->disconnected);
        g_assert_error (fx->disconnect_error, CORRAL_AGENT_ERROR,
                        CORRAL_AGENT_ERROR_CONNECTION_LOST);
        g_assert_false (corral_agent_client_get_connected (fx->client));
        g_clear_error (&error);
        g_clear_object (&result);

        /* While disconnected, requests fail at once. */
        corral_agent_client_call_async (fx->client, "x", NULL, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        g_assert_null (corral_agent_client_call_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST);
        g_clear_error (&error);
        g_clear_object (&result);

        fake_peer_free (fx->peer);
        fx->peer = fake_peer_new (&fd);
        corral_agent_client_connect_fd_async (fx->client, fd, NULL, test_store_result, &slot);
        nonce2 = fake_peer_read_hello (fx->peer);
        g_assert_cmpstr (nonce1, !=, nonce2);
        /* The agent's answer to the old HELLO, still in the pipe, must not count. */
        fake_peer_send_hello (fx->peer, nonce1, 8192);
        fake_peer_send_hello (fx->peer, nonce2, 65536);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_connect_fd_finish (fx->client, result, NULL));
        g_assert_cmpuint (corral_agent_client_get_window (fx->client), ==, 65536);
        g_clear_object (&result);

        corral_agent_client_call_async (fx->client, "after", NULL, NULL, test_store_result, &slot);
        req2 = fake_peer_read_request (fx->peer, &id2, NULL);
        g_assert_cmpuint (id2, >, id1);
        fake_peer_send_result (fx->peer, id2, NULL);
        result = test_wait_result (&slot);
        g_clear_pointer (&req, cJSON_Delete);
        req = corral_agent_client_call_finish (fx->client, result, &error);
        g_assert_no_error (error);
}

/* Protocol violations ---------------------------------------------------------------------------- */

static void
violation_case (Fixture *fx, const void *bytes, gsize len)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) req = NULL;
        GAsyncResult *slot = NULL;
        guint64 id;

        connect_peer (fx, 65536);
        corral_agent_client_call_async (fx->client, "m", NULL, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);
        fake_peer_send_raw (fx->peer, bytes, len);
        result = test_wait_result (&slot);
        g_assert_null (corral_agent_client_call_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST);
        assert_protocol_error (fx);
}

static void
test_oversized_frame (Fixture *fx, gconstpointer data)
{
        guint8 header[PROTO_HEADER_SIZE];

        proto_header_encode (header, PROTO_FRAME_RESPONSE, 0, 0, PROTO_MAX_PAYLOAD + 1);
        violation_case (fx, header, sizeof header);
}

static void
test_bad_magic (Fixture *fx, gconstpointer data)
{
        guint8 header[PROTO_HEADER_SIZE];

        proto_header_encode (header, PROTO_FRAME_RESPONSE, 0, 0, 2);
        header[1] = 0x7B;
        violation_case (fx, header, sizeof header);
}

static void
test_bad_json_response (Fixture *fx, gconstpointer data)
{
        g_autofree guint8 *buf = NULL;
        gsize len;

        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_RESPONSE, 0, 0, "{\"id\": 1,", 9, &buf, &len), ==,
                0);
        violation_case (fx, buf, len);
}

static void
test_response_without_id (Fixture *fx, gconstpointer data)
{
        const char *json = "{\"result\": {}}";
        g_autofree guint8 *buf = NULL;
        gsize len;

        g_assert_cmpint (
                proto_frame_build (PROTO_FRAME_RESPONSE, 0, 0, json, strlen (json), &buf, &len), ==,
                0);
        violation_case (fx, buf, len);
}

static void
test_random_garbage (Fixture *fx, gconstpointer data)
{
        for (int round = 0; round < 30; round++) {
                guint8 junk[512];

                for (gsize i = 0; i < sizeof junk; i++)
                        junk[i] = (guint8) g_test_rand_int_range (0, 256);
                junk[0] = 0x00; /* never a magic: the header must be refused */
                violation_case (fx, junk, sizeof junk);
                g_clear_pointer (&fx->peer, fake_peer_free);
                g_clear_error (&fx->disconnect_error);
                fx->disconnected = FALSE;
        }
}

/* Channels and credit ---------------------------------------------------------------------------- */

static CorralProcess *
fake_spawn (Fixture *fx, guint32 *ret_channel)
{
        g_autoptr (CorralExecSpec) spec = NULL;
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) req = NULL;
        GAsyncResult *slot = NULL;
        const char *method = NULL;
        const cJSON *params = NULL;
        const char *argv[] = { "true", NULL };
        cJSON *res;
        int64_t channel;
        guint64 id;
        CorralProcess *proc;

        spec = corral_exec_spec_new_argv (argv);
        corral_agent_client_spawn_async (fx->client, spec, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, &method);
        g_assert_cmpstr (method, ==, "exec.start");
        g_assert_cmpint (proto_json_get_object (req, "params", &params), ==, 0);
        g_assert_cmpint (proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &channel), ==,
                         0);
        res = cJSON_CreateObject ();
        cJSON_AddNumberToObject (res, "proc", 1);
        cJSON_AddNumberToObject (res, "pid", 4242);
        fake_peer_send_result (fx->peer, id, res);
        result = test_wait_result (&slot);
        proc = corral_agent_client_spawn_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_cmpint (corral_process_get_pid (proc), ==, 4242);
        *ret_channel = (guint32) channel;
        return proc;
}

static void
test_data_beyond_credit (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree guint8 *junk = g_malloc0 (4097);
        guint32 channel;

        connect_peer (fx, 4096);
        proc = fake_spawn (fx, &channel);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT, channel, junk, 4097);
        g_assert_false (test_process_wait (proc, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_CONNECTION_LOST);
        assert_protocol_error (fx);
}

static void
test_data_on_input_stream (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralProcess) proc = NULL;
        guint32 channel;

        connect_peer (fx, 4096);
        proc = fake_spawn (fx, &channel);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDIN, channel, "x", 1);
        assert_protocol_error (fx);
}

static void
send_exit (FakePeer *peer, guint32 channel, int code)
{
        cJSON *params = cJSON_CreateObject ();

        cJSON_AddNumberToObject (params, "proc", 1);
        cJSON_AddNumberToObject (params, "channel", channel);
        cJSON_AddNumberToObject (params, "code", code);
        fake_peer_send_json (peer, PROTO_FRAME_EVENT, proto_event_new ("exec.exit", params));
}

/* The refused system calls in exec.exit come from the guest: only short [a-z0-9_] names, at
 * most eight; anything else is a protocol error (SECURITY.md P3, A7). */
static void
test_refused_calls_checked (Fixture *fx, gconstpointer data)
{
        const char *const bad[] = { "[\"\\u001b[31mbpf\"]",
                                    "[\"a b\"]",
                                    "[1]",
                                    "\"bpf\"",
                                    "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]",
                                    "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]",
                                    "[\"\"]" };
        guint i = GPOINTER_TO_UINT (data);
        g_autoptr (CorralProcess) proc = NULL;
        cJSON *params = cJSON_CreateObject ();
        guint32 channel;

        connect_peer (fx, 4096);
        proc = fake_spawn (fx, &channel);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT | PROTO_DATA_EOF, channel,
                        NULL, 0);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDERR | PROTO_DATA_EOF, channel,
                        NULL, 0);
        cJSON_AddNumberToObject (params, "proc", 1);
        cJSON_AddNumberToObject (params, "channel", channel);
        cJSON_AddNumberToObject (params, "code", 1);
        if (i < G_N_ELEMENTS (bad)) {
                cJSON_AddItemToObject (params, "refused", cJSON_Parse (bad[i]));
                fake_peer_send_json (fx->peer, PROTO_FRAME_EVENT,
                                     proto_event_new ("exec.exit", params));
                assert_protocol_error (fx);
                return;
        }
        cJSON_AddItemToObject (params, "refused", cJSON_Parse ("[\"bpf\",\"io_uring_setup\"]"));
        fake_peer_send_json (fx->peer, PROTO_FRAME_EVENT, proto_event_new ("exec.exit", params));
        test_process_wait (proc, NULL);
        g_assert_cmpstrv (corral_process_get_refused_calls (proc),
                          ((const char *const[]){ "bpf", "io_uring_setup", NULL }));
}

static void
test_credit_returned (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GBytes) payload = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree guint8 *chunk = g_malloc0 (4096);
        TestOutput output = { 0 };
        guint32 channel, granted = 0, credits;
        ProtoFrame f;

        connect_peer (fx, 4096);
        proc = fake_spawn (fx, &channel);
        test_output_connect (proc, &output);
        for (int round = 0; round < 4; round++) {
                /* A whole window in small frames, then nothing until the host has consumed and
                 * credited it. */
                for (int i = 0; i < 64; i++)
                        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT, channel,
                                        chunk, 64);
                granted = 0;
                credits = 0;
                while (granted < 4096) {
                        credits++;
                        g_clear_pointer (&payload, g_bytes_unref);
                        g_assert_true (fake_peer_read (fx->peer, &f, &payload));
                        g_assert_cmpint (f.type, ==, PROTO_FRAME_CREDIT);
                        g_assert_cmpuint (f.channel, ==, channel);
                        granted += proto_get_u32 (g_bytes_get_data (payload, NULL));
                }
                /* Never more than consumed, and batched: a CREDIT per quarter window. */
                g_assert_cmpuint (granted, ==, 4096);
                g_assert_cmpuint (credits, <=, 4);
        }
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDOUT | PROTO_DATA_EOF, channel,
                        NULL, 0);
        fake_peer_send (fx->peer, PROTO_FRAME_DATA, PROTO_STREAM_STDERR | PROTO_DATA_EOF, channel,
                        NULL, 0);
        send_exit (fx->peer, channel, 7);
        g_assert_true (test_process_wait (proc, &error));
        g_assert_no_error (error);
        g_assert_cmpint (corral_process_get_exit_code (proc), ==, 7);
        g_assert_cmpuint (output.out->len, ==, 4 * 4096);
        g_assert_false (fx->disconnected);
        test_output_clear (&output);
}

/* The host must not send more than the agent's credit. */
static void
test_write_respects_credit (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) contents = NULL;
        g_autoptr (cJSON) req = NULL;
        g_autofree guint8 *buf = g_malloc (10000);
        GAsyncResult *slot = NULL;
        const cJSON *params = NULL;
        guint8 credit[4];
        int64_t channel;
        gsize received = 0, allowed = 4096;
        gboolean eof = FALSE;
        guint64 id;
        cJSON *res;

        for (gsize i = 0; i < 10000; i++)
                buf[i] = (guint8) i;
        contents = g_bytes_new (buf, 10000);
        connect_peer (fx, 4096);
        corral_agent_client_write_file_async (fx->client, "/tmp/x", contents, CORRAL_WRITE_REPLACE,
                                              0, NULL, test_store_result, &slot);
        req = fake_peer_read_request (fx->peer, &id, NULL);
        g_assert_cmpint (proto_json_get_object (req, "params", &params), ==, 0);
        g_assert_cmpint (proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &channel), ==,
                         0);
        while (!eof) {
                g_autoptr (GBytes) payload = NULL;
                ProtoFrame f;

                if (!fake_peer_read_timeout (fx->peer, received == allowed ? 300 : 10000, &f,
                                             &payload)) {
                        /* Silence once the credit is used up: grant more. */
                        g_assert_cmpuint (received, ==, allowed);
                        proto_put_u32 (credit, 3000);
                        fake_peer_send (fx->peer, PROTO_FRAME_CREDIT, 0, (guint32) channel, credit,
                                        4);
                        allowed += 3000;
                        continue;
                }
                g_assert_cmpint (f.type, ==, PROTO_FRAME_DATA);
                g_assert_cmpuint (f.channel, ==, channel);
                g_assert_cmpuint (f.flags & PROTO_DATA_STREAM_MASK, ==, PROTO_STREAM_STDIN);
                g_assert_cmpmem (g_bytes_get_data (payload, NULL), f.length, buf + received,
                                 f.length);
                received += f.length;
                g_assert_cmpuint (received, <=, allowed);
                eof = (f.flags & PROTO_DATA_EOF) != 0;
        }
        g_assert_cmpuint (received, ==, 10000);
        res = cJSON_CreateObject ();
        cJSON_AddNumberToObject (res, "size", 10000);
        fake_peer_send_result (fx->peer, id, res);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_write_file_finish (fx->client, result, &error));
        g_assert_no_error (error);
}

/* Heartbeats ------------------------------------------------------------------------------------ */

static void
test_heartbeat_silent_peer (Fixture *fx, gconstpointer data)
{
        gint64 start;

        corral_agent_client_set_heartbeat (fx->client, 100, 3);
        connect_peer (fx, 65536);
        /* A peer that answers stays connected... */
        fake_peer_pump (fx->peer, 800);
        g_assert_cmpuint (fx->peer->pings, >=, 3);
        g_assert_false (fx->disconnected);
        /* ...one that goes silent is declared dead. */
        fx->peer->answer_pings = FALSE;
        start = g_get_monotonic_time ();
        fake_peer_pump (fx->peer, 10000);
        g_assert_true (fx->disconnected);
        g_assert_error (fx->disconnect_error, CORRAL_AGENT_ERROR,
                        CORRAL_AGENT_ERROR_CONNECTION_LOST);
        g_assert_cmpint (g_get_monotonic_time () - start, >=, 250 * 1000);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/agent-fake/handshake/stale-frames-dropped", test_stale_frames_dropped);
        ADD ("/agent-fake/handshake/unsupported-version", test_hello_unsupported);
        ADD ("/agent-fake/handshake/future-version", test_hello_future_version);
        ADD ("/agent-fake/handshake/bad-window", test_hello_bad_window);
        ADD ("/agent-fake/handshake/cancelled", test_connect_cancelled);
        ADD ("/agent-fake/handshake/timeout", test_handshake_timeout);
        ADD ("/agent-fake/request/unknown-ids-ignored", test_unknown_ids_ignored);
        ADD ("/agent-fake/request/non-utf8-refused", test_non_utf8_refused);
        ADD ("/agent-fake/request/error-sanitized", test_error_sanitized);
        ADD ("/agent-fake/request/cancel-drops-reply", test_cancel_drops_reply);
        ADD ("/agent-fake/request/reconnect", test_reconnect);
        ADD ("/agent-fake/violation/oversized-frame", test_oversized_frame);
        ADD ("/agent-fake/violation/bad-magic", test_bad_magic);
        ADD ("/agent-fake/violation/bad-json-response", test_bad_json_response);
        ADD ("/agent-fake/violation/response-without-id", test_response_without_id);
        ADD ("/agent-fake/violation/random-garbage", test_random_garbage);
        ADD ("/agent-fake/violation/data-beyond-credit", test_data_beyond_credit);
        ADD ("/agent-fake/violation/data-on-input-stream", test_data_on_input_stream);
        for (guint i = 0; i <= 7; i++) {
                g_autofree char *path =
                        i < 7 ? g_strdup_printf ("/agent-fake/violation/refused-calls-bad-%u", i)
                              : g_strdup ("/agent-fake/request/refused-calls");

                g_test_add (path, Fixture, GUINT_TO_POINTER (i), fixture_setup,
                            test_refused_calls_checked, fixture_teardown);
        }
        ADD ("/agent-fake/credit/returned-in-batches", test_credit_returned);
        ADD ("/agent-fake/credit/write-respects-credit", test_write_respects_credit);
        ADD ("/agent-fake/heartbeat/silent-peer", test_heartbeat_silent_peer);
#undef ADD

        return g_test_run ();
}
