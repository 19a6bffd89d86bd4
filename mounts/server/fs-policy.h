/* fs-policy.h — the rules of a shared folder, as pure functions over relative paths.
 *
 * Nothing here touches the file system. This header names every rule (FS_RULE_*), parses and
 * describes the modes, and decides what can be decided from text alone (a symlink's target).
 * The protected and hidden paths are one table in fs-paths.h, git's metadata rules are in
 * fs-git.h; fs-ops-check.c applies those to a change, and the checks that need the file
 * itself (mode, hard links, special files, limits) are made where each operation opens it, in
 * fs-ops.c. The rules are written out in SECURITY.md ("Shared folders").
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-share-mode.h"

#include <glib.h>
#include <stdbool.h>

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
#define FS_RULE_HIDDEN "hidden-path"
#define FS_RULE_GIT "git-metadata"

/* Symlinks ------------------------------------------------------------------------------------ */

/* The number of components of path ("" has none; empty components do not count). */
int fs_path_depth (const char *path);

/* The strict form of a link the guest makes: a relative target whose ".." components all come
 * before any name. Returns how many ".." it starts with, or -1 when it is absolute, holds a
 * NUL, or climbs after a name ("a/..", "l/../..": a name may itself be a link, so the chain
 * the host follows is not what the text says). */
int fs_symlink_climb (const char *target, size_t target_len);

/* Whether the guest may make a link at link_path (relative to the share root) with this
 * target: the strict form, climbing no higher than the share root. A link allowed here
 * resolves inside the share on the host whatever links it passes through, as long as every
 * link in the share was allowed here (renames keep that: fs-ops.c checks depths). */
bool fs_symlink_target_allowed (const char *link_path, const char *target, size_t target_len);

/* The lenient check for links the guest did not make (the person's own): whether the text
 * stays inside when read alone. Absolute targets are outside. */
bool fs_symlink_target_inside (const char *link_path, const char *target, size_t target_len);

/* Human explanation of a refusal for the audit log and the agent's tool output. */
char *fs_rule_explain (const char *rule, const char *share, FsMode mode, const char *path);
