/* corral-vm-disk.h — per-VM disks: qcow2 overlays on an image's read-only base, disk usage,
 * and internal qcow2 snapshots of disk-backed VMs.
 *
 * A VM made from a disk-backed image ("standard") gets <VM folder>/disk.qcow2, a qcow2 overlay
 * whose backing file is the image's disk.qcow2 (absolute path). Only the overlay is ever
 * written; the image folder is neither written nor relabelled (the embedded driver runs with
 * security_driver = "none"). Removing the VM removes its folder, overlay included.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

#include <gio/gio.h>

G_BEGIN_DECLS

#define CORRAL_VM_DISK_OVERLAY "disk.qcow2"

/* Creates OVERLAY (qcow2, refuses to overwrite) backed by BASE (qcow2) with qemu-img. Blocks. */
gboolean corral_vm_disk_create_overlay (const char *base, const char *overlay, GError **error);

/* Creates VM_DIR if needed and its overlay on *DISK, then replaces *DISK (g_free'd) by the
 * overlay's path. The create hook of corral-vm-manager.c. Blocks. */
gboolean _corral_vm_disk_prepare (const char *vm_dir, char **disk, GError **error);

/* Copies a disk file, sparse (and reflinked where the file system can). Refuses to overwrite. */
gboolean corral_vm_disk_copy (const char *src, const char *dest, GError **error);

/* Returns: (transfer full) (nullable) the backing file named in a qcow2 header, NULL when the
 * file has none or is not qcow2 (error set only when it cannot be read). */
char *corral_vm_disk_backing_file (const char *path, GError **error);

/* Bytes allocated on disk by the regular files under DIR (recursively); 0 when missing. */
guint64 corral_vm_disk_usage (const char *dir);

/* Internal qcow2 snapshots (virDomainSnapshotCreateXML / virDomainRevertToSnapshot). Running
 * VMs get a full checkpoint (disk + memory: revert resumes where the snapshot was taken);
 * shut-off VMs a disk-only one. VMs without a disk are refused (CORRAL_VM_ERROR_INVALID_STATE). */
typedef enum {
        CORRAL_VM_SNAPSHOT_CREATE,
        CORRAL_VM_SNAPSHOT_REVERT,
        CORRAL_VM_SNAPSHOT_DELETE,
} CorralVmSnapshotOp;

void corral_vm_manager_snapshot_async (CorralVmManager *self,
                                       const char *name,
                                       const char *snapshot,
                                       CorralVmSnapshotOp op,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
gboolean
corral_vm_manager_snapshot_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

/* Result: (transfer full) NULL-terminated snapshot names, oldest first. */
void corral_vm_manager_snapshot_list_async (CorralVmManager *self,
                                            const char *name,
                                            GCancellable *cancellable,
                                            GAsyncReadyCallback callback,
                                            gpointer user_data);
char **corral_vm_manager_snapshot_list_finish (CorralVmManager *self,
                                               GAsyncResult *result,
                                               GError **error);

G_END_DECLS
