/* corral-vm-launcher.h — the real CorralLauncher: images, libvirt VMs, shares and the egress
 * daemon through vmm/, mounts/ and keychain-bridge/; every blocking step off the main loop.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-launcher.h"
#include "corral-vm-manager.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_VM_LAUNCHER (corral_vm_launcher_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmLauncher, corral_vm_launcher, CORRAL, VM_LAUNCHER, GObject)

CorralVmLauncher *corral_vm_launcher_new (void);
/* (transfer none) (nullable) the libvirt connection, once a start, list or resume opened it.
 * The embedded driver (root) admits one process, so tests act on the VMs through it. */
CorralVmManager *corral_vm_launcher_get_manager (CorralVmLauncher *self);

G_END_DECLS
