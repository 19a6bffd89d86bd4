/* fs-server-private.h — the server's tables, shared by fs-server.c and fs-ops*.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <sys/stat.h>

#include "fs-journal.h"
#include "fs-own.h"
#include "fs-paths.h"
#include "fs-server.h"

#define FS_MAX_DEPTH 256
#define FS_MAX_PATH 4096
#define FS_KEEP_MAX (64u * 1024u * 1024u) /* largest file rw-nodelete keeps on replace */
/* Kept copies are bounded per VM (the keep folder) and by the free space left on its disk. */
#define FS_KEEP_QUOTA ((uint64_t) FS_KEPT_SPACE_DEFAULT_MIB << 20)
#define FS_KEEP_MIN_FREE ((uint64_t) 1 << 30)

typedef struct _FsNode FsNode;

typedef struct {
        gint refs;
        char *name;
        char *host_path;
        int root_fd; /* O_PATH | O_DIRECTORY */
        dev_t dev;
        ino_t ino;
        FsMode mode;
        FsPathRules *paths; /* protected and hidden paths */
        char **extra; /* the share's own protected patterns, for listing */
        bool removed;
        FsNode *root_node; /* while the guest holds it */
        /* "dev:ino:btime" of the folders the guest created in this session: a git directory
         * created here is the agent's own repository (its config may be replaced, checked). */
        GHashTable *created;
} FsShare;

struct _FsNode {
        uint64_t id;
        uint64_t nlookup; /* entries given to the guest's kernel; only FORGET takes them back */
        guint nholds; /* references the server itself holds: open handles, an op in progress */
        guint n_children; /* child nodes that point here */
        FsNode *parent; /* NULL for a share root, and once detached */
        char *name;
        FsShare *share; /* strong */
        GHashTable *children; /* name -> FsNode (borrowed) */
        bool detached; /* unlinked or replaced by the guest: ESTALE */
        bool is_share_root;
        /* what the client last cached, for FS_OPEN_KEEP_CACHE */
        int64_t cached_mtime_s;
        uint32_t cached_mtime_ns;
        uint64_t cached_size;
};

typedef struct {
        uint64_t id;
        int fd; /* real fd (regular file or directory); -1 for the workspace root listing */
        FsShare *share; /* strong; NULL for the workspace root */
        FsNode *node; /* holds one lookup reference */
        bool is_dir;
        bool can_read, can_write;
        uint64_t written; /* bytes written, logged at release */
        bool truncated; /* opened with O_TRUNC: changed even with nothing written */
        int64_t dir_pos; /* directory position (d_off of the last entry returned) */
} FsHandle;

struct _FsServer {
        GHashTable *shares; /* name -> FsShare (strong) */
        GHashTable *nodes; /* &id -> FsNode (owned) */
        GHashTable *handles; /* &id -> FsHandle (owned) */
        uint64_t next_node;
        uint64_t next_handle;
        guint max_handles, max_nodes;
        char *keep_dir;
        FsJournal *journal; /* KEEP_DIR/changes.jsonl (fs-journal.h) */
        guint keep_serial;
        uint64_t keep_quota, keep_min_free; /* 0: FS_KEEP_QUOTA, FS_KEEP_MIN_FREE */
        uint64_t keep_used; /* charged to the quota; counted from the folder on first use */
        bool keep_counted;
        gint64 keep_recounted; /* monotonic µs of the last recount at the quota */
        GHashTable *keep_last; /* "share/path" -> the path of its latest kept copy */
        GHashTable *keep_made; /* "dev:ino" of the files this server created */
        GHashTable *keep_changed; /* "dev:ino" of the files kept before their first change */
        GHashTable *journal_shares; /* share name -> folder the journal has named */
        CorralPolicy *managed; /* nullable: the organisation's policy */
        char **policy_protected; /* patterns every share gets */
        char **policy_hidden;
        GArray *own_dirs; /* FsDirId: Corral's own folders and the keychain's, never shared */
        uint8_t *shm; /* file contents travel here when the client asks (not owned) */
        size_t shm_size;
        FsAudit *audit;
        FsNotifyFunc notify;
        void *notify_data;
};

