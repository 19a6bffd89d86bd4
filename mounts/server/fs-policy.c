/* fs-policy.c — shared-folder rules (see fs-policy.h and SECURITY.md, "Shared folders").
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-policy.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>

static const char *const default_protected[] = {
        /* git runs these on the host the next time the person uses the repository */
        ".git/hooks/",
        ".git/config",
        /* CI configurations run with the project's secrets */
        ".github/workflows/",
        ".gitlab-ci.yml",
        ".circleci/",
        ".travis.yml",
        "Jenkinsfile",
        "azure-pipelines.yml",
        /* IDE task files and dev containers run commands when the folder is opened */
        ".vscode/tasks.json",
        ".vscode/launch.json",
        ".vscode/settings.json",
        ".devcontainer/",
        ".envrc",
        /* shell start-up files */
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        NULL,
};

typedef struct {
        char **parts; /* components */
        guint n_parts;
        bool dir; /* trailing '/': everything beneath is protected too */
} Pattern;

struct _FsProtected {
        GArray *patterns; /* Pattern */
};

gboolean
fs_mode_parse (const char *text, FsMode *ret)
{
        if (g_strcmp0 (text, "ro") == 0)
                *ret = FS_MODE_RO;
        else if (g_strcmp0 (text, "rw") == 0)
                *ret = FS_MODE_RW;
        else if (g_strcmp0 (text, "rw-nodelete") == 0)
                *ret = FS_MODE_RW_NODELETE;
        else
                return FALSE;
        return TRUE;
}

const char *
fs_mode_to_string (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return "ro";
        case FS_MODE_RW:
                return "rw";
        case FS_MODE_RW_NODELETE:
                return "rw-nodelete";
        }
        g_return_val_if_reached ("ro");
}

const char *
fs_mode_describe (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return _ ("Can read");
        case FS_MODE_RW:
                return _ ("Can edit");
        case FS_MODE_RW_NODELETE:
                return _ ("Can edit, but not delete");
        }
        g_return_val_if_reached ("");
}

const char *const *
fs_protected_defaults (void)
{
        return default_protected;
}

static void
pattern_clear (Pattern *p)
{
        g_strfreev (p->parts);
}

static gboolean
pattern_parse (const char *text, Pattern *ret, GError **error)
{
        g_auto (GStrv) parts = NULL;
        size_t len = strlen (text);
        bool dir = len > 0 && text[len - 1] == '/';
        g_autofree char *trimmed = g_strndup (text, dir ? len - 1 : len);

        parts = g_strsplit (trimmed, "/", -1);
        if (trimmed[0] == '\0' || g_strv_length (parts) > 64) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a valid protected path"), text);
                return FALSE;
        }
        for (guint i = 0; parts[i]; i++) {
                if (parts[i][0] == '\0' || strcmp (parts[i], ".") == 0 ||
                    strcmp (parts[i], "..") == 0) {
                        g_set_error (
                                error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                _ ("“%s” is not a valid protected path: use a path relative to "
                                   "the shared folder, such as .git/hooks/"),
                                text);
                        return FALSE;
                }
        }
        ret->n_parts = g_strv_length (parts);
        ret->parts = g_steal_pointer (&parts);
        ret->dir = dir;
        return TRUE;
}

FsProtected *
fs_protected_new (const char *const *extra, GError **error)
{
        g_autoptr (FsProtected) p = g_new0 (FsProtected, 1);

        p->patterns = g_array_new (FALSE, TRUE, sizeof (Pattern));
        g_array_set_clear_func (p->patterns, (GDestroyNotify) pattern_clear);
        for (guint i = 0; default_protected[i]; i++) {
                Pattern pat;
                if (!pattern_parse (default_protected[i], &pat, error))
                        g_return_val_if_reached (NULL);
                g_array_append_val (p->patterns, pat);
        }
        for (guint i = 0; extra && extra[i]; i++) {
                Pattern pat;
                if (!pattern_parse (extra[i], &pat, error))
                        return NULL;
                g_array_append_val (p->patterns, pat);
        }
        return g_steal_pointer (&p);
}

