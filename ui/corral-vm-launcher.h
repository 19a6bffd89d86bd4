/* corral-vm-launcher.h — the real CorralLauncher: images, libvirt VMs, shares and the egress
 * daemon through vmm/, mounts/ and keychain-bridge/; every blocking step off the main loop.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_VM_LAUNCHER (corral_vm_launcher_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmLauncher, corral_vm_launcher, CORRAL, VM_LAUNCHER, GObject)

CorralVmLauncher *corral_vm_launcher_new (void);

G_END_DECLS
