/* test-util.h — helpers for the agent client integration tests.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vmm.h"
#include "proto.h"

#include <glib.h>

G_BEGIN_DECLS

/* Runs the default main context until *flag is set; fails the test after timeout_ms. */
void test_wait_flag (const gboolean *flag, guint timeout_ms, const char *what);
/* Runs the default main context for ms milliseconds. */
void test_spin (guint ms);

/* GAsyncReadyCallback storing a ref to the result in *(GAsyncResult **) user_data. */
void test_store_result (GObject *source, GAsyncResult *result, gpointer user_data);
/* Waits for such a slot to be filled (30 s max) and returns it (transfer full). */
GAsyncResult *test_wait_result (GAsyncResult **slot);

/* A local corral-agent on a socketpair, connected, run as the current user. */
typedef struct {
        GPid pid;
        CorralAgentClient *client;
        gboolean exited;
        int wait_status;
        guint child_watch;
} TestAgent;

/* heartbeat_ms 0 keeps the client's default. */
TestAgent *test_agent_start (guint heartbeat_ms, const char *const *extra_args);
/* Starts the agent process only (for reconnect tests). */
TestAgent *test_agent_spawn (const char *const *extra_args, int *ret_fd);
void test_agent_connect (TestAgent *agent, int fd);
void test_agent_wait_exit (TestAgent *agent, guint timeout_ms);
void test_agent_free (TestAgent *agent);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestAgent, test_agent_free)

/* Synchronous wrappers over the async API (they spin the main loop). */
cJSON *test_call (CorralAgentClient *client, const char *method, cJSON *params, GError **error);
CorralRunResult *
test_run (CorralAgentClient *client, CorralExecSpec *spec, gsize max_output, GError **error);
CorralRunResult *test_run_argv (CorralAgentClient *client, const char *const *argv);
CorralProcess *test_spawn (CorralAgentClient *client, CorralExecSpec *spec, GError **error);
gboolean test_process_wait (CorralProcess *proc, GError **error);

/* Collects a process's output (unbounded; tests only). */
typedef struct {
        GString *out;
        GString *err;
} TestOutput;

void test_output_connect (CorralProcess *proc, TestOutput *output);
void test_output_clear (TestOutput *output);

/* A scripted agent: the test drives the other end of a socketpair with blocking I/O. */
typedef struct {
        int fd;
        ProtoDecoder dec;
        guint64 pings;
        gboolean answer_pings; /* default TRUE */
        gboolean eof;
} FakePeer;

/* Returns the client's end (for connect_fd_async) in *ret_fd. */
FakePeer *fake_peer_new (int *ret_fd);
void fake_peer_free (FakePeer *peer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FakePeer, fake_peer_free)
/* Reads the next frame other than PING (answered) and PONG; payload copied into *ret_payload. */
gboolean fake_peer_read (FakePeer *peer, ProtoFrame *ret_frame, GBytes **ret_payload);
/* The same with a deadline: FALSE on timeout or EOF (peer->eof tells which). */
gboolean fake_peer_read_timeout (FakePeer *peer,
                                 guint timeout_ms,
                                 ProtoFrame *ret_frame,
                                 GBytes **ret_payload);
/* Reads for ms milliseconds, answering PINGs; fails on any other frame. Stops at EOF. */
void fake_peer_pump (FakePeer *peer, guint ms);
/* Reads the host's HELLO and returns its nonce. */
char *fake_peer_read_hello (FakePeer *peer);
/* Reads a REQUEST (answering PINGs on the way). */
cJSON *fake_peer_read_request (FakePeer *peer, guint64 *ret_id, const char **ret_method);
void fake_peer_send_raw (FakePeer *peer, const void *data, gsize len);
void fake_peer_send (
        FakePeer *peer, guint8 type, guint8 flags, guint32 channel, const void *payload, gsize len);
void fake_peer_send_json (FakePeer *peer, guint8 type, cJSON *msg /* transfer full */);
void fake_peer_send_hello (FakePeer *peer, const char *nonce, guint32 window);
void fake_peer_send_result (FakePeer *peer, guint64 id, cJSON *result /* transfer full */);

/* Connects client to a fresh fake peer and completes the handshake. Peer I/O spins the default
 * main context, so the client keeps working while the test reads or writes. */
FakePeer *fake_peer_connect (CorralAgentClient *client, guint32 window);

const char *test_agent_path (void);

G_END_DECLS
