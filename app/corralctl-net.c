/* corralctl-net.c — a VM's egress policy from the command line (see the header).
 *
 *   corralctl net preset VM none|package-managers|allowlist|open-web
 *   corralctl net allow VM HOST[:PORT]     (*.example.com, 127.0.0.1:8080, [::1]:8080)
 *   corralctl net deny VM HOST[:PORT]
 *   corralctl net ls VM
 *
 * A VM without a policy file has preset "allowlist" and no rules: nothing is allowed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-net.h"

#include "corral-domain-xml.h"
#include "corral-vm-host.h"
#include "corralctl-opts.h"
#include "egress-policy.h"

#include <glib/gi18n.h>
#include <stdio.h>

#define EXIT_CTL 125

static const CorralctlCommand net_commands[] = {
        { "preset", N_ ("VM PRESET"), 2,
          N_ ("Start from a preset: none, package-managers, allowlist or open-web") },
        { "allow", N_ ("VM HOST[:PORT]"), 2,
          N_ ("Let the VM reach a host (*.example.com, 127.0.0.1:8080, [::1]:8080)") },
        { "deny", N_ ("VM HOST[:PORT]"), 2,
          N_ ("Keep the VM from a host, whatever else allows it") },
        { "ls", N_ ("VM"), 1, N_ ("Show the VM's network policy") },
};

static char *
policy_path (const char *vm, GError **error)
{
        CorralHostFacts facts;
        g_autofree char *state_dir = NULL;
        g_autofree char *vm_dir = NULL;

        if (!corral_domain_name_is_valid (vm)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a valid VM name"), vm);
                return NULL;
        }
        corral_host_facts_probe (&facts, &state_dir);
        vm_dir = g_build_filename (state_dir, "vms", vm, NULL);
        if (!g_file_test (vm_dir, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("No VM named “%s” (see “corralctl vm ls”)"), vm);
                return NULL;
        }
        return g_build_filename (vm_dir, "egress-policy.json", NULL);
}

static CorralEgressPolicy *
load (const char *path, GError **error)
{
        if (!g_file_test (path, G_FILE_TEST_EXISTS))
                return corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        return corral_egress_policy_load_file (path, error);
}

static void
print_policy (const CorralEgressPolicy *p)
{
        const GPtrArray *allow = corral_egress_policy_get_rules (p, TRUE);
        const GPtrArray *deny = corral_egress_policy_get_rules (p, FALSE);

        g_print (_ ("preset: %s\n"),
                 corral_egress_preset_to_string (corral_egress_policy_get_preset (p)));
        for (guint i = 0; i < allow->len; i++)
                g_print ("allow %s\n", (const char *) g_ptr_array_index (allow, i));
        for (guint i = 0; i < deny->len; i++)
                g_print ("deny  %s\n", (const char *) g_ptr_array_index (deny, i));
}

static gboolean
apply (CorralEgressPolicy *p, const char *cmd, const char *arg, GError **error)
{
        CorralEgressPreset preset;

        if (g_str_equal (cmd, "preset")) {
                if (!corral_egress_preset_from_string (arg, &preset)) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("Unknown preset “%s” (none, package-managers, allowlist, "
                                        "open-web)"),
                                     arg);
                        return FALSE;
                }
                corral_egress_policy_set_preset (p, preset);
                return TRUE;
        }
        return corral_egress_policy_add_rule (p, g_str_equal (cmd, "allow"), arg, error);
}

int
corralctl_net_main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralEgressPolicy) p = NULL;
        g_autofree char *path = NULL;
        const CorralctlCommand *command;

        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h"))
                return corralctl_group_usage (argc < 2 ? stderr : stdout, "net", net_commands,
                                              G_N_ELEMENTS (net_commands), NULL);
        if (!(command = corralctl_group_lookup ("net", net_commands, G_N_ELEMENTS (net_commands),
                                                argv[1], NULL)))
                return EXIT_CTL;
        argc--;
        argv++;
        if (!corralctl_command_parse ("net", command, NULL, &argc, &argv))
                return EXIT_CTL;
        if (!(path = policy_path (argv[1], &error)) || !(p = load (path, &error)))
                goto fail;
        if (command->n_args == 2 && (!apply (p, command->name, argv[2], &error) ||
                                     !corral_egress_policy_save_file (p, path, &error)))
                goto fail;
        print_policy (p);
        return EXIT_SUCCESS;
fail:
        g_printerr ("corralctl: %s\n", error->message);
        return EXIT_CTL;
}
