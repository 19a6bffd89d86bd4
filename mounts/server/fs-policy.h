/* fs-policy.h — the rules of a shared folder, as pure functions over relative paths.
 *
 * Nothing here touches the file system: the server resolves paths and stats files, then asks
 * these functions whether an operation is allowed. The rules are written out in SECURITY.md
 * ("Shared folders"); each returns the name of the rule that refuses, or NULL.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

typedef enum {
        FS_MODE_RO,
        FS_MODE_RW,
        FS_MODE_RW_NODELETE,
} FsMode;

/* Rule names, as they appear in FS_REPLY errors and the audit log. */
#define FS_RULE_READ_ONLY "read-only"
#define FS_RULE_NO_DELETE "no-delete"
#define FS_RULE_PROTECTED "protected-path"
#define FS_RULE_HARDLINK "hardlink"
#define FS_RULE_SPECIAL "special-file"
#define FS_RULE_OUTSIDE "outside-share"
#define FS_RULE_NO_LINKS "no-hardlinks"
#define FS_RULE_LIMIT "limit"
#define FS_RULE_WORKSPACE "workspace-root"
#define FS_RULE_OWNER "ownership"
#define FS_RULE_KEEP_FULL "keep-full" /* no room left for the kept copy a replace needs */

gboolean fs_mode_parse (const char *text, FsMode *ret);
const char *fs_mode_to_string (FsMode mode);
/* "Can read", "Can edit", "Can edit, but not delete" (translatable, for people). */
const char *fs_mode_describe (FsMode mode);

/* Protected paths ----------------------------------------------------------------------------- */

typedef struct _FsProtected FsProtected;

/* The default list (.git/hooks/, .git/config, CI configs, IDE task files, shell rc files) plus
 * extra patterns. A pattern is a relative path of components ("a/b"); a trailing '/' protects
 * everything beneath it. Patterns match at any depth, ASCII case-insensitively. Returns NULL
 * and sets error for a malformed extra pattern (absolute, empty component, "." or ".."). */
FsProtected *fs_protected_new (const char *const *extra, GError **error);
void fs_protected_free (FsProtected *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsProtected, fs_protected_free)

const char *const *fs_protected_defaults (void);

/* Whether path (components joined by '/', relative to the share root, "" for the root) is a
 * protected path. When it is, *ret_anchor_len is the length of the prefix of path that names
 * the anchor: the directory whose creation in this session lifts the protection (the ".git" of
 * ".git/config"; the parent folder of ".bashrc"; 0 when that is the share root). */
bool fs_protected_match (const FsProtected *p, const char *path, size_t *ret_anchor_len);

/* Whether path is a folder on the way to a protected path (".git", ".github", ".vscode"):
 * renaming such a folder, or renaming something onto its name, would move protected paths
 * around, so both are refused unless its anchor was created in this session. Same anchor
 * convention as fs_protected_match (the anchor of ".git" is ".git" itself). */
bool fs_protected_is_ancestor (const FsProtected *p, const char *path, size_t *ret_anchor_len);

/* Whether path lies in a hooks folder (".git/hooks/..."): files created there never get
 * execute bits, even in a repository the agent created. */
bool fs_path_in_hooks (const char *path);

/* Symlinks ------------------------------------------------------------------------------------ */

/* Whether a symlink stored at link_path (relative to the share root) with this target stays in
 * the share when followed, judging the text alone: relative, no NUL, never climbing above the
 * root. Absolute targets are outside. */
bool fs_symlink_target_inside (const char *link_path, const char *target, size_t target_len);

/* Human explanation of a refusal for the audit log and the agent's tool output. */
char *fs_rule_explain (const char *rule, const char *share, FsMode mode, const char *path);
