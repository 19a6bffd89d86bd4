/* fs-git.h — git's metadata as an allowlist: pure rules, no file system.
 *
 * git on the person's computer runs what a repository's metadata names (core.fsmonitor,
 * core.hooksPath, hooks/, aliases, filters, a commondir or gitdir pointing elsewhere), and
 * shell prompts, editors and IDEs run git on their own. So inside any git directory — a
 * folder named .git, or any folder holding a HEAD — the guest may create and change only
 * what everyday git work writes (objects, refs, logs, the index, HEAD and the other *_HEAD
 * files, ...). A repository's config may be replaced only in a repository the guest created,
 * and only with text whose every key is on an allowlist of keys that cannot run anything.
 * The server applies these rules (fs-ops-check.c); SECURITY.md F19 states them.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

#define FS_GIT_CONFIG_MAX (64u * 1024u)

typedef enum {
        FS_GIT_OK, /* everyday git data: objects, refs, logs, index, *_HEAD, lock files */
        FS_GIT_CONFIG, /* "config": replaced whole and checked, in a created repository only */
        FS_GIT_CONFIG_LOCK, /* "config.lock": git's way to the above; created repository only */
        FS_GIT_REFUSED, /* hooks/, modules/, worktrees/, commondir, gitdir, info/attributes... */
} FsGitEntry;

/* What rel (a path below a git directory, components joined by '/') is. */
FsGitEntry fs_git_entry (const char *rel);

/* ".git", ASCII case-insensitively. */
bool fs_git_is_dot_git (const char *name, size_t len);
/* "HEAD", ASCII case-insensitively: a folder holding one is a git directory to git. */
bool fs_git_is_head (const char *name, size_t len);
/* Names that turn a folder with a HEAD into a repository that runs or redirects things
 * (config, config.worktree, commondir, gitdir, hooks, modules, worktrees): a HEAD may not be
 * added next to one of them outside a .git folder. */
bool fs_git_is_control_name (const char *name, size_t len);

/* Checks a repository config written by the guest: git's syntax (sections, subsections,
 * quoted values, escapes, comments), read strictly — anything git might read differently
 * (continuation lines, keys after a section header on its line, legacy [a.b] headers, NUL,
 * CR, invalid UTF-8) is refused — and every key must be on the allowlist (core format and
 * filemode keys, extensions.objectformat, remote.*.url/fetch/pushurl with plain URLs,
 * branch.*.remote/merge, user.name/email, init.defaultbranch and a few more that run
 * nothing). include, includeIf, alias, filter, diff, core.fsmonitor, core.hooksPath,
 * core.sshCommand, core.pager, core.editor, core.worktree and everything else are refused.
 * Returns TRUE, or FALSE with a short description of the first problem in *ret_problem. */
gboolean fs_git_config_check (const char *text, size_t len, char **ret_problem);
