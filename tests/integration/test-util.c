/* test-util.c — helpers for the agent client integration tests.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include "corral-glib-compat.h"

#include <errno.h>
#include <glib-unix.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000

static gboolean
timeout_cb (gpointer user_data)
{
        *(gboolean *) user_data = TRUE;
        return G_SOURCE_REMOVE;
}

void
test_wait_flag (const gboolean *flag, guint timeout_ms, const char *what)
{
        gboolean timed_out = FALSE;
        guint id = g_timeout_add (timeout_ms, timeout_cb, &timed_out);

        while (!*flag && !timed_out)
                g_main_context_iteration (NULL, TRUE);
        if (!timed_out)
                g_source_remove (id);
        if (!*flag)
                g_error ("timed out after %u ms waiting for %s", timeout_ms, what);
}

void
test_spin (guint ms)
{
        gboolean done = FALSE;

        g_timeout_add (ms, timeout_cb, &done);
        while (!done)
                g_main_context_iteration (NULL, TRUE);
}

void
test_store_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GAsyncResult **slot = user_data;

        g_assert_null (*slot);
        *slot = g_object_ref (result);
}

static gboolean
slot_filled (gpointer slot)
{
        return *(GAsyncResult **) slot != NULL;
}

GAsyncResult *
test_wait_result (GAsyncResult **slot)
{
        gboolean timed_out = FALSE;
        guint id = g_timeout_add (DEFAULT_TIMEOUT_MS, timeout_cb, &timed_out);

        while (!slot_filled (slot) && !timed_out)
                g_main_context_iteration (NULL, TRUE);
        if (!timed_out)
                g_source_remove (id);
        if (!*slot)
                g_error ("timed out waiting for an async result");
        return g_steal_pointer (slot);
}

const char *
test_agent_path (void)
{
        const char *path = g_getenv ("CORRAL_AGENT_PATH");

        if (!path || !*path)
                g_error ("CORRAL_AGENT_PATH is not set");
        return path;
}

/* Local agent ------------------------------------------------------------------------------- */

static void
agent_exited (GPid pid, int status, gpointer user_data)
{
        TestAgent *agent = user_data;

        agent->exited = TRUE;
        agent->wait_status = status;
        agent->child_watch = 0;
        g_spawn_close_pid (pid);
}

TestAgent *
test_agent_spawn (const char *const *extra_args, int *ret_fd)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) args = g_ptr_array_new ();
        TestAgent *agent = g_new0 (TestAgent, 1);

        g_ptr_array_add (args, (gpointer) "--user");
        g_ptr_array_add (args, (gpointer) g_get_user_name ());
        for (const char *const *a = extra_args; a && *a; a++)
                g_ptr_array_add (args, (gpointer) *a);
        g_ptr_array_add (args, NULL);
        corral_agent_client_spawn_local_agent (
                test_agent_path (), (const char *const *) args->pdata, &agent->pid, ret_fd, &error);
        g_assert_no_error (error);
        agent->child_watch = g_child_watch_add (agent->pid, agent_exited, agent);
        return agent;
}

void
test_agent_connect (TestAgent *agent, int fd)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_connect_fd_async (agent->client, fd, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_connect_fd_finish (agent->client, result, &error));
        g_assert_no_error (error);
        g_assert_true (corral_agent_client_get_connected (agent->client));
}

TestAgent *
test_agent_start (guint heartbeat_ms, const char *const *extra_args)
{
        int fd = -1;
        TestAgent *agent = test_agent_spawn (extra_args, &fd);

        agent->client = corral_agent_client_new ();
        if (heartbeat_ms)
                corral_agent_client_set_heartbeat (agent->client, heartbeat_ms, 3);
        test_agent_connect (agent, fd);
        return agent;
}

void
test_agent_wait_exit (TestAgent *agent, guint timeout_ms)
{
        test_wait_flag (&agent->exited, timeout_ms, "the agent to exit");
}

void
test_agent_free (TestAgent *agent)
{
        if (!agent)
                return;
        if (agent->client)
                corral_agent_client_close (agent->client);
        g_clear_object (&agent->client);
        if (!agent->exited) {
                /* EOF must be enough to end the agent; only a hung one gets SIGKILL. */
                gboolean timed_out = FALSE;
                guint id = g_timeout_add (5000, timeout_cb, &timed_out);

                while (!agent->exited && !timed_out)
                        g_main_context_iteration (NULL, TRUE);
                if (!timed_out)
                        g_source_remove (id);
                if (!agent->exited) {
                        kill (agent->pid, SIGKILL);
                        test_agent_wait_exit (agent, 5000);
                        g_error ("the agent did not exit on EOF");
                }
        }
        g_free (agent);
}

/* Synchronous wrappers ------------------------------------------------------------------------- */

