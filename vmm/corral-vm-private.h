/* corral-vm-private.h — what the VM manager shares with its helpers (disk, fork, gc, pool,
 * idle) and nobody else.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <libvirt/libvirt.h>

#include "corral-vm-manager.h"

G_BEGIN_DECLS

/* The manager's libvirt connection (transfer none). */
virConnectPtr _corral_vm_manager_get_conn (CorralVmManager *self);

/* Sets error (code in CORRAL_VM_ERROR) to "what: libvirt's last error". */
void _corral_vm_set_libvirt_error (GError **error, CorralVmError code, const char *what);

/* The domain's state as Corral reports it (crashed and saved included). */
CorralVmState _corral_vm_domain_state (virDomainPtr dom);

/* TRUE, with an error naming what, when the manager's libvirt is on another machine. */
gboolean _corral_vm_manager_refuse_remote (CorralVmManager *self, const char *what, GError **error);

G_END_DECLS
