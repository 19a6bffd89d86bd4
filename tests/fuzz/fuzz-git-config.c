/* fuzz-git-config.c — libFuzzer target for the git config reader the file server applies to a
 * repository's config written by the guest (fs-git.h): untrusted text. It must never crash,
 * must explain every refusal, and must never accept text that names a key outside the
 * allowlist — checked here against a second, independent look at the accepted text.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-git.h"

#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* An independent, line-based second look at accepted text: no line names a key in a section
 * that runs things or a dangerous key of [core] and [remote]. Cheap, and enough to notice the
 * reader losing its place (a key read as a value, a line skipped). */
static void
assert_no_dangerous_key (const char *text, size_t len)
{
        static const char *const sections[] = { "include", "includeif",  "alias", "filter",
                                                "diff",    "credential", "url",   "submodule",
                                                "gpg",     "sendemail",  "pager" };
        static const char *const keys[] = { "core.fsmonitor",     "core.hookspath",
                                            "core.sshcommand",    "core.pager",
                                            "core.editor",        "core.askpass",
                                            "core.worktree",      "remote.uploadpack",
                                            "remote.receivepack", "remote.vcs" };
        g_autofree char *copy = g_strndup (text, len);
        g_auto (GStrv) lines = g_strsplit (copy, "\n", -1);
        char section[64] = "";

        for (guint i = 0; lines[i]; i++) {
                const char *p = lines[i];
                char word[64];
                size_t n = 0;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '[') {
                        for (p++;
                             *p && *p != ']' && *p != ' ' && *p != '\t' && n + 1 < sizeof section;
                             p++)
                                section[n++] = g_ascii_tolower (*p);
                        section[n] = '\0';
                        continue;
                }
                while ((g_ascii_isalnum (*p) || *p == '-') && n + 1 < sizeof word)
                        word[n++] = g_ascii_tolower (*p++);
                word[n] = '\0';
                if (n == 0)
                        continue;
                for (guint k = 0; k < G_N_ELEMENTS (sections); k++)
                        if (strcmp (section, sections[k]) == 0) {
                                g_printerr ("accepted a key in [%s]\n", section);
                                abort ();
                        }
                for (guint k = 0; k < G_N_ELEMENTS (keys); k++) {
                        g_autofree char *full = g_strdup_printf ("%s.%s", section, word);
                        if (strcmp (full, keys[k]) == 0) {
                                g_printerr ("accepted the key %s\n", full);
                                abort ();
                        }
                }
        }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autofree char *problem = NULL;

        if (!fs_git_config_check ((const char *) data, size, &problem)) {
                g_assert_nonnull (problem);
                return 0;
        }
        g_assert_null (problem);
        assert_no_dangerous_key ((const char *) data, size);
        return 0;
}
