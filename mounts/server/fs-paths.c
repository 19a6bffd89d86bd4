/* fs-paths.c — see fs-paths.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-paths.h"

#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>

#define P FS_PATH_PROTECTED
#define H FS_PATH_HIDDEN

static const FsPathDefault defaults[] = {
        /* CI: runs with the project's secrets when pushed */
        { ".github/workflows/", P, "GitHub Actions workflows" },
        { ".github/actions/", P, "GitHub Actions local actions" },
        { ".gitlab-ci.yml", P, "GitLab CI" },
        { ".gitlab/", P, "GitLab CI includes and templates" },
        { ".forgejo/workflows/", P, "Forgejo Actions" },
        { ".gitea/workflows/", P, "Gitea Actions" },
        { ".circleci/", P, "CircleCI" },
        { ".travis.yml", P, "Travis CI" },
        { "Jenkinsfile", P, "Jenkins" },
        { "azure-pipelines.yml", P, "Azure Pipelines" },
        { ".azure-pipelines/", P, "Azure Pipelines" },
        { "bitbucket-pipelines.yml", P, "Bitbucket Pipelines" },
        { ".buildkite/", P, "Buildkite" },
        { ".drone.yml", P, "Drone" },
        { ".woodpecker.yml", P, "Woodpecker" },
        { ".woodpecker/", P, "Woodpecker" },
        { "appveyor.yml", P, "AppVeyor" },
        { ".appveyor.yml", P, "AppVeyor" },
        { ".cirrus.yml", P, "Cirrus CI" },
        /* IDEs and editors: tasks, launch and workspace settings run commands on open */
        { ".vscode/", P, "VS Code tasks, launch and settings" },
        { "*.code-workspace", P, "VS Code workspaces" },
        { ".idea/", P, "JetBrains run configurations" },
        { ".fleet/", P, "JetBrains Fleet run configurations" },
        { ".zed/", P, "Zed tasks and settings" },
        { ".devcontainer/", P, "dev containers" },
        { ".devcontainer.json", P, "dev containers" },
        { ".envrc", P, "direnv" },
        { ".exrc", P, "vi start-up commands" },
        { ".nvimrc", P, "Neovim start-up commands" },
        { ".nvim.lua", P, "Neovim start-up commands" },
        { ".lvimrc", P, "vim local start-up commands" },
        { ".dir-locals.el", P, "Emacs directory variables" },
        { ".dir-locals-2.el", P, "Emacs directory variables" },
        /* git hook managers: what they name runs on the next commit */
        { ".husky/", P, "husky hooks" },
        { ".githooks/", P, "git hooks folder" },
        { ".git-hooks/", P, "git hooks folder" },
        { "lefthook.yml", P, "lefthook" },
        { "lefthook.yaml", P, "lefthook" },
        { ".lefthook.yml", P, "lefthook" },
        { ".lefthook.yaml", P, "lefthook" },
        { "lefthook-local.yml", P, "lefthook" },
        { "lefthook-local.yaml", P, "lefthook" },
        { ".lefthook/", P, "lefthook scripts" },
        { ".pre-commit-config.yaml", P, "pre-commit" },
        { ".pre-commit-hooks.yaml", P, "pre-commit" },
        { ".overcommit.yml", P, "overcommit" },
        { ".simple-git-hooks.json", P, "simple-git-hooks" },
        { ".simple-git-hooks.js", P, "simple-git-hooks" },
        { ".simple-git-hooks.cjs", P, "simple-git-hooks" },
        /* package managers and build tools: configs that choose which code any command runs */
        { ".yarnrc", P, "Yarn" },
        { ".yarnrc.yml", P, "Yarn (yarnPath)" },
        { ".yarn/releases/", P, "Yarn" },
        { ".yarn/plugins/", P, "Yarn plugins" },
        { ".pnpmfile.cjs", P, "pnpm hooks" },
        { ".pnpmfile.mjs", P, "pnpm hooks" },
        { ".cargo/config", P, "Cargo (rustc wrappers, runners)" },
        { ".cargo/config.toml", P, "Cargo (rustc wrappers, runners)" },
        { "gradle/wrapper/", P, "Gradle wrapper" },
        { ".mvn/", P, "Maven wrapper and extensions" },
        { ".bazelrc", P, "Bazel" },
        /* the person's own start-up files (a home-folder share) */
        { ".bashrc", P, "shell start-up" },
        { ".bash_profile", P, "shell start-up" },
        { ".bash_login", P, "shell start-up" },
        { ".bash_logout", P, "shell start-up" },
        { ".profile", P, "shell start-up" },
        { ".zshrc", P, "shell start-up" },
        { ".zshenv", P, "shell start-up" },
        { ".zprofile", P, "shell start-up" },
        { ".zlogin", P, "shell start-up" },
        { ".zlogout", P, "shell start-up" },
        { ".config/fish/", P, "shell start-up" },
        { ".xprofile", P, "desktop session start-up" },
        { ".xinitrc", P, "desktop session start-up" },
        { ".xsession", P, "desktop session start-up" },
        { ".xsessionrc", P, "desktop session start-up" },
        { ".pam_environment", P, "session environment" },
        { ".config/environment.d/", P, "session environment" },
        { ".config/autostart/", P, "programs started at log-in" },
        { ".config/systemd/", P, "user services" },
        { ".local/share/applications/", P, "application launchers" },
        { ".local/share/nautilus/scripts/", P, "file manager scripts" },
        { ".local/bin/", P, "programs on the person's PATH" },
        { ".gitconfig", P, "git's own settings (hooks, fsmonitor, aliases)" },
        { ".config/git/", P, "git's own settings (hooks, fsmonitor, aliases)" },
        { ".tmux.conf", P, "tmux start-up commands" },
        { ".vimrc", P, "vim start-up commands" },
        { ".config/nvim/", P, "Neovim start-up commands" },
        { ".emacs", P, "Emacs start-up" },
        { ".emacs.d/", P, "Emacs start-up" },
        /* the person's secrets */
        { ".ssh/", H, "SSH keys and settings" },
        { ".gnupg/", H, "GPG keys" },
        { ".password-store/", H, "pass passwords" },
        { ".local/share/keyrings/", H, "the desktop keychain" },
        { ".pki/", H, "the NSS certificate and key store" },
        { ".netrc", H, "login credentials" },
        { ".git-credentials", H, "git credentials" },
        { ".aws/", H, "AWS credentials" },
        { ".azure/", H, "Azure credentials" },
        { ".config/gcloud/", H, "Google Cloud credentials" },
        { ".kube/", H, "Kubernetes credentials" },
        { ".docker/config.json", H, "Docker registry credentials" },
        { ".config/gh/", H, "GitHub CLI credentials" },
        { ".config/hub", H, "hub credentials" },
        { ".config/op/", H, "1Password CLI" },
        { ".config/rclone/", H, "rclone credentials" },
        { ".vault-token", H, "Vault token" },
        { ".terraform.d/credentials.tfrc.json", H, "Terraform credentials" },
        { ".npmrc", H, "npm registry tokens" },
        { ".pypirc", H, "PyPI tokens" },
        { ".cargo/credentials", H, "crates.io tokens" },
        { ".cargo/credentials.toml", H, "crates.io tokens" },
        { ".pgpass", H, "PostgreSQL passwords" },
        { ".my.cnf", H, "MySQL passwords" },
        { ".mozilla/", H, "Firefox profiles" },
        { ".thunderbird/", H, "Thunderbird profiles" },
        { ".config/google-chrome/", H, "Chrome profiles" },
        { ".config/chromium/", H, "Chromium profiles" },
        { ".config/BraveSoftware/", H, "Brave profiles" },
        { ".config/microsoft-edge/", H, "Edge profiles" },
        { ".config/vivaldi/", H, "Vivaldi profiles" },
        { ".config/opera/", H, "Opera profiles" },
        /* Corral's own files: VM folders, network policies, MCP servers, images */
        { ".local/state/corral/", H, "Corral's state" },
        { ".local/share/corral/", H, "Corral's data" },
        { ".config/corral/", H, "Corral's settings" },
        { ".cache/corral/", H, "Corral's images" },
        { NULL, FS_PATH_PLAIN, NULL },
};

