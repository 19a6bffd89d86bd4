/* corralctl-vm.h — `corralctl vm ...` and `corralctl exec VM -- CMD`.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

int corralctl_vm_main (int argc, char **argv);

/* Opens the VM manager and connects a client to VM name's agent (waiting for it to boot). */
gboolean corralctl_vm_connect (const char *name,
                               CorralVmManager **ret_manager,
                               CorralAgentClient **ret_client,
                               GError **error);