cJSON *
test_call (CorralAgentClient *client, const char *method, cJSON *params, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_call_async (client, method, params, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_call_finish (client, result, error);
}

CorralRunResult *
test_run (CorralAgentClient *client, CorralExecSpec *spec, gsize max_output, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_run_async (client, spec, max_output, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_run_finish (client, result, error);
}

CorralRunResult *
test_run_argv (CorralAgentClient *client, const char *const *argv)
{
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (GError) error = NULL;
        CorralRunResult *res = test_run (client, spec, 1024 * 1024, &error);

        g_assert_no_error (error);
        g_assert_nonnull (res);
        return res;
}

CorralProcess *
test_spawn (CorralAgentClient *client, CorralExecSpec *spec, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_agent_client_spawn_async (client, spec, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_agent_client_spawn_finish (client, result, error);
}

gboolean
test_process_wait (CorralProcess *proc, GError **error)
{
        g_autoptr (GAsyncResult) result = NULL;
        GAsyncResult *slot = NULL;

        corral_process_wait_async (proc, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        return corral_process_wait_finish (proc, result, error);
}

static void
on_test_output (CorralProcess *proc, guint stream, GBytes *bytes, gpointer user_data)
{
        TestOutput *output = user_data;
        gsize len;
        const char *data = g_bytes_get_data (bytes, &len);

        g_string_append_len (stream == CORRAL_PROCESS_STDERR ? output->err : output->out, data,
                             (gssize) len);
}

void
test_output_connect (CorralProcess *proc, TestOutput *output)
{
        output->out = g_string_new (NULL);
        output->err = g_string_new (NULL);
        g_signal_connect (proc, "output", G_CALLBACK (on_test_output), output);
}

void
test_output_clear (TestOutput *output)
{
        if (output->out)
                g_string_free (output->out, TRUE);
        if (output->err)
                g_string_free (output->err, TRUE);
        output->out = output->err = NULL;
}

/* Fake peer ------------------------------------------------------------------------------------ */

FakePeer *
fake_peer_new (int *ret_fd)
{
        FakePeer *peer = g_new0 (FakePeer, 1);
        int pair[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair),
                         ==, 0);
        peer->fd = pair[1];
        *ret_fd = pair[0];
        g_assert_cmpint (proto_decoder_init (&peer->dec, 0), ==, 0);
        peer->answer_pings = TRUE;
        return peer;
}

void
fake_peer_free (FakePeer *peer)
{
        if (!peer)
                return;
        if (peer->fd >= 0)
                close (peer->fd);
        proto_decoder_clear (&peer->dec);
        g_free (peer);
}

/* Waits for the peer fd while the client's main loop keeps running; FALSE at the deadline. */
static gboolean
peer_wait (FakePeer *peer, short events, gint64 deadline)
{
        for (;;) {
                struct pollfd pfd = { .fd = peer->fd, .events = events };

                while (g_main_context_iteration (NULL, FALSE))
                        ;
                if (poll (&pfd, 1, 5) > 0)
                        return TRUE;
                if (g_get_monotonic_time () > deadline)
                        return FALSE;
        }
}

/* 1: a frame; 0: EOF; -1: deadline. */
static int
peer_next_any (FakePeer *peer, ProtoFrame *f, gint64 deadline)
{
        for (;;) {
                int r = proto_decoder_next (&peer->dec, f);
                gsize room;
                guint8 *space;
                gssize n;

                g_assert_cmpint (r, >=, 0);
                if (r == 1)
                        return 1;
                space = proto_decoder_space (&peer->dec, &room);
                n = read (peer->fd, space, room);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        if (!peer_wait (peer, POLLIN, deadline))
                                return -1;
                        continue;
                }
                if (n <= 0) {
                        peer->eof = TRUE;
                        return 0;
                }
                proto_decoder_commit (&peer->dec, (gsize) n);
        }
}

gboolean
fake_peer_read_timeout (FakePeer *peer,
                        guint timeout_ms,
                        ProtoFrame *ret_frame,
                        GBytes **ret_payload)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
        ProtoFrame f;

        while (peer_next_any (peer, &f, deadline) == 1) {
                if (f.type == PROTO_FRAME_PING) {
                        guint8 copy[8];

                        peer->pings++;
                        memcpy (copy, f.payload, sizeof copy);
                        if (peer->answer_pings)
                                fake_peer_send (peer, PROTO_FRAME_PONG, 0, 0, copy, sizeof copy);
                        continue;
                }
                if (f.type == PROTO_FRAME_PONG)
                        continue;
                *ret_payload = g_bytes_new (f.payload, f.length);
                *ret_frame = f;
                ret_frame->payload = NULL;
                return TRUE;
        }
        return FALSE;
}

gboolean
fake_peer_read (FakePeer *peer, ProtoFrame *ret_frame, GBytes **ret_payload)
{
        if (fake_peer_read_timeout (peer, DEFAULT_TIMEOUT_MS, ret_frame, ret_payload))
                return TRUE;
        if (!peer->eof)
                g_error ("fake peer: timed out waiting for a frame");
        return FALSE;
}

void
fake_peer_pump (FakePeer *peer, guint ms)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) ms * 1000;

        while (g_get_monotonic_time () < deadline) {
                g_autoptr (GBytes) payload = NULL;
                ProtoFrame f;
                guint left = (guint) ((deadline - g_get_monotonic_time ()) / 1000);

                if (!fake_peer_read_timeout (peer, MAX (left, 1), &f, &payload) && peer->eof)
                        return;
                if (payload)
                        g_error ("fake peer: unexpected %s frame", proto_frame_type_name (f.type));
        }
}

