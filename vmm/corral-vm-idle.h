/* corral-vm-idle.h — idle auto-suspend with wake-on-request for one VM.
 *
 * A CorralVmIdle pauses its VM (virDomainSuspend, through the manager) after timeout_ms
 * without agent requests, and resumes it (virDomainResume) before the next request goes out.
 * While it is paused (and while pausing/resuming), the client's heartbeat is paused, so the
 * silent guest is not declared dead; the client stays connected throughout.
 *
 * The hook for a session object: bracket every request with
 *     corral_vm_idle_acquire_async() ... corral_vm_idle_release()
 * (acquire resumes the VM when needed and holds it running; release restarts the idle clock
 * once nothing is held), or use the call/run wrappers, which do exactly that. A long-running
 * process the session streams from should stay acquired while it runs.
 *
 * Lives on the caller's thread-default main context, like the client.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-process.h"
#include "corral-vm-manager.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_VM_IDLE (corral_vm_idle_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmIdle, corral_vm_idle, CORRAL, VM_IDLE, GObject)

/* Signals:
 *   ::paused ()    the VM was suspended for idleness
 *   ::resumed ()   the VM was resumed for a request
 * timeout_ms 0 disables auto-suspend (acquire still resumes a VM paused by someone else's
 * corral_vm_idle_suspend_now()). The idle clock starts now. */
CorralVmIdle *corral_vm_idle_new (CorralVmManager *manager,
                                  const char *vm_name,
                                  CorralAgentClient *client,
                                  guint timeout_ms);

void corral_vm_idle_set_timeout (CorralVmIdle *self, guint timeout_ms);
guint corral_vm_idle_get_timeout (CorralVmIdle *self);
/* TRUE from the moment a suspend starts until a resume has completed. */
gboolean corral_vm_idle_get_paused (CorralVmIdle *self);
guint corral_vm_idle_get_n_suspends (CorralVmIdle *self);

/* Ensures the VM runs (resuming it when paused) and holds it running until the matching
 * corral_vm_idle_release(). Requests waiting on one resume share it. */
void corral_vm_idle_acquire_async (CorralVmIdle *self,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean corral_vm_idle_acquire_finish (CorralVmIdle *self, GAsyncResult *result, GError **error);
void corral_vm_idle_release (CorralVmIdle *self);

/* Suspends now (unless something is held); for tests and "park this session" commands. */
void corral_vm_idle_suspend_now (CorralVmIdle *self);

/* acquire + corral_agent_client_call_async() + release. */
void corral_vm_idle_call_async (CorralVmIdle *self,
                                const char *method,
                                cJSON *params,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
cJSON *corral_vm_idle_call_finish (CorralVmIdle *self, GAsyncResult *result, GError **error);

/* acquire + corral_agent_client_run_async() + release. */
void corral_vm_idle_run_async (CorralVmIdle *self,
                               CorralExecSpec *spec,
                               gsize max_output,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
CorralRunResult *
corral_vm_idle_run_finish (CorralVmIdle *self, GAsyncResult *result, GError **error);

G_END_DECLS
