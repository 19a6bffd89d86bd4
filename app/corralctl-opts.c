/* corralctl-opts.c — subcommand options (corralctl-opts.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-opts.h"

#include <glib/gi18n.h>

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

int
corralctl_usage_error (const char *command, const char *parameter)
{
        g_printerr (_ ("corralctl %s: expected %s\n"), command, parameter);
        hint (command);
        return CORRALCTL_EXIT_USAGE;
}
