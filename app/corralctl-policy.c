/* corralctl-policy.c — `corralctl policy show|check` (see the header).
 *
 * `show` prints what corral_policy_to_json says, one key per line; an allow list takes one
 * line per file that sets it, because each file's list applies on its own (a candidate must
 * be in every one). Values are printed as JSON, so no text from a file can move the
 * terminal's cursor.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-policy.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <stdlib.h>

#include "corral-cjson.h"
#include "corral-policy.h"
#include "corralctl-opts.h"

static const CorralctlCommand policy_commands[] = {
        { "show", "", 0, N_ ("Show every setting of the managed policy and where it comes from") },
        { "check", N_ ("FILE…"), 1,
          N_ ("Check policy files as if they were the managed policy, merged in the order "
              "given") },
};

static char *
joined (const cJSON *array)
{
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) list = NULL;
        const cJSON *item;

        cJSON_ArrayForEach (item, array)
                g_strv_builder_add (b, cJSON_GetStringValue (item));
        list = g_strv_builder_end (b);
        return g_strjoinv (", ", list);
}

static void
print_line (const char *key, const cJSON *value, gboolean locked, const char *from)
{
        g_autofree char *text = cJSON_PrintUnformatted (value);

        if (locked)
                g_print (_ ("%s = %s  (locked, from %s)\n"), key, text, from);
        else
                g_print (_ ("%s = %s  (default, from %s)\n"), key, text, from);
}

static void
print_setting (const CorralPolicyKey *key, const cJSON *s)
{
        const cJSON *value = cJSON_GetObjectItemCaseSensitive (s, "value"), *one;
        gboolean locked = cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (s, "locked"));
        g_autofree char *from = NULL;

        if (!cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (s, "set"))) {
                g_print (_ ("%s  (not set)\n"), key->name);
                return;
        }
        if (key->kind == CORRAL_POLICY_KIND_ALLOW_LIST) {
                cJSON_ArrayForEach (one, value)
                        print_line (key->name, cJSON_GetObjectItemCaseSensitive (one, "allowed"),
                                    locked,
                                    cJSON_GetStringValue (
                                            cJSON_GetObjectItemCaseSensitive (one, "source")));
                return;
        }
        from = joined (cJSON_GetObjectItemCaseSensitive (s, "sources"));
        print_line (key->name, value, locked, from);
}

static void
print_policy (CorralPolicy *policy)
{
        g_autofree char *text = corral_policy_to_json (policy);
        g_autoptr (cJSON) json = cJSON_Parse (text);
        const cJSON *settings = cJSON_GetObjectItemCaseSensitive (json, "settings");
        g_autofree char *files = joined (cJSON_GetObjectItemCaseSensitive (json, "sources"));
        const CorralPolicyKey *keys;
        guint n;

        if (*files) {
                g_print (_ ("Files read: %s\n"), files);
        } else {
                g_autofree char *dir = g_path_get_dirname (corral_policy_default_path ());
                g_autofree char *drop_ins = g_build_filename (dir, "managed.d", NULL);

                g_print (_ ("Files read: none (there is no %s and no %s)\n"),
                         corral_policy_default_path (), drop_ins);
        }
        g_print (_ ("Digest: %s\n"), corral_policy_get_digest (policy));
        keys = corral_policy_keys (&n);
        for (guint k = 0; k < n; k++)
                print_setting (&keys[k], cJSON_GetObjectItemCaseSensitive (settings, keys[k].name));
}

static int
cmd_show (int argc, char **argv)
{
        gboolean json = FALSE;
        const GOptionEntry entries[] = { { "json", 0, 0, G_OPTION_ARG_NONE, &json,
                                           N_ ("Print the policy as JSON"), NULL },
                                         G_OPTION_ENTRY_NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) policy = NULL;

        if (!corralctl_options_parse ("policy show", "", _ (policy_commands[0].summary), entries,
                                      &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (argc != 1)
                return corralctl_usage_error ("policy show", _ ("no arguments"));
        /* A damaged policy is corralctl's own failure to go on, as for every command that
         * would start a task with it. */
        if (!(policy = corral_policy_load_default (&error))) {
                g_printerr ("corralctl: %s\n", error->message);
                return CORRALCTL_EXIT_USAGE;
        }
        if (json) {
                g_autofree char *text = corral_policy_to_json (policy);
                g_print ("%s\n", text);
        } else {
                print_policy (policy);
        }
        return EXIT_SUCCESS;
}

/* Each file alone first, so that each gets its own answer; then all of them together, which
 * can only add a conflict between two of them. */
static int
cmd_check (int argc, char **argv)
{
        g_autoptr (CorralPolicy) all = NULL;
        g_autoptr (GError) error = NULL;
        int status = EXIT_SUCCESS;

        if (!corralctl_options_parse ("policy check", _ ("FILE…"), _ (policy_commands[1].summary),
                                      NULL, &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (argc < 2)
                return corralctl_usage_error ("policy check", _ ("FILE…"));
        for (int i = 1; i < argc; i++) {
                const char *one[] = { argv[i], NULL };
                g_autoptr (CorralPolicy) p = corral_policy_load_files (one, &error);

                if (p) {
                        g_print (_ ("%s: ok\n"), argv[i]);
                } else {
                        g_printerr ("%s\n", error->message);
                        g_clear_error (&error);
                        status = EXIT_FAILURE;
                }
        }
        if (status == EXIT_SUCCESS && argc > 2 &&
            !(all = corral_policy_load_files ((const char *const *) argv + 1, &error))) {
                g_printerr ("%s\n", error->message);
                status = EXIT_FAILURE;
        }
        return status;
}

int
corralctl_policy_main (int argc, char **argv)
{
        const CorralctlCommand *command;

        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h"))
                return corralctl_group_usage (argc < 2 ? stderr : stdout, "policy", policy_commands,
                                              G_N_ELEMENTS (policy_commands), NULL);
        if (!(command = corralctl_group_lookup ("policy", policy_commands,
                                                G_N_ELEMENTS (policy_commands), argv[1], NULL)))
                return CORRALCTL_EXIT_USAGE;
        if (command == &policy_commands[0])
                return cmd_show (argc - 1, argv + 1);
        return cmd_check (argc - 1, argv + 1);
}
