/* corralctl-vm.h — `corralctl vm ...` and `corralctl exec VM -- CMD`.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

int corralctl_vm_main (int argc, char **argv);

/* Blocking use of _async/_finish pairs in a one-shot command: pass corralctl_got_result with
 * &res (a NULL-initialised GAsyncResult *); corralctl_wait_for (&res) iterates the default main
 * context (which also runs libvirt's event loop) until it is set. */
void corralctl_got_result (GObject *source, GAsyncResult *result, gpointer user_data);
GAsyncResult *corralctl_wait_for (GAsyncResult **slot);

/* Opens the VM manager on the default host selection. */
CorralVmManager *corralctl_vm_open_manager (GError **error);

/* Connects a client to VM name's agent: straight through the socket in the VM's folder when it
 * runs here (*ret_manager is then NULL: no libvirt connection is held), otherwise through a VM
 * manager (waiting for it to boot). */
gboolean corralctl_vm_connect (const char *name,
                               CorralVmManager **ret_manager,
                               CorralAgentClient **ret_client,
                               GError **error);
