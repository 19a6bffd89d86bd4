/* fs-server.h — the host file server: shares, the node table, and one request at a time.
 *
 * Transport-free: the daemon (corral-fsd.c) reads FS_REQUEST payloads from the guest and hands
 * them to fs_server_handle(); tests and the fuzzer call it directly. Single-threaded.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs-audit.h"
#include "corral-policy.h"
#include "fs-policy.h"
#include "fs.h"
#include "proto.h"

typedef struct _FsServer FsServer;

/* Called with an FS_NOTIFY payload when the server wants the client to drop cached entries
 * (a share was added, removed or changed mode). */
typedef void (*FsNotifyFunc) (const uint8_t *payload, size_t len, void *user_data);

/* keep_dir: where rw-nodelete keeps the old version of a file that a rename replaced (created
 * on demand, 0700); NULL refuses such renames. audit: borrowed, may be NULL. */
FsServer *fs_server_new (const char *keep_dir, FsAudit *audit);
void fs_server_free (FsServer *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsServer, fs_server_free)

void fs_server_set_notify (FsServer *s, FsNotifyFunc func, void *user_data);

/* Protected and hidden patterns (fs-paths.h) that apply to every share added from now on, on
 * top of the defaults and each share's own (IT policy, `corral-fsd --protect`); both
 * nullable. FALSE for a malformed pattern. */
gboolean fs_server_set_policy_paths (FsServer *s,
                                     const char *const *protected,
                                     const char *const *hidden,
                                     GError **error);

/* The organisation's policy (corral-policy.h; nullable: none): a share it forbids, or in a
 * wider mode than it allows, is refused when added (the person's choice, the control socket
 * or shares.json alike) and a mode change past it is refused. The policy is referenced. Its
 * protected and hidden paths are set with fs_server_set_policy_paths. */
void fs_server_set_managed_policy (FsServer *s, CorralPolicy *policy);

/* Corral's own folders (fs-own.h): a share that is one of them or lies inside one is refused,
 * and inside a share they are hidden like the hidden paths, wherever they were moved. */
void fs_server_set_own_dirs (FsServer *s, const char *const *paths);

/* A share name: 1..64 bytes of UTF-8 letters, digits, '.', '-', '_', ' ', not starting with
 * '.' (it is a folder name in /workspace). */
bool fs_share_name_valid (const char *name);
/* The default name for a host folder: its base name made valid ("shared" if nothing is left). */
char *fs_share_name_for_path (const char *path);

gboolean fs_server_add_share (FsServer *s,
                              const char *name,
                              const char *path,
                              FsMode mode,
                              const char *const *extra_protected,
                              GError **error);
gboolean fs_server_remove_share (FsServer *s, const char *name, GError **error);
gboolean fs_server_set_mode (FsServer *s, const char *name, FsMode mode, GError **error);

typedef struct {
        char *name;
        char *path;
        FsMode mode;
        char **protect; /* this share's extra protected patterns (never NULL) */
} FsShareInfo;

void fs_share_info_free (FsShareInfo *info);
/* (transfer full) (element-type FsShareInfo), in name order */
GPtrArray *fs_server_list_shares (FsServer *s);

/* The share list as shares.json and the control socket carry it:
 * {"shares": [{"name": ..., "path": ..., "mode": "ro", "protect": [...]}, ...],
 *  "kept_space_mib": N (only when chosen)}. (transfer full) */
cJSON *fs_server_shares_to_json (FsServer *s);
/* Adds the shares of such a list and takes its kept space. Entries that cannot be shared (a
 * folder that is gone, a bad name) are skipped with a warning; FALSE when the text is not such
 * a list or its kept space is out of range. */
gboolean fs_server_load_shares_json (FsServer *s, const char *text, size_t len, GError **error);

/* A new connection: forget every node and close every handle of the previous one. */
void fs_server_reset (FsServer *s);

/* The space the originals of changed files may take per VM (its keep folder), in MiB: what the
 * person may choose, and what a VM gets when nobody chose (shares.json's "kept_space_mib"). */