/* What an op reports back to the dispatcher for the reply and the audit log. */
typedef struct {
        FsServer *s;
        const FsRequest *q;
        FsWriter *w;
        FsShare *share; /* for audit; borrowed */
        const char *rule; /* set on a policy refusal */
        const char *audit_op; /* set when the op changes something */
        char *path; /* audit path (owned) */
        char *path2; /* audit second path (owned) */
        char *detail; /* what exactly a refusal found, for the audit message (owned) */
        FsShare *share_hold; /* keeps share alive for the audit line when the op drops the
                              * last other reference (a handle of a removed share) */
        int64_t size;
} FsCtx;

/* fs-server.c */
FsShare *fs_share_ref (FsShare *share);
void fs_share_unref (FsShare *share);
/* Whether another handle, or another node, would pass its limit. */
bool fs_server_handles_full (FsServer *s);
bool fs_server_nodes_full (FsServer *s);
FsNode *fs_node_get (FsServer *s, uint64_t id, int *ret_err);
FsNode *fs_node_child (FsServer *s, FsNode *parent, const char *name, size_t len, int *ret_err);
void fs_node_ref_lookup (FsNode *node);
/* Takes back at most the n lookups the guest was given (never the server's holds). */
void fs_node_forget (FsServer *s, FsNode *node, uint64_t n);
/* The server's own references, counted apart from lookups so that no FORGET can drop them:
 * a node is freed only when both counts (and its children) are zero. */
void fs_node_hold (FsNode *node);
void fs_node_release (FsServer *s, FsNode *node);
void fs_node_detach (FsServer *s, FsNode *node);
FsNode *fs_node_find_child (FsNode *parent, const char *name, size_t len);
void fs_node_move (FsServer *s, FsNode *node, FsNode *new_parent, const char *name, size_t len);
FsNode *fs_share_root_node (FsServer *s, FsShare *share, int *ret_err);
FsShare *fs_server_find_share (FsServer *s, const char *name, size_t len);
/* The node's path relative to its share root ("" for the root); -ESTALE, -ENAMETOOLONG. */
int fs_node_path (FsNode *node, char *buf, size_t size);
FsHandle *fs_handle_new (FsServer *s, FsNode *node, int fd, int *ret_err);
FsHandle *fs_handle_get (FsServer *s, uint64_t id, int *ret_err);
void fs_handle_close (FsServer *s, FsHandle *h);
void fs_share_mark_created (FsShare *share, int fd);
/* The key of share->created for a name in dirfd (NULL if it cannot be stat()ed). */
char *fs_created_key_at (int dirfd, const char *name);
bool fs_share_is_created (FsShare *share, int fd);
/* Whether st is one of Corral's own folders (fs_server_set_own_dirs): never shown. */
bool fs_server_is_own_dir (FsServer *s, const struct stat *st);

/* fs-ops-check.c */
typedef enum {
        FS_CHANGE_WRITE, /* content or attributes of what is there */
        FS_CHANGE_REMOVE, /* unlink, rmdir, or renamed away */
        FS_CHANGE_CREATE, /* a new, empty file, folder or link */
        FS_CHANGE_MOVE_IN, /* renamed onto this path, with whatever it holds */
} FsChange;
/* fs_check_change's answer for a regular file renamed onto the config of a repository the
 * guest created: allowed only after its text passes fs_git_config_check. */
#define FS_CHECK_CONFIG 1
/* Whether the guest may make change to path (relative to the share root; dirfd is its
 * folder): hidden and protected paths, folders on the way to them, and git's metadata
 * (fs-git.h). type: S_IFREG, S_IFDIR or S_IFLNK of what arrives (0 otherwise). 0, or
 * FS_CHECK_CONFIG, or a refusal with ctx->rule set. */
