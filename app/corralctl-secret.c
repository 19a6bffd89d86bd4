/* corralctl-secret.c — secrets from the command line (see the header).
 *
 *   corralctl secret set NAME --host HOST[:PORT] [--host …] [--header NAME] [--format "Bearer {}"]
 *   corralctl secret ls
 *   corralctl secret rm NAME
 *
 * --header basic: the guest sends HTTP basic auth with its placeholder as the password; the
 * proxy puts the secret there instead.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-secret.h"

#include "corral-secret-store.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define EXIT_CTL 125

static char **opt_hosts;
static char *opt_header;
static char *opt_format;
static char **opt_rest;

static const GOptionEntry set_entries[] = {
        { "host", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_hosts,
          N_ ("A host the secret may be sent to, port 443 unless HOST:PORT says another "
              "(repeat for more)"),
          N_ ("HOST[:PORT]") },
        { "header", 0, 0, G_OPTION_ARG_STRING, &opt_header,
          N_ ("Header that carries it (default: authorization; “basic” for basic auth)"),
          N_ ("NAME") },
        { "format", 0, 0, G_OPTION_ARG_STRING, &opt_format,
          N_ ("Header value, {} standing for the secret (default: “Bearer {}”)"), N_ ("FORMAT") },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_rest, NULL, N_ ("NAME") },
        { NULL }
};

static int
fail (GError *error)
{
        g_printerr ("corralctl: %s\n", error->message);
        return EXIT_CTL;
}

/* One line of at most CORRAL_SECRET_MAX_VALUE bytes from fd, without its newline. */
static char *
read_line (int fd, GError **error)
{
        g_autofree char *buf = g_malloc0 (CORRAL_SECRET_MAX_VALUE + 2);
        gsize len = 0;
        char *value;

        while (len < CORRAL_SECRET_MAX_VALUE + 1) {
                gssize n = read (fd, buf + len, 1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || buf[len] == '\n')
                        break;
                len++;
        }
        buf[len] = '\0';
        if (len > 0 && buf[len - 1] == '\r')
                buf[--len] = '\0';
        if (len == 0 || len > CORRAL_SECRET_MAX_VALUE) {
                explicit_bzero (buf, CORRAL_SECRET_MAX_VALUE + 2);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("No secret value given (1 to 8192 bytes on one line)"));
                return NULL;
        }
        value = g_strdup (buf);
        explicit_bzero (buf, CORRAL_SECRET_MAX_VALUE + 2);
        return value;
}

/* From standard input, or on a terminal from a prompt that does not echo. */
static char *
read_value (const char *name, GError **error)
{
        struct termios saved, quiet;
        gboolean tty = isatty (STDIN_FILENO) && tcgetattr (STDIN_FILENO, &saved) == 0;
        char *value;

        if (!tty)
                return read_line (STDIN_FILENO, error);
        g_printerr (_ ("Value of %s (not shown): "), name);
        quiet = saved;
        quiet.c_lflag &= ~(tcflag_t) (ECHO | ECHONL);
        tcsetattr (STDIN_FILENO, TCSAFLUSH, &quiet);
        value = read_line (STDIN_FILENO, error);
        tcsetattr (STDIN_FILENO, TCSAFLUSH, &saved);
        g_printerr ("\n");
        return value;
}

static int
cmd_set (int argc, char **argv)
{
        g_autoptr (GOptionContext) ctx = g_option_context_new (_ ("NAME"));
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralSecretInfo) info = NULL;
        char *value = NULL;
        gboolean ok;

        g_option_context_set_summary (ctx, _ ("Store a secret in the keychain. The value is read "
                                              "from standard input, or asked for without echo."));
        g_option_context_add_main_entries (ctx, set_entries, NULL);
        if (!g_option_context_parse (ctx, &argc, &argv, &error))
                return fail (error);
        if (!opt_rest || !opt_rest[0]) {
                g_printerr (
                        _ ("usage: corralctl secret set NAME --host HOST[:PORT] [--header NAME] "
                           "[--format FORMAT]\n"));
                return EXIT_CTL;
        }
        if (opt_rest[1]) {
                /* A value on the command line would land in shell history and ps output. */
                g_printerr (_ ("corralctl: secret values are read from standard input or a prompt, "
                               "never from the command line\n"));
                return EXIT_CTL;
        }
        info = corral_secret_info_new (opt_rest[0], (const char *const *) opt_hosts,
                                       opt_header ? opt_header : "authorization",
                                       opt_format ? opt_format : "Bearer {}", &error);
        if (!info || !(value = read_value (opt_rest[0], &error)))
                return fail (error);
        ok = corral_secret_store_set_sync (info, value, NULL, &error);
        corral_secret_value_free (value);
        if (!ok)
                return fail (error);
        g_print (_ ("Stored %s for %s\n"), info->name, info->hosts[0]);
        return EXIT_SUCCESS;
}

static int
cmd_ls (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = corral_secret_store_list_sync (NULL, &error);

        if (!list)
                return fail (error);
        for (guint i = 0; i < list->len; i++) {
                CorralSecretInfo *info = g_ptr_array_index (list, i);
                g_autofree char *hosts = g_strjoinv (",", info->hosts);

                g_print ("%s\t%s\t%s: %s\n", info->name, hosts, info->header, info->format);
        }
        return EXIT_SUCCESS;
}

int
corralctl_secret_main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        const char *cmd = argc > 1 ? argv[1] : "";

        if (g_str_equal (cmd, "set"))
                return cmd_set (argc - 1, argv + 1);
        if (g_str_equal (cmd, "ls") && argc == 2)
                return cmd_ls ();
        if (g_str_equal (cmd, "rm") && argc == 3) {
                if (!corral_secret_store_remove_sync (argv[2], NULL, &error))
                        return fail (error);
                return EXIT_SUCCESS;
        }
        g_printerr (_ ("usage: corralctl secret set NAME --host HOST[:PORT] [--header NAME] "
                       "[--format FORMAT]\n"
                       "       corralctl secret ls\n"
                       "       corralctl secret rm NAME\n"));
        return EXIT_CTL;
}
