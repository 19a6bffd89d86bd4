/* corral-egress-vm.h — the app's side of a VM's network: its corral-egressd.
 *
 * Each VM has one corral-egressd, started here and detached from the caller, so that it lives
 * as long as the VM's network port (it exits when QEMU closes it). Its state is in the VM's
 * folder:
 *   net.sock            the VM's network port (QEMU listens; corral-egressd connects)
 *   egressd.lock        held by the running daemon: at most one per VM
 *   egress-policy.json  the VM's network policy (corralctl net); followed while running
 *   egress.jsonl        the audit log of every request
 *   egressd.log         what the daemon said (a keychain it could not read, ...)
 *   network-off.txt     why the running daemon turned the VM's network off, in words for the
 *                       person (a program in the VM sent a secret's real value)
 *
 * Every secret in the keychain is bound for the session (each only ever reaches its own hosts);
 * $CORRAL_EGRESS_CA_FILE names extra CA certificates to trust upstream (companies, tests).
 *
 * Blocking calls (a process start, a few milliseconds): the app runs them in a GTask thread.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Where corral-egressd is (corral_paths_helper: $CORRAL_EGRESSD_PATH, build tree, install). */
const char *corral_egress_vm_daemon_path (void);

/* TRUE when a daemon serves the VM in vm_dir. */
gboolean corral_egress_vm_is_running (const char *vm_dir);

/* Makes sure the VM's egress daemon runs (starts it when the VM's network port exists and no
 * daemon holds the lock). TRUE without doing anything for a VM created without a network port. */
gboolean corral_egress_vm_ensure (const char *vm_dir, GError **error);

/* (transfer full) (nullable) why the VM's network is off, in words for the person: its session
 * ended because a program in the VM sent a secret's real value (SECURITY.md K9). Until the VM
 * restarts every request is refused; callers show this where the person looks. */
char *corral_egress_vm_dup_alert (const char *vm_dir);

G_END_DECLS