int fs_check_change (
        FsCtx *ctx, FsShare *share, int dirfd, const char *path, FsChange change, mode_t type);
/* The same, resolving path's folder itself. */
int fs_check_change_at (FsCtx *ctx, FsShare *share, const char *path, FsChange change, mode_t type);
/* Every rule a rename meets: name (in dirfd, at path) leaves and arrives at npath (newname in
 * ndirfd) — and, for an exchange, the other way too; what it replaces is removed; a repository
 * config arriving is checked (fs_git_config_check); links keep resolving inside the share. */
int fs_check_rename (FsCtx *ctx,
                     FsShare *share,
                     int dirfd,
                     const char *name,
                     const char *path,
                     int ndirfd,
                     const char *newname,
                     const char *npath,
                     bool exchange);
/* Whether path (or, when st is given, the folder it is) is hidden from the guest. */
bool fs_check_hidden (FsServer *s, FsShare *share, const char *path, const struct stat *st);

/* fs-ops.c */
/* The node's path (into path) and an fd of it, opened with flags beneath the share root. */
int fs_node_open (FsNode *node, char *path, size_t size, int flags, int *ret_fd);
int fs_ops_dispatch (FsCtx *ctx);
void fs_stat_to_attr (const struct stat *st, FsAttr *ret);

/* Tells the client to drop its cached entry name in the folder node parent (FS_NOTIFY). */
void fs_server_notify_entry (FsServer *s, uint64_t parent, const char *name);

/* fs-keep.c */
/* Copies the content of in to out (a reflink where the file system has them); 0 or -errno. */
int fs_keep_copy_data (int in, int out);
/* Copies the regular file name in dirfd to the keep folder and logs it (audit_path: its path in
 * the share); 0 or -errno; -EDQUOT when the quota or the free-space floor leaves no room for
 * it (rule FS_RULE_KEEP_FULL: the caller must not drop the file). */
int fs_keep_copy (FsServer *s, FsShare *share, int dirfd, const char *name, const char *audit_path);
/* Before the first change to a file that existed (a write, a truncation, an append, a rename
 * over it, a removal), its content, mode and time are kept (fs_keep_copy) and the journal says
 * where, once per file for this server; files it made (fs_keep_note_made) and other types need
 * nothing, an empty file only its line. pathfd: the file (O_PATH is enough). lossy: the change
 * drops content. 0: it may change. In rw-nodelete a lossy change whose original cannot be kept
 * gets the error (-EFBIG: larger than FS_KEEP_MAX; -EDQUOT: no room; else -errno) and the
 * caller refuses it; otherwise the change goes ahead, logged as one that cannot be undone. */
int fs_keep_before_change (FsServer *s,
                           FsShare *share,
                           int pathfd,
                           const struct stat *st,
                           const char *audit_path,
                           bool lossy);
/* The same for name in dirfd, about to be replaced or removed (never refused in rw). */
int fs_keep_before_drop (
        FsServer *s, FsShare *share, int dirfd, const char *name, const char *audit_path);
/* A journal line for a change done: add (st: what was made), delete (st: what it was), rename
 * (path to "to"; st: what moved, replaced: what was at "to"), meta (st: before the change). */
void fs_keep_note (FsServer *s,
                   FsJournalType type,
                   FsShare *share,
                   const char *path,
                   const char *to,
                   const struct stat *st,
                   const struct stat *replaced,
                   bool exchange);
void fs_keep_note_made (FsServer *s, const struct stat *st);
/* A journal line with the file's size and time as the guest left it (st: after the change),
 * so that an undo can tell whether it changed on the host since. */
void fs_keep_note_wrote (FsServer *s, FsShare *share, const char *path, const struct stat *st);
/* The keep quota per VM and the free space to leave on its disk, in bytes (0: the default). */
void fs_keep_set_limits (FsServer *s, uint64_t quota, uint64_t min_free);
/* Frees what fs-keep.c remembers (fs_server_free). */
void fs_keep_clear (FsServer *s);
