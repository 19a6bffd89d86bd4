/* fs-git.c — see fs-git.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-git.h"

#include <string.h>

/* Entry names ---------------------------------------------------------------------------------- */

/* Files at the top of a git directory that everyday commands write (and their .lock files). */
static const char *const top_files[] = {
        "HEAD",
        "ORIG_HEAD",
        "FETCH_HEAD",
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "REBASE_HEAD",
        "BISECT_HEAD",
        "AUTO_MERGE",
        "MERGE_MSG",
        "MERGE_MODE",
        "MERGE_RR",
        "SQUASH_MSG",
        "TAG_EDITMSG",
        "COMMIT_EDITMSG",
        "NOTES_EDITMSG",
        "NOTES_MERGE_PARTIAL",
        "NOTES_MERGE_REF",
        "EDIT_DESCRIPTION",
        "BRANCH_DESCRIPTION",
        "ADD_EDIT.patch",
        "BISECT_LOG",
        "BISECT_START",
        "BISECT_EXPECTED_REV",
        "BISECT_ANCESTORS_OK",
        "BISECT_NAMES",
        "BISECT_TERMS",
        "BISECT_FIRST_PARENT",
        "BISECT_RUN",
        "description",
        "index",
        "packed-refs",
        "packed-refs.new",
        "shallow",
        "gc.pid",
        "gc.log",
        NULL,
};

/* Folders at the top of a git directory whose whole content is data. */
static const char *const top_dirs[] = {
        "objects",  "refs", "logs",     "rebase-merge", "rebase-apply",         "sequencer",
        "rr-cache", "lfs",  "branches", "remotes",      "NOTES_MERGE_WORKTREE", "lost-found",
        NULL,
};

/* What info/ may hold: patterns and dumb-transport lists (not attributes: drivers run). */
static const char *const info_files[] = { "exclude", "refs", "packs", "sparse-checkout", NULL };

/* What makes a folder with a HEAD run or redirect things. */
static const char *const control_names[] = {
        "config", "config.worktree", "commondir", "gitdir", "hooks", "modules", "worktrees", NULL,
};

static bool
name_is (const char *name, size_t len, const char *want)
{
        return strlen (want) == len && g_ascii_strncasecmp (name, want, len) == 0;
}

static bool
in_list (const char *name, size_t len, const char *const *list)
{
        for (guint i = 0; list[i]; i++)
                if (name_is (name, len, list[i]))
                        return true;
        return false;
}

static bool
has_prefix (const char *name, size_t len, const char *prefix)
{
        size_t plen = strlen (prefix);
        return len > plen && g_ascii_strncasecmp (name, prefix, plen) == 0;
}

static bool
has_suffix (const char *name, size_t len, const char *suffix)
{
        size_t slen = strlen (suffix);
        return len > slen && g_ascii_strncasecmp (name + len - slen, suffix, slen) == 0;
}

/* "tXXXXXX": the file git init makes (and links) to probe the file system, then removes. */
static bool
is_probe (const char *name, size_t len)
{
        if (len != 7 || name[0] != 't')
                return false;
        for (size_t i = 1; i < len; i++)
                if (!g_ascii_isalnum (name[i]))
                        return false;
        return true;
}

/* A top-level file name, or its lock file. */
static bool
top_file_ok (const char *name, size_t len)
{
        if (is_probe (name, len))
                return true;
        if (has_suffix (name, len, ".lock"))
                len -= 5;
        /* temporary and split indexes: index.stash.N, next-index-N.lock, sharedindex.SHA */
        if (has_prefix (name, len, "index.") || has_prefix (name, len, "next-index-") ||
            has_prefix (name, len, "sharedindex."))
                return true;
        return in_list (name, len, top_files);
}

bool
fs_git_is_dot_git (const char *name, size_t len)
{
        return name_is (name, len, ".git");
}

bool
fs_git_is_head (const char *name, size_t len)
{
        return name_is (name, len, "HEAD");
}

bool
fs_git_is_control_name (const char *name, size_t len)
{
        return in_list (name, len, control_names);
}

