/* agent-peer.h — a raw-frame host for tests: starts the real corral-agent on a socketpair
 * (--fd 3) and speaks frames with the proto helpers, nothing else in between.
 *
 * Environment: CORRAL_AGENT_PATH (the agent, set by tests/meson.build), CORRAL_AGENT_WRAPPER
 * (optional command line to run the agent under, e.g. valgrind), CORRAL_AGENT_VERBOSE=1.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "proto.h"
#include "corral-cjson.h"

/* Like g_assert_true, but never returns on failure (the compiler knows it). */
#define peer_require(x)                                                                            \
        do {                                                                                       \
                if (!(x))                                                                          \
                        g_error ("%s:%d: assertion failed: %s", __FILE__, __LINE__, #x);           \
        } while (0)

typedef struct {
        guint8 type;
        guint8 flags;
        guint32 channel;
        GBytes *payload;
} PeerFrame;

typedef struct {
        pid_t pid;
        int fd;
        ProtoDecoder dec;
        GQueue pending; /* PeerFrame*: read but not yet taken */
        gboolean eof;
        guint64 next_id;
} AgentPeer;

typedef gboolean (*PeerMatch) (const PeerFrame *f, gconstpointer data);

/* Timeouts scale up when the agent runs under a wrapper such as valgrind. */
int peer_timeout (int ms);
gboolean peer_wrapped (void);

/* extra: NULL-terminated extra agent arguments; with_user adds --user <current user>. */
AgentPeer *peer_spawn (const char *const *extra, gboolean with_user);
/* Closes the stream and returns the agent's wait status (waits at most a few seconds, then
 * kills it and fails). */
int peer_finish (AgentPeer *p);
void peer_frame_free (PeerFrame *f);
gboolean peer_alive (AgentPeer *p);
long peer_rss_kb (AgentPeer *p);

void peer_send_raw (AgentPeer *p, const void *data, gsize len);
void peer_send_frame (
        AgentPeer *p, guint8 type, guint8 flags, guint32 channel, const void *payload, gsize len);
void peer_send_text (AgentPeer *p, guint8 type, const char *json);
/* Sends a REQUEST with a fresh id ("params" is JSON text or NULL) and returns the id. */
guint64 peer_request (AgentPeer *p, const char *method, const char *params_json);
void peer_credit (AgentPeer *p, guint32 channel, guint32 n);

/* The next frame that matches (frames read meanwhile stay pending), or NULL on timeout/EOF. */
PeerFrame *peer_take (AgentPeer *p, PeerMatch match, gconstpointer data, int timeout_ms);
/* Any frame at all within timeout_ms (for "nothing arrives" checks). */
PeerFrame *peer_any (AgentPeer *p, int timeout_ms);

/* HELLO with a fresh nonce; returns the agent's HELLO (nonce checked). */
cJSON *peer_hello (AgentPeer *p);
/* The RESPONSE for id, parsed; fails the test on timeout. */
cJSON *peer_response (AgentPeer *p, guint64 id);
/* A RESPONSE with "id": null (requests whose id could not be read). */
cJSON *peer_null_response (AgentPeer *p);
/* Asserts an error response with this code. */
void peer_assert_error (AgentPeer *p, guint64 id, const char *code);
/* Asserts a success response; returns "result" (owned by the returned root, freed by caller via
 * the root). */
cJSON *peer_result (AgentPeer *p, guint64 id, cJSON **ret_root);
/* PING / PONG round trip. */
void peer_assert_pong (AgentPeer *p);

typedef struct {
        GString *out;
        GString *err;
        int eofs;
        cJSON *exit; /* the exec.exit params, owned */
} ExecResult;

/* Collects DATA and EOFs on channel until its exec.exit event, granting credit as it reads. */
gboolean peer_collect_exec (AgentPeer *p, guint32 channel, ExecResult *res, int timeout_ms);
void exec_result_clear (ExecResult *res);
/* exec.start of a shell command on channel; returns the proc id (asserting success). */
guint64 peer_exec_shell (
        AgentPeer *p, const char *shell, guint32 channel, const char *extra_params, pid_t *ret_pid);