void
fs_protected_free (FsProtected *p)
{
        if (!p)
                return;
        g_array_unref (p->patterns);
        g_free (p);
}

/* Offsets of each component of path; "" has none. */
static guint
split_offsets (const char *path, size_t *starts, size_t *lens, guint max)
{
        guint n = 0;
        size_t i = 0, len = strlen (path);

        while (i < len && n < max) {
                size_t j = i;
                while (j < len && path[j] != '/')
                        j++;
                starts[n] = i;
                lens[n] = j - i;
                n++;
                i = j + 1;
        }
        return n;
}

static bool
part_equal (const char *path, size_t start, size_t len, const char *part)
{
        return strlen (part) == len && g_ascii_strncasecmp (path + start, part, len) == 0;
}

#define MAX_DEPTH 512

/* Finds a pattern occurrence starting at some component. want_ancestor: path ends strictly
 * inside the pattern (a folder on the way to it) instead of at or below it. */
static bool
find_match (const FsProtected *p, const char *path, bool want_ancestor, size_t *ret_anchor_len)
{
        size_t starts[MAX_DEPTH], lens[MAX_DEPTH];
        guint n = split_offsets (path, starts, lens, MAX_DEPTH);

        for (guint k = 0; k < p->patterns->len; k++) {
                const Pattern *pat = &g_array_index (p->patterns, Pattern, k);

                for (guint i = 0; i < n; i++) {
                        guint avail = n - i, cmp = MIN (avail, pat->n_parts);
                        bool ok = true;

                        if (want_ancestor ? avail >= pat->n_parts : avail < pat->n_parts)
                                continue;
                        for (guint j = 0; j < cmp && ok; j++)
                                ok = part_equal (path, starts[i + j], lens[i + j], pat->parts[j]);
                        if (!ok)
                                continue;
                        if (ret_anchor_len) {
                                if (pat->n_parts >= 2)
                                        *ret_anchor_len = starts[i] + lens[i];
                                else
                                        *ret_anchor_len = i == 0 ? 0 : starts[i - 1] + lens[i - 1];
                        }
                        return true;
                }
        }
        return false;
}

bool
fs_protected_match (const FsProtected *p, const char *path, size_t *ret_anchor_len)
{
        return find_match (p, path, false, ret_anchor_len);
}

bool
fs_protected_is_ancestor (const FsProtected *p, const char *path, size_t *ret_anchor_len)
{
        return find_match (p, path, true, ret_anchor_len);
}

bool
fs_path_in_hooks (const char *path)
{
        size_t starts[MAX_DEPTH], lens[MAX_DEPTH];
        guint n = split_offsets (path, starts, lens, MAX_DEPTH);

        for (guint i = 0; i + 2 < n; i++)
                if (part_equal (path, starts[i], lens[i], ".git") &&
                    part_equal (path, starts[i + 1], lens[i + 1], "hooks"))
                        return true;
        return false;
}

bool
fs_symlink_target_inside (const char *link_path, const char *target, size_t target_len)
{
        size_t starts[MAX_DEPTH], lens[MAX_DEPTH];
        long depth;
        size_t i = 0;

        if (target_len == 0 || target[0] == '/' || memchr (target, '\0', target_len))
                return false;

        /* The link's folder is the starting depth. */
        depth = (long) split_offsets (link_path, starts, lens, MAX_DEPTH) - 1;
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
                                           "but not delete”, so %s cannot be deleted, emptied or "
                                           "replaced. Ask the person to approve the change."),
                                        share, path);
        if (g_strcmp0 (rule, FS_RULE_PROTECTED) == 0)
                return g_strdup_printf (_ ("Blocked by the sandbox: %s in “%s” is a protected path "
                                           "(it can run code on the person's computer) and is "
                                           "read-only in every mode."),
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
                           "delete”, so Corral keeps the old version of every file that is "
                           "replaced, and there is no room left for another one; %s was not "
                           "replaced. Ask the person to review the kept versions or free disk "
                           "space."),
                        share, path);
        return g_strdup_printf (_ ("Blocked by the sandbox in “%s” (%s)."), share, rule);
}