FsGitEntry
fs_git_entry (const char *rel)
{
        const char *slash = strchr (rel, '/');
        size_t len = slash ? (size_t) (slash - rel) : strlen (rel);

        if (len == 0)
                return FS_GIT_REFUSED;
        if (!slash) {
                if (name_is (rel, len, "config"))
                        return FS_GIT_CONFIG;
                if (name_is (rel, len, "config.lock"))
                        return FS_GIT_CONFIG_LOCK;
                if (top_file_ok (rel, len) || in_list (rel, len, top_dirs) ||
                    name_is (rel, len, "info"))
                        return FS_GIT_OK;
                return FS_GIT_REFUSED;
        }
        if (in_list (rel, len, top_dirs))
                return FS_GIT_OK;
        if (name_is (rel, len, "info")) {
                const char *child = slash + 1;
                size_t clen = strlen (child);

                if (strchr (child, '/'))
                        return FS_GIT_REFUSED;
                if (has_suffix (child, clen, ".lock"))
                        clen -= 5;
                /* update-server-info writes info/refs through info/refs_XXXXXX */
                if (has_prefix (child, clen, "refs_") || has_prefix (child, clen, "packs_"))
                        return FS_GIT_OK;
                return in_list (child, clen, info_files) ? FS_GIT_OK : FS_GIT_REFUSED;
        }
        return FS_GIT_REFUSED;
}

/* Config text ----------------------------------------------------------------------------------- */

typedef enum {
        SUB_NONE, /* [section] */
        SUB_ANY, /* [section "name"] */
} SubKind;

typedef struct {
        const char *section;
        SubKind sub;
        const char *key; /* NULL: any key of the section */
} AllowedKey;

/* Keys that `git init`, `git clone`, `git remote add`, `git checkout -b`/`--track`, `git push
 * -u` and `git config` for everyday settings write, none of which names a program to run. */
static const AllowedKey allowed_keys[] = {
        { "core", SUB_NONE, "repositoryformatversion" },
        { "core", SUB_NONE, "filemode" },
        { "core", SUB_NONE, "bare" },
        { "core", SUB_NONE, "logallrefupdates" },
        { "core", SUB_NONE, "symlinks" },
        { "core", SUB_NONE, "ignorecase" },
        { "core", SUB_NONE, "precomposeunicode" },
        { "core", SUB_NONE, "autocrlf" },
        { "core", SUB_NONE, "eol" },
        { "core", SUB_NONE, "safecrlf" },
        { "core", SUB_NONE, "sparsecheckout" },
        { "core", SUB_NONE, "sparsecheckoutcone" },
        { "core", SUB_NONE, "quotepath" },
        { "core", SUB_NONE, "abbrev" },
        { "extensions", SUB_NONE, "objectformat" },
        { "extensions", SUB_NONE, "partialclone" },
        { "remote", SUB_ANY, "url" },
        { "remote", SUB_ANY, "pushurl" },
        { "remote", SUB_ANY, "fetch" },
        { "remote", SUB_ANY, "push" },
        { "remote", SUB_ANY, "mirror" },
        { "remote", SUB_ANY, "tagopt" },
        { "remote", SUB_ANY, "prune" },
        { "remote", SUB_ANY, "prunetags" },
        { "remote", SUB_ANY, "promisor" },
        { "remote", SUB_ANY, "partialclonefilter" },
        { "branch", SUB_ANY, "remote" },
        { "branch", SUB_ANY, "pushremote" },
        { "branch", SUB_ANY, "merge" },
        { "branch", SUB_ANY, "rebase" },
        { "branch", SUB_ANY, "description" },
        { "user", SUB_NONE, "name" },
        { "user", SUB_NONE, "email" },
        { "author", SUB_NONE, "name" },
        { "author", SUB_NONE, "email" },
        { "committer", SUB_NONE, "name" },
        { "committer", SUB_NONE, "email" },
        { "init", SUB_NONE, "defaultbranch" },
        { "pull", SUB_NONE, "rebase" },
        { "pull", SUB_NONE, "ff" },
        { "push", SUB_NONE, "default" },
        { "push", SUB_NONE, "autosetupremote" },
        { "push", SUB_NONE, "followtags" },
        { "fetch", SUB_NONE, "prune" },
        { "fetch", SUB_NONE, "prunetags" },
        { "merge", SUB_NONE, "ff" },
        { "merge", SUB_NONE, "conflictstyle" },
        { "rebase", SUB_NONE, "autostash" },
        { "rebase", SUB_NONE, "autosquash" },
        { "rebase", SUB_NONE, "updaterefs" },
        { "gc", SUB_NONE, "auto" },
        { "gc", SUB_NONE, "autodetach" },
        { "index", SUB_NONE, "version" },
        { "lfs", SUB_NONE, "repositoryformatversion" },
        { "color", SUB_NONE, "ui" },
        { "advice", SUB_NONE, NULL },
};

