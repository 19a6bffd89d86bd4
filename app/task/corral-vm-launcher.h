/* corral-vm-launcher.h — the task service: the real CorralLauncher. Images, libvirt VMs,
 * shares and the egress daemon through vmm/, mounts/ and keychain-bridge/, every blocking step
 * off the main loop. The desktop app presents it; corralctl runs the same steps
 * (corral-task-start.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_VM_LAUNCHER (corral_vm_launcher_get_type ())
G_DECLARE_FINAL_TYPE (CorralVmLauncher, corral_vm_launcher, CORRAL, VM_LAUNCHER, GObject)

/* The VM manager (vmm/corral-vm-manager.h), not needed to present a task. */
typedef struct _CorralVmManager CorralVmManager;

/* First thing in main(), before any thread exists: libvirt's embedded driver keeps its
 * warnings off the person's terminal. */
void corral_vm_launcher_init_process (void);

CorralVmLauncher *corral_vm_launcher_new (void);
/* (transfer none) (nullable) the libvirt connection, once a start, list or resume opened it.
 * The embedded driver (root) admits one process, so tests act on the VMs through it. */
CorralVmManager *corral_vm_launcher_get_manager (CorralVmLauncher *self);

G_END_DECLS
