/* fs-policy.c — shared-folder rules (see fs-policy.h and SECURITY.md, "Shared folders").
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-policy.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>

int
fs_path_depth (const char *path)
{
        int n = 0;

        for (const char *p = path; *p;) {
                const char *slash = strchr (p, '/');
                if (slash != p)
                        n++;
                if (!slash)
                        break;
                p = slash + 1;
        }
        return n;
}

int
fs_symlink_climb (const char *target, size_t target_len)
{
        int climb = 0;
        bool named = false;
        size_t i = 0;

        if (target_len == 0 || target[0] == '/' || memchr (target, '\0', target_len))
                return -1;
        while (i < target_len) {
                size_t j = i;
                while (j < target_len && target[j] != '/')
                        j++;
                if (j - i == 2 && target[i] == '.' && target[i + 1] == '.') {
                        /* ".." after a name climbs out of wherever that name leads (a link
                         * judged alone is not the chain the host follows): refused. */
                        if (named)
                                return -1;
                        climb++;
                } else if (j - i > 0 && !(j - i == 1 && target[i] == '.')) {
                        named = true;
                }
                i = j + 1;
        }
        return climb;
}

bool
fs_symlink_target_allowed (const char *link_path, const char *target, size_t target_len)
{
        int climb = fs_symlink_climb (target, target_len);

        return climb >= 0 && climb <= fs_path_depth (link_path) - 1;
}

bool
fs_symlink_target_inside (const char *link_path, const char *target, size_t target_len)
{
        /* The link's folder is the starting depth. */
        long depth = fs_path_depth (link_path) - 1;
        size_t i = 0;

        if (target_len == 0 || target[0] == '/' || memchr (target, '\0', target_len))
                return false;
        if (depth < 0)
                return false;

        while (i < target_len) {
                size_t j = i;
                while (j < target_len && target[j] != '/')
                        j++;
                if (j - i == 2 && target[i] == '.' && target[i + 1] == '.') {
                        if (--depth < 0)
                                return false;
                } else if (j - i > 0 && !(j - i == 1 && target[i] == '.')) {
                        depth++;
                }
                i = j + 1;
        }
        return true;
}

char *
fs_rule_explain (const char *rule, const char *share, FsMode mode, const char *path)
{
        if (g_strcmp0 (rule, FS_RULE_READ_ONLY) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: the shared folder “%s” is "
                                           "read-only (“%s”). The person can change it to “Can "
                                           "edit” in the shared folders panel."),
                                        share, fs_mode_describe (mode));
        if (g_strcmp0 (rule, FS_RULE_NO_DELETE) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: “%s” is shared as “Can edit, "
                                           "but not delete”, so %s cannot be deleted or "
                                           "replaced. Ask the person to approve the change."),
                                        share, path);
        if (g_strcmp0 (rule, FS_RULE_PROTECTED) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: %s in “%s” is a protected path "
                                           "(it can run code on the person's computer) and is "
                                           "read-only in every mode."),
                                        path, share);
        if (g_strcmp0 (rule, FS_RULE_HIDDEN) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: %s in “%s” is private to the "
                                           "person (keys, credentials or Corral's own files) and "
                                           "is not shared."),
                                        path, share);
        if (g_strcmp0 (rule, FS_RULE_GIT) == 0)
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: %s in “%s” is git metadata that could run "
                           "code on the person's computer (hooks, configuration, links to "
                           "other repositories). Commits, branches and fetches work; settings "
                           "of a repository the person made must be changed by the person."),
                        path, share);
        if (g_strcmp0 (rule, FS_RULE_HARDLINK) == 0)
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: %s in “%s” has other hard links, "
                           "possibly outside the shared folder, so it is read-only. "
                           "Write a new file and rename it over instead."),
                        path, share);
        if (g_strcmp0 (rule, FS_RULE_SPECIAL) == 0)
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: %s in “%s” is a device, pipe or "
                           "socket; only regular files, folders and links are "
                           "shared."),
                        path, share);
        if (g_strcmp0 (rule, FS_RULE_OUTSIDE) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: %s in “%s” leads outside the "
                                           "shared folder."),
                                        path, share);
        if (g_strcmp0 (rule, FS_RULE_NO_LINKS) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: hard links cannot be made in "
                                           "shared folders (“%s”); copy the file instead."),
                                        share);
        if (g_strcmp0 (rule, FS_RULE_OWNER) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: file owners cannot be changed "
                                           "in shared folders (“%s”)."),
                                        share);
        if (g_strcmp0 (rule, FS_RULE_WORKSPACE) == 0)
                return g_strdup (_ ("Blocked by the sandbox: /workspace only lists the shared "
                                    "folders; ask the person to share another folder."));
        if (g_strcmp0 (rule, FS_RULE_LIMIT) == 0)
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: a limit of the file server was "
                           "reached in “%s” (open files, request or listing size)."),
                        share);
        if (g_strcmp0 (rule, FS_RULE_KEEP_FULL) == 0)
                return g_strdup_printf (
                        _ ("Blocked by the sandbox: “%s” is shared as “Can edit, but not "
                           "delete”, so Corral keeps the old version of every file before it is "
                           "changed or replaced, and could not keep this one (no room is left, "
                           "or the file is larger than 64 MiB); %s was not changed. Ask the "
                           "person to review the kept versions or free disk space, or to share "
                           "the folder as “Can edit”."),
                        share, path);
        return g_strdup_printf (_ ("Blocked by the sandbox in “%s” (%s)."), share, rule);
}
