/* assistant-prompt.c — the system prompt.
 *
 * The model gets facts, not rules to obey: the sandbox enforces everything on the host anyway.
 * Telling the model what is allowed keeps it from wasting steps on what will be refused, and
 * telling it how to ask keeps it from looking for ways around.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-prompt.h"

#include "assistant-text.h"

#include <glib/gi18n-lib.h>

static const char *
mode_words (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return "read only: you can read, but not create, change or delete anything";
        case FS_MODE_RW:
                return "can edit: you can read, create, change and delete files";
        case FS_MODE_RW_NODELETE:
                return "can edit, but not delete: you can read, create and change files "
                       "(Corral keeps the old version of each file you change; saving by "
                       "writing a new file and renaming it over the old one works), but deleting "
                       "files or folders is refused";
        }
        return "unknown";
}

static void
add_shares (GString *p, GPtrArray *shares)
{
        if (!shares || shares->len == 0) {
                g_string_append (p, "No folders are shared with this VM yet: there is nothing "
                                    "under /workspace. If the task needs the person's files, ask "
                                    "them to share a folder.\n\n");
                return;
        }
        g_string_append (p, "The person shared these folders with the VM (paths as you see "
                            "them):\n");
        for (guint i = 0; i < shares->len; i++) {
                const CorralShare *s = shares->pdata[i];
                g_string_append_printf (p, "- /workspace/%s — %s.\n", s->name,
                                        mode_words (s->mode));
        }
        g_string_append (p,
                         "In every folder, a few paths that could run code on the person's "
                         "computer (.git/hooks, .git/config, CI configuration, shell startup "
                         "files) are read-only. Everything outside /workspace is the VM's own "
                         "disk: use it freely for scratch work; the person does not see it.\n\n");
}

static void
add_rules (GString *p, const CorralEgressPolicy *policy, gboolean allow)
{
        const GPtrArray *rules = corral_egress_policy_get_rules (policy, allow);

        if (!rules || rules->len == 0)
                return;
        g_string_append (p, allow ? "Also allowed:" : "Always refused:");
        for (guint i = 0; i < rules->len; i++)
                g_string_append_printf (p, "%s %s", i ? "," : "", (const char *) rules->pdata[i]);
        g_string_append (p, ".\n");
}

static void
add_network (GString *p, const CorralEgressPolicy *policy)
{
        g_string_append (p, "The VM has no network card. Programs reach the internet only "
                            "through an HTTP(S) proxy that the host controls; the usual proxy "
                            "variables are already set, so curl, pip, git and the like use it. ");
        if (!policy) {
                g_string_append (p, "The network policy could not be read: expect "
                                    "connections to be refused.\n");
                return;
        }
        switch (corral_egress_policy_get_preset (policy)) {
        case CORRAL_EGRESS_PRESET_NONE:
                g_string_append (p, "Network policy: no internet access.\n");
                break;
        case CORRAL_EGRESS_PRESET_PACKAGE_MANAGERS:
                g_string_append (p, "Network policy: package registries only (Debian, PyPI, npm, "
                                    "crates.io and the like).\n");
                break;
        case CORRAL_EGRESS_PRESET_ALLOWLIST:
                g_string_append (p, "Network policy: only the hosts listed below.\n");
                break;
        case CORRAL_EGRESS_PRESET_OPEN_WEB:
                g_string_append (p, "Network policy: any public address (private and local "
                                    "addresses stay refused).\n");
                break;
        }
        add_rules (p, policy, TRUE);
        add_rules (p, policy, FALSE);
        g_string_append (p, "host.corral.internal is the person's own computer, reachable only "
                            "on ports an allow rule names.\n\n");
}

static void
add_credentials (GString *p, const char *const *names)
{
        if (!names || !names[0]) {
                g_string_append (p, "No credentials are available.\n\n");
                return;
        }
        g_string_append (p, "Credentials: these environment variables hold placeholders, which "
                            "the proxy replaces with the real secret only on requests to the "
                            "hosts each one is bound to (use them as you would the real "
                            "value; you will never see the secret itself):");
        for (guint i = 0; names[i]; i++)
                g_string_append_printf (p, "%s %s", i ? "," : "", names[i]);
        g_string_append (p, ".\n\n");
}

static const char tools_text[] =
        "Tools: shell runs a command in the VM (sh -c; long output is cut in the middle, so "
        "filter it with grep, head or tail); view, create, str_replace and insert work on files "
        "by their path in the VM. When the sandbox refuses something, the tool result says what "
        "was blocked and by which rule: do not retry it or look for a way around. If the task "
        "needs something the sandbox forbids — deleting a file in a folder that cannot delete, "
        "or reaching a host the network policy does not allow — call request_approval with the "
        "exact path or host and a short reason: the person decides, and if they agree the host "
        "does exactly that for you.\n";

char *
assistant_prompt_build (const AssistantPromptInfo *info)
{
        GString *p = g_string_new ("You are an assistant that works on a person's files on "
                                   "their behalf. ");

        if (!info->vm_name) {
                g_string_append (p, "Your commands run directly on this computer as the "
                                    "current user, with NO sandbox (a development setup): be "
                                    "careful, nothing is isolated.\n\n");
                g_string_append (p, tools_text);
                return g_string_free (p, FALSE);
        }
        g_string_append_printf (p,
                                "You work inside a sandbox: a virtual machine named “%s”. "
                                "Your commands run there as an unprivileged user; the person's "
                                "computer is out of reach except for what is described below.\n\n",
                                info->vm_name);
        add_shares (p, info->shares);
        add_network (p, info->policy);
        add_credentials (p, info->credential_names);
        if (info->mcp_tools && info->mcp_tools[0])
                g_string_append (p, "Tools whose names contain “__” come from the person's own "
                                    "tool servers and run on their computer, outside the VM.\n");
        if (info->undone && info->undone[0]) {
                /* Only the person undoes; the model is told, so that it does not do it all
                 * again without being asked. */
                g_string_append (p, "The person looked at what you changed in the shared folders "
                                    "and undid some of it; these are back as they were before "
                                    "you changed them (what you made is gone, what you moved or "
                                    "deleted is back where it was). Do not change them again "
                                    "unless the person asks you to:\n");
                for (guint i = 0; info->undone[i]; i++)
                        g_string_append_printf (p, "- %s\n", info->undone[i]);
                g_string_append (p, "\n");
        }
        g_string_append (p, tools_text);
        return g_string_free (p, FALSE);
}

