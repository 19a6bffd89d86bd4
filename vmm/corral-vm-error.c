/* corral-vm-error.c — CORRAL_VM_ERROR, and libvirt's last error as a GError.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vm-private.h"

#include <libvirt/virterror.h>

/* clang-format off */
G_DEFINE_QUARK (corral-vm-error-quark, corral_vm_error)
/* clang-format on */

void
_corral_vm_set_libvirt_error (GError **error, CorralVmError code, const char *what)
{
        virErrorPtr err = virGetLastError ();

        g_set_error (error, CORRAL_VM_ERROR, code, "%s: %s", what,
                     err && err->message ? err->message : "unknown libvirt error");
}
