/* egress-test-keyring.c — a private, unlocked gnome-keyring for tests (ENVIRONMENT.md's recipe).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-test.h"

#include <errno.h>
#include <unistd.h>

const char *
egress_test_keyring_dir (void)
{
        return g_getenv (EGRESS_TEST_KEYRING_ENV);
}

int
egress_test_keyring_reexec (char **argv)
{
        g_autoptr (GPtrArray) args = g_ptr_array_new ();
        g_autofree char *dir = NULL;
        g_autofree char *data = NULL, *run = NULL;
        const char *script =
                "echo -n corral-test | gnome-keyring-daemon --unlock --components=secrets "
                ">/dev/null || exit 1; \"$0\" \"$@\"; rc=$?; rm -rf \"$" EGRESS_TEST_KEYRING_ENV
                "\"; exit $rc";

        if (!g_find_program_in_path ("dbus-run-session") ||
            !g_find_program_in_path ("gnome-keyring-daemon")) {
                g_print ("1..0 # SKIP dbus-run-session or gnome-keyring-daemon missing "
                         "(tools/setup-deps --tests)\n");
                return 0;
        }
        dir = g_dir_make_tmp ("corral-keychain-XXXXXX", NULL);
        data = g_build_filename (dir, "data", NULL);
        run = g_build_filename (dir, "run", NULL);
        g_mkdir_with_parents (data, 0700);
        g_mkdir_with_parents (run, 0700);
        g_setenv (EGRESS_TEST_KEYRING_ENV, dir, TRUE);
        g_setenv ("XDG_DATA_HOME", data, TRUE);
        g_setenv ("XDG_RUNTIME_DIR", run, TRUE);
        g_setenv ("HOME", dir, TRUE);
        g_ptr_array_add (args, (gpointer) "dbus-run-session");
        g_ptr_array_add (args, (gpointer) "--");
        g_ptr_array_add (args, (gpointer) "sh");
        g_ptr_array_add (args, (gpointer) "-c");
        g_ptr_array_add (args, (gpointer) script);
        for (char **a = argv; *a; a++)
                g_ptr_array_add (args, *a);
        g_ptr_array_add (args, NULL);
        execvp ("dbus-run-session", (char **) args->pdata);
        g_printerr ("cannot run dbus-run-session: %s\n", g_strerror (errno));
        return 1;
}
