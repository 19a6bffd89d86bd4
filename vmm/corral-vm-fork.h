/* corral-vm-fork.h — a new VM from a running or paused VM's state.
 *
 * The source's memory is saved (virDomainSaveFlags) to <fork folder>/fork.save, which stops
 * its QEMU for the length of the save; its disk overlay (if any) is copied to the fork's folder
 * while nothing writes it; the source is restored from the file in the state it was in (its
 * agent connections drop: reconnect with corral_vm_manager_connect_agent_async()); the saved
 * XML gets the fork's name, uuid, folder (agent socket, console log, disk, metadata) and is
 * defined, then restored running from the same file, which is deleted afterwards. The fork
 * is a persistent VM like any other; its agent keeps the source's boot id, files and processes
 * at fork time, and both diverge from there.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

G_BEGIN_DECLS

void corral_vm_manager_fork_async (CorralVmManager *self,
                                   const char *source,
                                   const char *name,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
/* Returns: (transfer full) the fork's CorralVmInfo (running). */
CorralVmInfo *
corral_vm_manager_fork_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Rewrites domain XML saved from SRC_DOMAIN (uuid SRC_UUID, folder SRC_DIR) for the fork
 * NEW_DOMAIN / NEW_UUID / NEW_DIR. Fails when a path of the source is left. Exposed for tests. */
char *corral_vm_fork_rewrite_xml (const char *xml,
                                  const char *src_domain,
                                  const char *src_uuid,
                                  const char *src_dir,
                                  const char *new_domain,
                                  const char *new_uuid,
                                  const char *new_dir,
                                  GError **error);

G_END_DECLS