#undef P
#undef H

/* A trailing '/' is allowed for readability: every pattern covers what lies beneath it. */
typedef struct {
        char **parts; /* components; one starting with '*' matches a suffix */
        guint n_parts;
        FsPathClass cls;
} Pattern;

struct _FsPathRules {
        GArray *patterns; /* Pattern */
        /* Every component of every request is matched, so patterns are found by their first
         * component (ASCII lower case) instead of tried one by one; those starting with a '*'
         * suffix are tried at every component. */
        GHashTable *by_first; /* char * -> GPtrArray of const Pattern * */
        GPtrArray *suffix_first; /* const Pattern * */
};

#define MAX_PARTS 64
#define FS_PATH_NAME_MAX 255 /* a component, as the protocol allows */
#define MAX_DEPTH 512

const FsPathDefault *
fs_path_defaults (void)
{
        return defaults;
}

static void
pattern_clear (Pattern *p)
{
        g_strfreev (p->parts);
}

static gboolean
pattern_parse (const char *text, FsPathClass cls, Pattern *ret, GError **error)
{
        size_t len = strlen (text);
        bool dir = len > 0 && text[len - 1] == '/';
        g_autofree char *trimmed = g_strndup (text, dir ? len - 1 : len);
        g_auto (GStrv) parts = g_strsplit (trimmed, "/", -1);

        if (trimmed[0] == '\0' || g_strv_length (parts) > MAX_PARTS) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a valid protected path"), text);
                return FALSE;
        }
        for (guint i = 0; parts[i]; i++) {
                if (parts[i][0] == '\0' || strcmp (parts[i], ".") == 0 ||
                    strcmp (parts[i], "..") == 0 || strcmp (parts[i], "*") == 0) {
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
        ret->cls = cls;
        return TRUE;
}

gboolean
fs_path_pattern_check (const char *pattern, GError **error)
{
        Pattern pat;

        if (!pattern_parse (pattern, FS_PATH_PROTECTED, &pat, error))
                return FALSE;
        pattern_clear (&pat);
        return TRUE;
}

static gboolean
add_patterns (GArray *out, const char *const *list, FsPathClass cls, GError **error)
{
        for (guint i = 0; list && list[i]; i++) {
                Pattern pat;
                if (!pattern_parse (list[i], cls, &pat, error))
                        return FALSE;
                g_array_append_val (out, pat);
        }
        return TRUE;
}

/* After the last pattern is added: the array no longer moves. */
static void
index_patterns (FsPathRules *rules)
{
        rules->by_first = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                 (GDestroyNotify) g_ptr_array_unref);
        rules->suffix_first = g_ptr_array_new ();
        for (guint k = 0; k < rules->patterns->len; k++) {
                const Pattern *pat = &g_array_index (rules->patterns, Pattern, k);
                g_autofree char *key = NULL;
                GPtrArray *list;

                if (pat->parts[0][0] == '*') {
                        g_ptr_array_add (rules->suffix_first, (gpointer) pat);
                        continue;
                }
                key = g_ascii_strdown (pat->parts[0], -1);
                list = g_hash_table_lookup (rules->by_first, key);
                if (!list) {
                        list = g_ptr_array_new ();
                        g_hash_table_insert (rules->by_first, g_steal_pointer (&key), list);
                }
                g_ptr_array_add (list, (gpointer) pat);
        }
}