#define FS_KEPT_SPACE_MIN_MIB 64u
#define FS_KEPT_SPACE_MAX_MIB (1024u * 1024u)
#define FS_KEPT_SPACE_DEFAULT_MIB 2048u
/* mib: FS_KEPT_SPACE_MIN_MIB..FS_KEPT_SPACE_MAX_MIB, or 0 for the default. FALSE (and no
 * change) for anything else. Copies already kept stay even beyond a lowered space; the next one
 * is then refused (or, outside rw-nodelete, not kept). */
gboolean fs_server_set_kept_space (FsServer *s, guint mib, GError **error);
/* The same from JSON (shares.json's "kept_space_mib", the control socket's "mib"): FALSE
 * and no change unless item is a whole number that fs_server_set_kept_space() takes. */
gboolean fs_server_set_kept_space_json (FsServer *s, const cJSON *item, GError **error);
/* The space chosen, in MiB; 0 when it is the default. */
guint fs_server_get_kept_space (FsServer *s);
/* The bytes the copies in keep_dir count against that space (their blocks and one more each). */
uint64_t fs_keep_dir_usage (const char *keep_dir);

/* Handles one FS_REQUEST payload. Returns true when a reply is due (its payload is in w,
 * whose capacity must be at least PROTO_MAX_PAYLOAD); FORGET needs none. */
bool fs_server_handle (FsServer *s, const uint8_t *payload, size_t len, FsWriter *w);

/* The shared-memory region for file contents (READ_SHM / WRITE_SHM), mapped by the caller;
 * NULL: those requests fail with EINVAL. */
void fs_server_set_shm (FsServer *s, uint8_t *shm, size_t size);

/* Counters for tests: live nodes and open handles. */
guint fs_server_n_nodes (FsServer *s);
guint fs_server_n_handles (FsServer *s);

/* Limits (tests lower them). */
void fs_server_set_limits (FsServer *s, guint max_handles, guint max_nodes);

/* Which entry path (a file, a link or a folder) in share names now, for asking the person about
 * deleting it: checked as fs_server_approved_delete() checks it (a folder may still be full).
 * ret_id: (transfer full) (nullable) its identity, "dev:ino:birth"; ret_st: (nullable) its
 * stat. (fs-approved.c) */
gboolean fs_server_approved_stat (FsServer *s,
                                  const char *share_name,
                                  const char *path,
                                  char **ret_id,
                                  struct stat *ret_st,
                                  GError **error);
/* The control socket's "stat" reply: {"ok": true, "id": ID, "type": "file" | "folder" | "link",
 * "size": N, "mode": the share's mode, "folder": the share's folder on the host}. */
cJSON *fs_server_approved_stat_json (FsServer *s,
                                     const char *share_name,
                                     const char *path,
                                     GError **error);
/* Deletes path (a file, a link or an empty folder) in share on the person's behalf, whatever
 * the mode, if it still names the entry expected_id (from fs_server_approved_stat() when the
 * person was asked): anything else at that path stays. Resolved beneath the root like a guest
 * request; protected paths, special files and hard-linked files stay refused; a file is copied
 * to the keep folder first. Audited with rule "approved-by-person". (fs-approved.c) */
gboolean fs_server_approved_delete (FsServer *s,
                                    const char *share_name,
                                    const char *path,
                                    const char *expected_id,
                                    GError **error);

/* Undo and keep (fs-undo.c) --------------------------------------------------------------------- */

/* What became of one change the person asked to undo. */
typedef struct {
        char *share;
        char *path; /* as the changes list it */
        char *problem; /* NULL: undone; else why it is as it was, a sentence */
        gboolean changed_since; /* the problem: it changed on this computer since */
} FsUndoOutcome;

void fs_undo_outcome_free (FsUndoOutcome *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsUndoOutcome, fs_undo_outcome_free)

/* Undoes changes from the journal in the server's keep folder (fs-journal.h): which lists them
 * as "SHARE/PATH" the way fs_journal_changes() names them (NULL: every change). Each is undone
 * whole or left as it is with the reason; a file that changed on this computer after the
 * guest last wrote it is left unless force. When no change is left the journal is emptied and
 * the originals removed. Returns one outcome per change (FsUndoOutcome); NULL with an error
 * when the journal cannot be read or which names a change that is not listed. */
GPtrArray *fs_server_undo (FsServer *s, const char *const *which, gboolean force, GError **error);

/* The person keeps every change: the journal is emptied and the originals it names removed. */
gboolean fs_server_keep_all (FsServer *s, GError **error);
