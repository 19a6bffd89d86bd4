/* corral-shares.h — the app's side of shared folders: the per-VM file server (corral-fsd) and
 * its share list.
 *
 * Each VM has one corral-fsd, started here, detached from the caller so that it lives as long as
 * the VM's shared-folder port (it exits when QEMU closes it). Its state is in the VM's folder:
 *   fs.sock      the VM's port (QEMU listens; corral-fsd connects)
 *   fsd.sock     the control socket (JSON lines: add, remove, set-mode, list, status,
 *                stat, approved-delete, undo, keep-all)
 *   fsd.lock     held by the running server: at most one per VM
 *   shares.json  the share list, kept by the server; edited here directly while it is not running
 *   audit.jsonl  changes and refusals
 *   (STATE/kept/NAME/, next to the VM folders, so that it outlives the VM)
 *                the task's change journal (changes.jsonl) and the originals of what changed
 *
 * Blocking calls (unix sockets on the local machine, a few milliseconds): the app runs them in
 * a GTask thread.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "fs-journal.h"
#include "fs-policy.h"
#include "fs-server.h"

typedef struct {
        char *name;
        char *path;
        FsMode mode;
        char **protect; /* the share's own protected patterns (never NULL) */
} CorralShare;

void corral_share_free (CorralShare *share);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralShare, corral_share_free)

/* Where corral-fsd is (corral_paths_helper: $CORRAL_FSD_PATH, the build tree, the install). */
const char *corral_shares_fsd_path (void);

/* Makes sure the VM's file server runs (starts it when the VM's port exists and no server
 * holds the lock). FALSE with an error when it cannot start. */
gboolean corral_shares_ensure_server (const char *vm_dir, GError **error);

/* How long corralctl and the app wait for a VM's shares to be mounted in the guest, counted from
 * when libvirt started the VM: a boot under TCG fits (it is as long as they wait for the agent). */
#define CORRAL_SHARES_MOUNT_TIMEOUT_MS 120000

/* Returns once the guest has mounted the VM's shares, so that the first command run there sees
 * them (SECURITY.md F17): the guest's file client has answered the running file server's HELLO,
 * which it does only after mounting /workspace. Starts the server if needed (and again if it
 * leaves while its port exists). TRUE at once when the VM shares nothing. FALSE with an error
 * naming the VM's console log when the client has not connected within timeout_ms, or when the
 * server cannot run. Blocks (a few milliseconds when mounted; up to timeout_ms otherwise). */
gboolean corral_shares_wait_mounted (const char *vm_dir,
                                     guint timeout_ms,
                                     GCancellable *cancellable,
                                     GError **error);

/* The share list: from the running server, else from shares.json. (element-type CorralShare) */
GPtrArray *corral_shares_list (const char *vm_dir, GError **error);

/* Adds, removes or changes a share: through the running server (the guest sees it at once),
 * else in shares.json for the next start. name NULL: the folder's base name. protect: more
 * read-only paths for this share (nullable; see SECURITY.md F8). ret_name: the name given. */
gboolean corral_shares_add (const char *vm_dir,
                            const char *path,
                            FsMode mode,
                            const char *name,
                            const char *const *protect,
                            char **ret_name,
                            GError **error);
gboolean corral_shares_remove (const char *vm_dir, const char *name, GError **error);
gboolean corral_shares_set_mode (const char *vm_dir, const char *name, FsMode mode, GError **error);

/* What a path in a share names now, as the running file server sees it (never as the guest
 * says): for asking the person about deleting exactly that. */
typedef struct {
        char *id; /* the server's identity of the entry (device, inode, birth time) */
        GFileType type; /* G_FILE_TYPE_REGULAR, _DIRECTORY or _SYMBOLIC_LINK */
        guint64 size;
        FsMode mode; /* the share's mode */
        char *folder; /* the share's folder on this computer */
} CorralShareEntry;

void corral_share_entry_free (CorralShareEntry *entry);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralShareEntry, corral_share_entry_free)

/* The entry path (relative to the share) names, checked as the delete below checks it (a
 * folder may still be full): protected paths, special and hard-linked files are refused with
 * the reason. Needs the running server. (transfer full) */
CorralShareEntry *corral_shares_approved_stat (const char *vm_dir,
                                               const char *share,
                                               const char *path,
                                               GError **error);

/* What the person approved that the share's mode refuses to the guest: the running file server
 * deletes path (relative to the share: a file, a link or an empty folder) if it still names
 * the entry id (from corral_shares_approved_stat() when the person was asked), keeping a copy
 * of a file in kept/, and records it. Anything else now at that path, and protected paths,
 * stay. Needs the running server. */
gboolean corral_shares_approved_delete (
        const char *vm_dir, const char *share, const char *path, const char *id, GError **error);

/* The folder where the VM's file server keeps its change journal and the originals of what the
 * guest changed: STATE/kept/NAME for vm_dir STATE/vms/NAME (vm_dir need not exist any more). */
char *corral_shares_kept_dir (const char *vm_dir);

/* What the guest changed in the VM's shared folders since its task began (FsJournalChange,
 * sorted by share and path; fs-journal.h), read from the change journal; empty when nothing
 * changed. ret_folders (nullable): share name -> the folder on this computer the journal says
 * it was. ret_complete (nullable): FALSE when the journal filled up (FS_JOURNAL_MAX_SIZE) and
 * later changes were not recorded. NULL with an error naming the file and line when the
 * journal is damaged. */
GPtrArray *corral_shares_changes (const char *vm_dir,
                                  GHashTable **ret_folders,
                                  gboolean *ret_complete,
                                  GError **error);

/* Undoes changes the guest made (fs_server_undo(): which lists "SHARE/PATH" as the changes name
 * them, NULL for all; force also undoes files changed on this computer since), through the
 * running file server, else directly (also once the VM is removed). (element-type
 * FsUndoOutcome) one per change, each undone or saying why not. */
GPtrArray *
corral_shares_undo (const char *vm_dir, const char *const *which, gboolean force, GError **error);

/* The space the originals of changed files may take for this VM (fs_server_set_kept_space():
 * mib in FS_KEPT_SPACE_MIN_MIB..FS_KEPT_SPACE_MAX_MIB, 0 for the default), through the running
 * file server or in shares.json. */
gboolean corral_shares_set_kept_space (const char *vm_dir, guint mib, GError **error);
/* ret_used: the bytes the VM's kept originals count against that space (also once the VM is
 * removed); ret_space: the space, in bytes, or 0 when the VM is gone. Either nullable. FALSE
 * only when shares.json is damaged. */
gboolean corral_shares_kept_space (const char *vm_dir,
                                   guint64 *ret_used,
                                   guint64 *ret_space,
                                   GError **error);

/* Keeps every change: the journal is emptied and the originals it kept are removed. */
gboolean corral_shares_keep_all (const char *vm_dir, GError **error);