GPtrArray *
assistant_prompt_undone (const char *vm_dir, guint max)
{
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) records = fs_journal_read (keep, &error);
        g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
        GPtrArray *out = g_ptr_array_new_with_free_func (g_free);

        if (!records) {
                g_debug ("the change journal: %s", error->message);
                return out;
        }
        /* The latest first while collecting (each path once), then in the order they happened. */
        for (guint i = records->len; i > 0 && out->len < max; i--) {
                const FsJournalRecord *r = records->pdata[i - 1];
                g_autofree char *path = NULL, *raw = NULL;

                if (r->type != FS_JOURNAL_UNDONE)
                        continue;
                raw = g_strdup_printf ("/workspace/%s/%s", r->share, r->path);
                /* The names are the guest's: in the instructions, none of them can start a
                 * line of its own. */
                path = assistant_text_escaped (raw, G_MAXSIZE);
                if (g_hash_table_contains (seen, path))
                        continue;
                g_hash_table_add (seen, path);
                g_ptr_array_add (out, g_steal_pointer (&path));
        }
        for (guint i = 0; i < out->len / 2; i++) {
                gpointer t = out->pdata[i];
                out->pdata[i] = out->pdata[out->len - 1 - i];
                out->pdata[out->len - 1 - i] = t;
        }
        return out;
}

CorralEgressPolicy *
assistant_prompt_load_policy (const char *vm_dir)
{
        g_autofree char *path = g_build_filename (vm_dir, "egress-policy.json", NULL);
        g_autoptr (GError) error = NULL;
        CorralEgressPolicy *policy;

        if (!g_file_test (path, G_FILE_TEST_EXISTS))
                return corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        policy = corral_egress_policy_load_file (path, &error);
        if (!policy)
                g_debug ("cannot read %s: %s", path, error->message);
        return policy;
}
