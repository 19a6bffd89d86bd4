/* corral-process.h — a process running in the guest, seen through the agent channel.
 *
 * Output is not buffered by the host: each DATA frame is emitted as ::output, and the agent gets
 * credit for those bytes only after the handlers return, so a guest that prints gigabytes cannot
 * grow host memory. Frames that arrive before the spawn/attach callback has run are held, at most
 * one credit window, and emitted from an idle source right after it: connect to ::output and
 * ::exited inside that callback, or output is emitted with nobody listening.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-exec-spec.h"

G_BEGIN_DECLS

#define CORRAL_PROCESS_STDOUT 1
#define CORRAL_PROCESS_STDERR 2

#define CORRAL_TYPE_PROCESS (corral_process_get_type ())
G_DECLARE_FINAL_TYPE (CorralProcess, corral_process, CORRAL, PROCESS, GObject)

/* Signals:
 *   ::output (guint stream, GBytes *data)  stream 1 stdout (and PTY output), 2 stderr
 *   ::exited ()                           all output delivered; status getters are valid
 */

void corral_agent_client_spawn_async (CorralAgentClient *self,
                                      CorralExecSpec *spec,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data);
CorralProcess *
corral_agent_client_spawn_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Re-attaches to a (background) process: its ring buffer is replayed, then live output. */
void corral_agent_client_attach_async (CorralAgentClient *self,
                                       guint64 proc_id,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
CorralProcess *
corral_agent_client_attach_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

guint64 corral_process_get_id (CorralProcess *self);
/* The pid inside the guest; 0 when unknown (attach). */
gint64 corral_process_get_pid (CorralProcess *self);
gboolean corral_process_get_exited (CorralProcess *self);
/* -1 unless the process exited normally. */
int corral_process_get_exit_code (CorralProcess *self);
/* 0 unless a signal ended the process. */
int corral_process_get_term_signal (CorralProcess *self);
gboolean corral_process_get_timed_out (CorralProcess *self);
/* The system calls the guest's seccomp filter refused the process (and its children), names
 * checked (SECURITY.md A7); NULL when none, or before it exited. */
const char *const *corral_process_get_refused_calls (CorralProcess *self);

/* Sends data to stdin, in frames within the agent's credit; completes once the last frame has
 * been written to the connection. */
void corral_process_write_async (CorralProcess *self,
                                 GBytes *data,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data);
gboolean corral_process_write_finish (CorralProcess *self, GAsyncResult *result, GError **error);

/* Sends EOF on stdin after the writes already queued. */
void corral_process_close_stdin (CorralProcess *self);
/* Fire and forget; errors are logged at debug level. */
void corral_process_kill (CorralProcess *self, int signum);
void corral_process_resize (CorralProcess *self, guint rows, guint cols);

/* Completes when ::exited has been emitted; fails with CORRAL_AGENT_ERROR_CONNECTION_LOST when
 * the connection drops first, G_IO_ERROR_CANCELLED after corral_process_detach(). */
void corral_process_wait_async (CorralProcess *self,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
gboolean corral_process_wait_finish (CorralProcess *self, GAsyncResult *result, GError **error);

/* Stops streaming; output keeps going into the agent's ring buffer. The process keeps running
 * (if it is a background process, it survives reconnects and can be attached again). */
void corral_process_detach (CorralProcess *self);

/* corral_agent_client_run_async(): spawn, capture, wait. */
typedef struct {
        int exit_code; /* -1 unless the process exited normally */
        int term_signal;
        gboolean timed_out;
        GBytes *stdout_data; /* at most max_output bytes each */
        GBytes *stderr_data;
        gboolean truncated; /* some output past max_output was drained and dropped */
        guint64 stdout_total; /* bytes the process wrote, kept or not */
        guint64 stderr_total;
        GStrv refused_calls; /* corral_process_get_refused_calls(), or NULL */
} CorralRunResult;

void corral_run_result_free (CorralRunResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralRunResult, corral_run_result_free)

/* If the spec asks for stdin, it is closed right away. */
void corral_agent_client_run_async (CorralAgentClient *self,
                                    CorralExecSpec *spec,
                                    gsize max_output,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
CorralRunResult *
corral_agent_client_run_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

G_END_DECLS