typedef struct {
        const char *p, *end;
        char section[64];
        bool has_sub;
        char *problem;
} ConfigReader;

static gboolean
fail (ConfigReader *r, const char *what)
{
        if (!r->problem)
                r->problem = g_strdup (what);
        return FALSE;
}

static bool
is_name_char (char c)
{
        return g_ascii_isalnum (c) || c == '-';
}

static void
skip_blanks (ConfigReader *r)
{
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
                r->p++;
}

/* Blanks, an optional comment, then the end of the line (consumed). */
static gboolean
end_of_line (ConfigReader *r)
{
        skip_blanks (r);
        if (r->p < r->end && (*r->p == '#' || *r->p == ';')) {
                while (r->p < r->end && *r->p != '\n')
                        r->p++;
        }
        if (r->p < r->end && *r->p != '\n')
                return fail (r, "unexpected text after a section header or value");
        if (r->p < r->end)
                r->p++;
        return TRUE;
}

/* [name] or [name "sub"], with nothing but a comment after it on its line. */
static gboolean
read_section (ConfigReader *r)
{
        size_t n = 0;

        r->p++; /* '[' */
        while (r->p < r->end && is_name_char (*r->p) && n + 1 < sizeof r->section)
                r->section[n++] = g_ascii_tolower (*r->p++);
        r->section[n] = '\0';
        if (n == 0)
                return fail (r, "a section header without a name");
        r->has_sub = false;
        if (r->p < r->end && (*r->p == ' ' || *r->p == '\t')) {
                skip_blanks (r);
                if (r->p >= r->end || *r->p != '"')
                        return fail (r, "a malformed section header");
                for (r->p++; r->p < r->end && *r->p != '"'; r->p++) {
                        if (*r->p == '\\' || *r->p == '\n')
                                return fail (r, "an escape or line break in a subsection name");
                }
                if (r->p >= r->end)
                        return fail (r, "an unterminated subsection name");
                r->p++;
                r->has_sub = true;
        }
        if (r->p >= r->end || *r->p != ']')
                return fail (r, "a malformed section header (legacy [a.b] headers are refused)");
        r->p++;
        return end_of_line (r);
}

/* A value exactly as git's parse_value() decodes it: blanks outside quotes dropped at either
 * end and kept between words, quotes removed, the \n \t \b \\ \" escapes, a comment from an
 * unquoted # or ;. Continuation lines are refused. The decoded text goes to out. */
static gboolean
read_value (ConfigReader *r, GString *out)
{
        bool quoted = false, comment = false;
        size_t spaces = 0;

        for (; r->p < r->end && *r->p != '\n'; r->p++) {
                char c = *r->p;

                if (comment)
                        continue;
                if (!quoted && g_ascii_isspace (c)) {
                        if (out->len > 0)
                                spaces++;
                        continue;
                }
                if (!quoted && (c == '#' || c == ';')) {
                        comment = true;
                        continue;
                }
                for (; spaces > 0; spaces--)
                        g_string_append_c (out, ' ');
                if (c == '\\') {
                        if (++r->p >= r->end || *r->p == '\n')
                                return fail (r, "a continuation line");
                        switch (*r->p) {
                        case 'n':
                                c = '\n';
                                break;
                        case 't':
                                c = '\t';
                                break;
                        case 'b':
                                c = '\b';
                                break;
                        case '\\':
                        case '"':
                                c = *r->p;
                                break;
                        default:
                                return fail (r, "an unknown escape in a value");
                        }
                        g_string_append_c (out, c);
                } else if (c == '"') {
                        quoted = !quoted;
                } else {
                        g_string_append_c (out, c);
                }
        }
        if (quoted)
                return fail (r, "an unterminated quoted value");
        if (r->p < r->end)
                r->p++;
        return TRUE;
}