FsPathRules *
fs_path_rules_new (const char *const *protected_extra,
                   const char *const *hidden_extra,
                   GError **error)
{
        g_autoptr (FsPathRules) rules = g_new0 (FsPathRules, 1);

        rules->patterns = g_array_new (FALSE, TRUE, sizeof (Pattern));
        g_array_set_clear_func (rules->patterns, (GDestroyNotify) pattern_clear);
        for (guint i = 0; defaults[i].pattern; i++) {
                Pattern pat;
                if (!pattern_parse (defaults[i].pattern, defaults[i].cls, &pat, error))
                        g_return_val_if_reached (NULL);
                g_array_append_val (rules->patterns, pat);
        }
        if (!add_patterns (rules->patterns, protected_extra, FS_PATH_PROTECTED, error) ||
            !add_patterns (rules->patterns, hidden_extra, FS_PATH_HIDDEN, error))
                return NULL;
        index_patterns (rules);
        return g_steal_pointer (&rules);
}

void
fs_path_rules_free (FsPathRules *rules)
{
        if (!rules)
                return;
        g_clear_pointer (&rules->by_first, g_hash_table_unref);
        g_clear_pointer (&rules->suffix_first, g_ptr_array_unref);
        g_array_unref (rules->patterns);
        g_free (rules);
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
part_matches (const char *name, size_t len, const char *part)
{
        size_t plen = strlen (part);

        if (part[0] == '*') {
                plen--;
                return len > plen && g_ascii_strncasecmp (name + len - plen, part + 1, plen) == 0;
        }
        return plen == len && g_ascii_strncasecmp (name, part, len) == 0;
}

/* Whether pat occurs in path starting at component i: at or below it (want_ancestor false; a
 * file pattern also covers anything beneath a folder of that name), or with path ending
 * strictly inside the pattern (want_ancestor true). */
static bool
occurs_at (const Pattern *pat,
           const char *path,
           const size_t *starts,
           const size_t *lens,
           guint n,
           guint i,
           bool want_ancestor)
{
        guint avail = n - i, cmp = MIN (avail, pat->n_parts);

        if (want_ancestor ? avail >= pat->n_parts : avail < pat->n_parts)
                return false;
        for (guint j = 0; j < cmp; j++)
                if (!part_matches (path + starts[i + j], lens[i + j], pat->parts[j]))
                        return false;
        return true;
}

/* The patterns that may start at a component: those whose first component is its name in any
 * case, and those starting with a suffix. Calls found (pat, user_data) for each until it returns
 * true; returns whether one did. */
static bool
each_candidate (const FsPathRules *rules,
                const char *name,
                size_t len,
                bool (*found) (const Pattern *pat, void *user_data),
                void *user_data)
{
        char key[FS_PATH_NAME_MAX + 1];
        GPtrArray *list;

        for (guint k = 0; k < rules->suffix_first->len; k++)
                if (found (rules->suffix_first->pdata[k], user_data))
                        return true;
        if (len > FS_PATH_NAME_MAX)
                return false; /* longer than any pattern's component */
        for (size_t i = 0; i < len; i++)
                key[i] = g_ascii_tolower (name[i]);
        key[len] = '\0';
        list = g_hash_table_lookup (rules->by_first, key);
        for (guint k = 0; list && k < list->len; k++)
                if (found (list->pdata[k], user_data))
                        return true;
        return false;
}

typedef struct {
        const char *path;
        const size_t *starts, *lens;
        guint n, i;
        bool want_ancestor;
        FsPathClass cls; /* the strongest class found so far */
} Scan;

static bool
scan_one (const Pattern *pat, void *user_data)
{
        Scan *sc = user_data;

        if (sc->want_ancestor) {
                if (occurs_at (pat, sc->path, sc->starts, sc->lens, sc->n, sc->i, true)) {
                        sc->cls = pat->cls;
                        return true;
                }
                return false;
        }
        if (pat->cls > sc->cls &&
            occurs_at (pat, sc->path, sc->starts, sc->lens, sc->n, sc->i, false))
                sc->cls = pat->cls;
        return sc->cls == FS_PATH_HIDDEN; /* nothing stronger to find */
}

static FsPathClass
scan (const FsPathRules *rules, const char *path, bool want_ancestor)
{
        size_t starts[MAX_DEPTH], lens[MAX_DEPTH];
        Scan sc = { .path = path, .starts = starts, .lens = lens, .want_ancestor = want_ancestor };

        sc.n = split_offsets (path, starts, lens, MAX_DEPTH);
        for (sc.i = 0; sc.i < sc.n; sc.i++)
                if (each_candidate (rules, path + starts[sc.i], lens[sc.i], scan_one, &sc))
                        break;
        return sc.cls;
}

FsPathClass
fs_path_rules_classify (const FsPathRules *rules, const char *path)
{
        return scan (rules, path, false);
}

bool
fs_path_rules_is_ancestor (const FsPathRules *rules, const char *path)
{
        return scan (rules, path, true) != FS_PATH_PLAIN;
}