static cJSON *
read_json (FakePeer *peer, guint8 type)
{
        g_autoptr (GBytes) payload = NULL;
        ProtoFrame f;
        cJSON *msg = NULL;
        gsize len;
        const guint8 *data;

        g_assert_true (fake_peer_read (peer, &f, &payload));
        g_assert_cmpstr (proto_frame_type_name (f.type), ==, proto_frame_type_name (type));
        data = g_bytes_get_data (payload, &len);
        g_assert_cmpint (proto_json_parse (data, len, &msg), ==, 0);
        return msg;
}

char *
fake_peer_read_hello (FakePeer *peer)
{
        g_autoptr (cJSON) hello = read_json (peer, PROTO_FRAME_HELLO);
        const char *nonce = NULL, *role = NULL;

        g_assert_cmpint (proto_json_get_string (hello, "role", 0, &role), ==, 0);
        g_assert_cmpstr (role, ==, "host");
        g_assert_cmpint (proto_json_get_string (hello, "nonce", 0, &nonce), ==, 0);
        g_assert_cmpuint (strlen (nonce), ==, PROTO_NONCE_HEX_LEN);
        return g_strdup (nonce);
}

cJSON *
fake_peer_read_request (FakePeer *peer, guint64 *ret_id, const char **ret_method)
{
        cJSON *req = read_json (peer, PROTO_FRAME_REQUEST);

        g_assert_cmpint (proto_json_get_id (req, ret_id), ==, 0);
        if (ret_method)
                g_assert_cmpint (proto_json_get_string (req, "method", 0, ret_method), ==, 0);
        return req;
}

void
fake_peer_send_raw (FakePeer *peer, const void *data, gsize len)
{
        const guint8 *p = data;
        gint64 deadline = g_get_monotonic_time () + DEFAULT_TIMEOUT_MS * 1000;

        while (len > 0) {
                gssize n = send (peer->fd, p, len, MSG_NOSIGNAL);

                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        if (!peer_wait (peer, POLLOUT, deadline))
                                g_error ("fake peer: timed out writing");
                        continue;
                }
                if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                        return; /* the client hung up; the test checks why */
                g_assert_cmpint (n, >, 0);
                p += n;
                len -= (gsize) n;
        }
}

void
fake_peer_send (
        FakePeer *peer, guint8 type, guint8 flags, guint32 channel, const void *payload, gsize len)
{
        g_autofree guint8 *buf = NULL;
        gsize buf_len;

        g_assert_cmpint (proto_frame_build (type, flags, channel, payload, len, &buf, &buf_len), ==,
                         0);
        fake_peer_send_raw (peer, buf, buf_len);
}

void
fake_peer_send_json (FakePeer *peer, guint8 type, cJSON *msg)
{
        g_autoptr (cJSON) owned = msg;
        g_autofree guint8 *buf = NULL;
        gsize len;

        g_assert_cmpint (proto_frame_build_json (type, owned, &buf, &len), ==, 0);
        fake_peer_send_raw (peer, buf, len);
}

void
fake_peer_send_hello (FakePeer *peer, const char *nonce, guint32 window)
{
        cJSON *hello = cJSON_CreateObject ();

        cJSON_AddNumberToObject (hello, "version", 1);
        cJSON_AddStringToObject (hello, "role", "agent");
        cJSON_AddStringToObject (hello, "nonce", nonce);
        cJSON_AddStringToObject (hello, "agent_version", "fake-1");
        cJSON_AddNumberToObject (hello, "window", window);
        cJSON_AddNumberToObject (hello, "max_payload", PROTO_MAX_PAYLOAD);
        cJSON_AddStringToObject (hello, "boot_id", "0123456789abcdef0123456789abcdef");
        fake_peer_send_json (peer, PROTO_FRAME_HELLO, hello);
}

void
fake_peer_send_result (FakePeer *peer, guint64 id, cJSON *result)
{
        fake_peer_send_json (peer, PROTO_FRAME_RESPONSE, proto_response_new (id, result));
}

FakePeer *
fake_peer_connect (CorralAgentClient *client, guint32 window)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *nonce = NULL;
        GAsyncResult *slot = NULL;
        int fd;
        FakePeer *peer = fake_peer_new (&fd);

        corral_agent_client_connect_fd_async (client, fd, NULL, test_store_result, &slot);
        nonce = fake_peer_read_hello (peer);
        fake_peer_send_hello (peer, nonce, window);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_connect_fd_finish (client, result, &error));
        g_assert_no_error (error);
        return peer;
}
