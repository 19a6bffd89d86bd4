/* corral-vm-pool.h — the warm pool: pre-booted VMs whose agent has already said HELLO, handed
 * to a new session instead of a cold boot.
 *
 * Pool VMs are ordinary Corral VMs named "pool-" + 8 hex digits. A second metadata element
 * (namespace CORRAL_POOL_METADATA_NS) records their pool state, set with virDomainSetMetadata()
 * (live and config): absent while booting, state="idle" once the agent answered, state="taken"
 * plus alias="NAME" once handed out. A running domain cannot be renamed, so the alias is what
 * makes a taken VM reachable under the session's name: the manager's lookups (and so every
 * operation, connect_agent included) fall back to it when no VM has that name.
 *
 * size (default 0 = off) is how many idle VMs this object keeps: each handout starts booting a
 * replacement in the background (1 s later, so that under TCG the session's first requests do
 * not compete with the boot for the host's CPUs), one boot at a time. Idle VMs booted by another process (e.g.
 * `corralctl vm pool fill`) are found through their metadata and can be taken too; their agent
 * is connected at take time (a HELLO round trip, no boot).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

G_BEGIN_DECLS

#define CORRAL_POOL_METADATA_NS "https://corral.dev/xmlns/libvirt/pool/1"
#define CORRAL_POOL_METADATA_PREFIX "corralpool"
#define CORRAL_POOL_VM_PREFIX "pool-"

typedef enum {
        CORRAL_VM_POOL_BOOTING, /* no pool metadata yet: booting, or left behind by a crash */
        CORRAL_VM_POOL_IDLE,
        CORRAL_VM_POOL_TAKEN,
} CorralVmPoolState;

const char *corral_vm_pool_state_to_string (CorralVmPoolState state);

typedef struct {
        char *name; /* the VM name, "pool-…" */
        CorralVmPoolState pool_state;
        char *alias; /* nullable: the name it was handed out as */
        CorralVmState state;
} CorralVmPoolEntry;

void corral_vm_pool_entry_free (CorralVmPoolEntry *entry);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralVmPoolEntry, corral_vm_pool_entry_free)

#define CORRAL_TYPE_VM_POOL (corral_vm_pool_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmPool, corral_vm_pool, CORRAL, VM_POOL, GObject)

/* spec: (nullable) what pool VMs boot; its name is ignored, strings are copied. NULL makes a
 * pool that can list, take and drain but not boot. Lives on the caller's thread-default main
 * context.
 *
 * Signals:
 *   ::vm-ready (const char *name)    a VM of this pool became idle (agent connected)
 *   ::boot-failed (GError *error)    a background boot failed; the VM was removed
 */
CorralVmPool *corral_vm_pool_new (CorralVmManager *manager, const CorralVmSpec *spec);

/* How many idle VMs to keep; boots replacements in the background while below it. */
void corral_vm_pool_set_size (CorralVmPool *self, guint size);
guint corral_vm_pool_get_size (CorralVmPool *self);
/* Idle VMs this object holds connected clients for. */
guint corral_vm_pool_get_n_ready (CorralVmPool *self);
/* Boots in flight in this object (0 or 1). */
guint corral_vm_pool_get_n_booting (CorralVmPool *self);

/* TRUE: take hands out only VMs this object booted (never another process's idle pool VM,
 * which may run another image or size), and fill counts only those. Default FALSE. */
void corral_vm_pool_set_take_own (CorralVmPool *self, gboolean take_own);
/* Boots (one at a time) until n idle pool VMs exist, counting those of other processes.
 * Result: how many were booted. */
void corral_vm_pool_fill_async (CorralVmPool *self,
                                guint n,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
gboolean corral_vm_pool_fill_finish (CorralVmPool *self,
                                     GAsyncResult *result,
                                     guint *ret_booted,
                                     GError **error);

/* Result: (transfer full) (element-type CorralVmPoolEntry) every pool VM, sorted by name. */
void corral_vm_pool_list_async (CorralVmPool *self,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
GPtrArray *corral_vm_pool_list_finish (CorralVmPool *self, GAsyncResult *result, GError **error);

/* Hands out an idle VM as alias (a valid VM name no other VM uses or is aliased to): marks it
 * taken in its metadata and returns a connected client to its agent, then starts a replacement
 * boot when the pool is below its size. Fails with CORRAL_VM_ERROR_NO_SUCH_VM when no idle VM
 * exists (the caller boots normally), CORRAL_VM_ERROR_EXISTS when alias is in use.
 * *ret_vm_name: (transfer full) (optional) the pool VM's own name. */
void corral_vm_pool_take_async (CorralVmPool *self,
                                const char *alias,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
CorralAgentClient *corral_vm_pool_take_finish (CorralVmPool *self,
                                               GAsyncResult *result,
                                               char **ret_vm_name,
                                               GError **error);

/* Removes every pool VM that is not taken (idle or booting), this object's ready ones too, and
 * sets size to 0. Result: how many were removed. */
void corral_vm_pool_drain_async (CorralVmPool *self,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data);
gboolean corral_vm_pool_drain_finish (CorralVmPool *self,
                                      GAsyncResult *result,
                                      guint *ret_removed,
                                      GError **error);

/* Removes the idle VMs this object booted and holds (not those of other processes), cancels
 * its background boots (they remove their VM) and sets size to 0. Boots of a fill in flight
 * are the fill's: cancel its cancellable. Result: how many were removed. */
void corral_vm_pool_release_async (CorralVmPool *self,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean corral_vm_pool_release_finish (CorralVmPool *self,
                                        GAsyncResult *result,
                                        guint *ret_removed,
                                        GError **error);

G_END_DECLS
