/* corralctl-opts.c — subcommand options (corralctl-opts.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-opts.h"

#include <glib/gi18n.h>
#include <string.h>

static void
hint (const char *command)
{
        g_printerr (_ ("Try “corralctl %s --help”.\n"), command);
}

gboolean
corralctl_options_parse (const char *command,
                         const char *parameter,
                         const char *summary,
                         const GOptionEntry *entries,
                         int *argc,
                         char ***argv)
{
        g_autoptr (GOptionContext) context = g_option_context_new (parameter);
        g_autoptr (GError) error = NULL;
        g_autofree char *prgname = g_strdup_printf ("corralctl %s", command);
        char *saved = (*argv)[0];
        gboolean ok;

        g_option_context_set_summary (context, summary);
        if (entries)
                g_option_context_add_main_entries (context, entries, GETTEXT_PACKAGE);
        /* GOption prints argv[0] in its usage line: the whole command, not its last word. */
        (*argv)[0] = prgname;
        ok = g_option_context_parse (context, argc, argv, &error);
        (*argv)[0] = saved;
        if (!ok) {
                g_printerr ("corralctl %s: %s\n", command, error->message);
                hint (command);
        }
        return ok;
}

gboolean
corralctl_parse_uint (
        const char *option, const char *text, guint min, guint max, guint *ret, GError **error)
{
        guint64 value;

        if (!g_ascii_string_to_unsigned (text, 10, min, max, &value, NULL)) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                             _ ("%s: “%s” is not a whole number from %u to %u"), option, text, min,
                             max);
                return FALSE;
        }
        *ret = (guint) value;
        return TRUE;
}

gboolean
corralctl_option_uint (
        const char *command, const char *option, const char *text, guint min, guint max, guint *ret)
{
        g_autoptr (GError) error = NULL;

        if (corralctl_parse_uint (option, text, min, max, ret, &error))
                return TRUE;
        g_printerr ("corralctl %s: %s\n", command, error->message);
        return FALSE;
}

/* A command's parameter words, translated; "" stays "" (gettext would give the catalogue's
 * header for it). */
static const char *
parameter_text (const CorralctlCommand *command)
{
        return *command->parameter ? _ (command->parameter) : "";
}

int
corralctl_usage_error (const char *command, const char *parameter)
{
        g_printerr (_ ("corralctl %s: expected %s\n"), command, parameter);
        hint (command);
        return CORRALCTL_EXIT_USAGE;
}

int
corralctl_group_usage (FILE *out,
                       const char *group,
                       const CorralctlCommand *commands,
                       gsize n_commands,
                       const char *footer)
{
        int name_width = 4, param_width = 4;

        for (gsize i = 0; i < n_commands; i++) {
                name_width = MAX (name_width, (int) strlen (commands[i].name));
                param_width =
                        MAX (param_width, (int) g_utf8_strlen (parameter_text (&commands[i]), -1));
        }
        fprintf (out, _ ("Usage: corralctl %s COMMAND [OPTION…] [ARGUMENT…]\n\nCommands:\n"),
                 group);
        for (gsize i = 0; i < n_commands; i++) {
                const char *param = parameter_text (&commands[i]);
                /* Padded in characters: printf's width counts bytes (HÔTE is 5 of them). */
                int pad = param_width - (int) g_utf8_strlen (param, -1);

                fprintf (out, "  %-*s %s%*s  %s\n", name_width, commands[i].name, param, pad, "",
                         _ (commands[i].summary));
        }
        if (footer)
                fprintf (out, "\n%s\n", footer);
        fprintf (out, _ ("\nUse “corralctl %s COMMAND --help” for a command's options.\n"), group);
        return out == stdout ? 0 : CORRALCTL_EXIT_USAGE;
}

const CorralctlCommand *
corralctl_group_lookup (const char *group,
                        const CorralctlCommand *commands,
                        gsize n_commands,
                        const char *name,
                        const char *footer)
{
        for (gsize i = 0; i < n_commands; i++)
                if (g_str_equal (name, commands[i].name))
                        return &commands[i];
        g_printerr (_ ("corralctl %s: unknown command “%s”\n"), group, name);
        corralctl_group_usage (stderr, group, commands, n_commands, footer);
        return NULL;
}

gboolean
corralctl_command_parse (const char *group,
                         const CorralctlCommand *command,
                         const GOptionEntry *entries,
                         int *argc,
                         char ***argv)
{
        g_autofree char *full = g_strdup_printf ("%s %s", group, command->name);
        const char *parameter = parameter_text (command);

        if (!corralctl_options_parse (full, parameter, _ (command->summary), entries, argc, argv))
                return FALSE;
        if ((guint) *argc - 1 == command->n_args ||
            (command->fewer_args && (guint) *argc - 1 < command->n_args))
                return TRUE;
        corralctl_usage_error (full, *parameter ? parameter : _ ("no arguments"));
        return FALSE;
}
