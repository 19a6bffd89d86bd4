/* corral-shm.h — the name of a VM's shared-folder memory (ivshmem) file.
 *
 * The VM manager puts it in the domain (libvirt maps /dev/shm/NAME into QEMU) and the file
 * server maps the same file; both derive it from the VM's folder, which is unique per host.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

#define CORRAL_FS_SHM_MIB 16 /* a power of two (libvirt insists) */

/* "corral-fs-" + 16 hex digits. (transfer full) */
static inline char *
corral_fs_shm_name (const char *vm_dir)
{
        g_autofree char *sum = g_compute_checksum_for_string (G_CHECKSUM_SHA256, vm_dir, -1);

        return g_strdup_printf ("corral-fs-%.16s", sum);
}