/* A remote URL that names no program: a plain scheme, an scp-like host:path, or a path. */
static bool
url_allowed (const char *url)
{
        static const char *const schemes[] = { "https://", "http://",    "ssh://",     "git://",
                                               "file://",  "git+ssh://", "ssh+git://", NULL };
        const char *colon = strchr (url, ':');
        const char *slash = strchr (url, '/');

        if (url[0] == '\0' || url[0] == '-' || strstr (url, "::"))
                return false;
        for (const char *p = url; *p; p++)
                if ((guchar) *p < 0x20 || *p == 0x7f)
                        return false;
        for (guint i = 0; schemes[i]; i++) {
                size_t len = strlen (schemes[i]);
                if (g_ascii_strncasecmp (url, schemes[i], len) == 0)
                        return url[len] != '-';
        }
        if (strstr (url, "://"))
                return false; /* another scheme: git would look for a helper program */
        /* scp-like [user@]host:path (a colon before any slash), or a local path */
        if (colon && (!slash || colon < slash))
                return strchr (url, '@') == NULL || strchr (url, '@') < colon;
        return true;
}

static gboolean
check_key (ConfigReader *r, const char *key, const char *value)
{
        for (guint i = 0; i < G_N_ELEMENTS (allowed_keys); i++) {
                const AllowedKey *a = &allowed_keys[i];

                if (strcmp (a->section, r->section) != 0 || (a->sub == SUB_ANY) != r->has_sub)
                        continue;
                if (a->key && strcmp (a->key, key) != 0)
                        continue;
                if (strcmp (r->section, "remote") == 0 &&
                    (strcmp (key, "url") == 0 || strcmp (key, "pushurl") == 0) &&
                    (!value || !url_allowed (value))) {
                        g_autofree char *what =
                                g_strdup_printf ("remote.%s is not a plain URL", key);
                        return fail (r, what);
                }
                return TRUE;
        }
        {
                g_autofree char *what = g_strdup_printf ("%s%s.%s is not allowed", r->section,
                                                         r->has_sub ? ".*" : "", key);
                return fail (r, what);
        }
}

/* name [= value] */
static gboolean
read_key_value (ConfigReader *r)
{
        char key[64];
        size_t n = 0;
        g_autoptr (GString) value = NULL;

        if (r->section[0] == '\0')
                return fail (r, "a key outside any section");
        if (!g_ascii_isalpha (*r->p))
                return fail (r, "a malformed line");
        while (r->p < r->end && is_name_char (*r->p) && n + 1 < sizeof key)
                key[n++] = g_ascii_tolower (*r->p++);
        key[n] = '\0';
        if (r->p < r->end && is_name_char (*r->p))
                return fail (r, "a key name that is too long");
        skip_blanks (r);
        if (r->p < r->end && *r->p == '=') {
                r->p++;
                skip_blanks (r);
                value = g_string_new (NULL);
                if (!read_value (r, value))
                        return FALSE;
        } else if (!end_of_line (r)) {
                return FALSE;
        }
        if (value && value->len > 4096)
                return fail (r, "a value longer than 4096 bytes");
        return check_key (r, key, value ? value->str : NULL);
}

gboolean
fs_git_config_check (const char *text, size_t len, char **ret_problem)
{
        ConfigReader r = { .p = text, .end = text + len };
        gboolean ok = TRUE;

        if (len > FS_GIT_CONFIG_MAX)
                ok = fail (&r, "larger than 64 KiB");
        else if (memchr (text, '\0', len) || memchr (text, '\r', len))
                ok = fail (&r, "a NUL or carriage return");
        else if (!g_utf8_validate (text, (gssize) len, NULL))
                ok = fail (&r, "not UTF-8");
        while (ok && r.p < r.end) {
                skip_blanks (&r);
                if (r.p >= r.end)
                        break;
                if (*r.p == '\n' || *r.p == '#' || *r.p == ';')
                        ok = end_of_line (&r);
                else if (*r.p == '[')
                        ok = read_section (&r);
                else
                        ok = read_key_value (&r);
        }
        if (!ok && ret_problem)
                *ret_problem = g_steal_pointer (&r.problem);
        g_free (r.problem);
        return ok;
}
