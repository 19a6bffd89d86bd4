/* main.c — `corral`, the desktop app.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib/gi18n.h>
#include <locale.h>

#include "corral-application.h"
#include "corral-paths.h"
#include "corral-vm-launcher.h"

int
main (int argc, char **argv)
{
        g_autoptr (CorralVmLauncher) launcher = NULL;
        g_autoptr (GSettings) settings = NULL;
        g_autoptr (CorralApplication) app = NULL;

        corral_vm_launcher_init_process ();
        setlocale (LC_ALL, "");
        bindtextdomain (GETTEXT_PACKAGE, corral_paths_locale_dir ());
        bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
        textdomain (GETTEXT_PACKAGE);
        corral_application_init_environment ();

        launcher = corral_vm_launcher_new ();
        settings = g_settings_new (CORRAL_APP_ID);
        app = corral_application_new (CORRAL_LAUNCHER (launcher), settings);
        return g_application_run (G_APPLICATION (app), argc, argv);
}
