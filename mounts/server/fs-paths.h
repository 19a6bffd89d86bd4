/* fs-paths.h — protected and hidden paths of a shared folder: one table, pure matching.
 *
 * Protected paths are files that programs on the person's computer run or obey without being
 * asked (CI and IDE task files, hook managers, shell start-up files, package-manager configs):
 * the guest may read them but never create, change, move or delete them, in any mode, whether
 * or not they existed before. Hidden paths are the person's secrets and Corral's own files
 * (SSH and GPG keys, cloud and registry credentials, keyrings, browser profiles): the guest
 * cannot see, create or move them at all. Both match at any depth, ASCII case-insensitively.
 * git's own metadata has rules of its own (fs-git.h). SECURITY.md F8 and F20 list this table;
 * a unit test checks that they agree.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

typedef enum {
        FS_PATH_PLAIN,
        FS_PATH_PROTECTED,
        FS_PATH_HIDDEN,
} FsPathClass;

typedef struct {
        const char *pattern; /* components joined by '/'; a trailing '/' covers all beneath */
        FsPathClass cls;
        const char *why; /* what it is, for SECURITY.md and the tests */
} FsPathDefault;

/* The default table, NULL-pattern terminated. */
const FsPathDefault *fs_path_defaults (void);

typedef struct _FsPathRules FsPathRules;

/* The defaults plus extra patterns of each class (nullable). A pattern is a relative path of
 * components ("a/b", "dir/"); a component may start with '*' to match a suffix
 * ("*.code-workspace"). NULL and error for an absolute pattern, an empty component, "." or
 * "..", or more than 64 components. */
FsPathRules *fs_path_rules_new (const char *const *protected_extra,
                                const char *const *hidden_extra,
                                GError **error);
void fs_path_rules_free (FsPathRules *rules);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsPathRules, fs_path_rules_free)

/* Checks one pattern as fs_path_rules_new would. */
gboolean fs_path_pattern_check (const char *pattern, GError **error);

/* The class of path (components joined by '/', relative to the share root; "" is the root):
 * hidden wins over protected. */
FsPathClass fs_path_rules_classify (const FsPathRules *rules, const char *path);

/* Whether path is a folder on the way to a protected or hidden path (".github" of
 * ".github/workflows/", ".local" of ".local/share/keyrings/"): renaming it, or renaming
 * something onto its name, would move those paths out from under their rule. */
bool fs_path_rules_is_ancestor (const FsPathRules *rules, const char *path);
