/* corral-vm-remote.h — what a VM on another machine needs there and here.
 *
 * Over a remote libvirt URI (corral_host_uri_is_remote()) nothing of this machine's file system
 * is visible to QEMU. So:
 *   - the image's kernel, initrd and base disk are uploaded into a storage pool on that host
 *     ("corral", a directory pool) under names that carry the image's manifest digest, once:
 *     a VM of the same image reuses them. A "<name>.done" marker volume is created after an
 *     upload completes, so an interrupted upload is never used;
 *   - each VM's disk is a qcow2 overlay volume in that pool over the uploaded base;
 *   - the channels and the serial console are reached through corral-chanbridge, which listens
 *     on the usual sockets in the VM's folder here (agent.sock, fs.sock, net.sock) and copies
 *     the console into console.log, so everything above the manager works unchanged.
 *
 * The pool: "corral" if the host has one; else one is defined as <default pool's folder>/corral,
 * or /var/lib/libvirt/images/corral on a .../system URI without a default pool.
 *
 * All calls block (the remote host may be slow); the manager runs them in its worker threads.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <libvirt/libvirt.h>

#include "corral-vm-manager.h"

G_BEGIN_DECLS

#define CORRAL_REMOTE_POOL "corral"

G_DEFINE_AUTOPTR_CLEANUP_FUNC (virStoragePool, virStoragePoolFree)

/* The pool, active (defined, built and started the first time). (transfer full) */
virStoragePoolPtr _corral_remote_pool_ensure (virConnectPtr conn, GError **error);

/* Uploads the local file as volume vol_name unless a complete one is there already.
 * Returns: (transfer full) the volume's path on the remote host. */
char *_corral_remote_upload (virStoragePoolPtr pool,
                             const char *local_path,
                             const char *vol_name,
                             const CorralVmSpec *progress,
                             GError **error);

/* Creates vol_name, a qcow2 overlay over backing (a qcow2 path on the remote host) with the
 * virtual size of local_base (the same image here). Replaces a leftover of that name.
 * Returns: (transfer full) its path on the remote host. */
char *_corral_remote_overlay_create (virStoragePoolPtr pool,
                                     const char *vol_name,
                                     const char *backing,
                                     const char *local_base,
                                     GError **error);

/* Deletes vol_name from the pool when it is there. */
gboolean _corral_remote_volume_delete (virConnectPtr conn, const char *vol_name, GError **error);

/* For a VM about to be created there: uploads its image (once per image: names carry the
 * manifest's digest, or the file's without a manifest), makes its disk an overlay volume, and
 * replaces spec's kernel, initrd and disk (owned strings) with the paths on that host. Refuses
 * spec->vnc (the view needs QEMU on this machine). */
gboolean
_corral_remote_prepare (virConnectPtr conn, const char *uri, CorralVmSpec *spec, GError **error);

/* The overlay volume of VM name. (transfer full) */
char *_corral_remote_disk_volume_name (const char *name);

/* Where corral-chanbridge is (corral_paths_helper: $CORRAL_CHANBRIDGE_PATH, build tree, install). */
const char *_corral_remote_bridge_path (void);

/* Makes sure the VM's corral-chanbridge runs (it keeps a lock in the VM's folder), and waits
 * until its agent socket is there. */
gboolean _corral_remote_bridge_ensure (const char *uri,
                                       const char *domain_name,
                                       const char *vm_dir,
                                       GError **error);

G_END_DECLS
