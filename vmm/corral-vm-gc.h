/* corral-vm-gc.h — what `corralctl gc` may delete, and deleting it.
 *
 * Two kinds of garbage:
 *  - VM folders (<state dir>/vms/NAME) whose VM has no libvirt domain any more;
 *  - images in the image cache (NAME-HEX folders with a manifest.json) that are not the newest
 *    of their name and that no VM uses: a VM uses an image when its domain metadata records the
 *    sha256 of the image's manifest.json, when its domain XML names a file in the image folder
 *    (kernel, initrd), or when a qcow2 file in its folder is backed by a file in it.
 * The selection is a pure function of the file system and of what the domains say, so tests
 * run it on temporary folders.
 *
 * Over a remote libvirt URI, the volumes in the "corral" storage pool there too
 * (corral-vm-remote.h): a VM's overlay whose VM is gone, and an uploaded image file that no
 * domain there names and no kept overlay is backed by (with its ".done" marker, removed first,
 * so a half-removed image is uploaded again rather than booted).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-vm-manager.h"

G_BEGIN_DECLS

typedef enum {
        CORRAL_GC_VM_DIR,
        CORRAL_GC_IMAGE,
        CORRAL_GC_REMOTE_VOLUME, /* path: on the libvirt host; volume: its name in the pool */
} CorralGcKind;

typedef struct {
        CorralGcKind kind;
        char *path;
        char *volume; /* CORRAL_GC_REMOTE_VOLUME only */
        guint64 bytes; /* allocated on disk */
        char *reason;
} CorralGcItem;

void corral_gc_item_free (CorralGcItem *item);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralGcItem, corral_gc_item_free)

typedef struct {
        const char *vms_dir; /* <state dir>/vms */
        const char *images_dir; /* corral_image_cache_dir () */
        const char *const *live_vms; /* names of the VMs that have a domain */
        const char *const *used_manifests; /* manifest sha256s from the domains' metadata */
        const char *const *used_texts; /* domain XMLs: an image folder named in one is in use */
        guint min_age_s; /* VM folders younger than this are spared (a create in progress) */
} CorralGcInput;

/* Returns: (transfer full) (element-type CorralGcItem) the garbage, VM folders first, each
 * group sorted by path. Missing folders are empty, not errors. */
GPtrArray *corral_gc_select (const CorralGcInput *input, GError **error);

/* A volume of the remote pool, as listed there. */
typedef struct {
        const char *name;
        const char *path;
        const char *backing; /* nullable: the backing file of an overlay */
        guint64 bytes; /* allocated */
        gint64 mtime; /* seconds since the epoch, 0 when unknown */
} CorralGcVolume;

/* Appends the remote pool's garbage to items (sorted by name). live_vms and used_texts as in
 * CorralGcInput; volumes younger than min_age_s (an upload in progress) are spared. */
void corral_gc_select_volumes (const CorralGcVolume *vols,
                               gsize n_vols,
                               const char *const *live_vms,
                               const char *const *used_texts,
                               gint64 now,
                               guint min_age_s,
                               GPtrArray *items);

/* Deletes the item's folder recursively (symlinks are removed, never followed). Not for
 * CORRAL_GC_REMOTE_VOLUME: see corral_vm_manager_gc_remove(). */
gboolean corral_gc_remove (const CorralGcItem *item, GError **error);

/* Deletes any item: a remote volume through the manager's connection (blocking, a few libvirt
 * calls), anything else with corral_gc_remove(). */
gboolean
corral_vm_manager_gc_remove (CorralVmManager *self, const CorralGcItem *item, GError **error);

/* Gathers the input from the manager's domains (blocking libvirt calls, in a thread) and
 * selects. Result: (transfer full) (element-type CorralGcItem). */
void corral_vm_manager_gc_select_async (CorralVmManager *self,
                                        const char *images_dir,
                                        GCancellable *cancellable,
                                        GAsyncReadyCallback callback,
                                        gpointer user_data);
GPtrArray *
corral_vm_manager_gc_select_finish (CorralVmManager *self, GAsyncResult *result, GError **error);

G_END_DECLS
