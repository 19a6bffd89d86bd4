/* corral-application.h — the Corral application: actions, shortcuts, style, the window.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_APP_ID "org.corral.Corral"

#define CORRAL_TYPE_APPLICATION (corral_application_get_type ())
G_DECLARE_FINAL_TYPE (CorralApplication, corral_application, CORRAL, APPLICATION, AdwApplication)

/* launcher: (transfer none) what starts workspaces; settings: (transfer none) */
CorralApplication *corral_application_new (CorralLauncher *launcher, GSettings *settings);
/* What SIGTERM, SIGINT and SIGHUP do: every window closes without asking
 * (corral_window_close_now), then the app quits once nothing is left to release. */
void corral_application_close_all (CorralApplication *self);

/* Makes sure GSettings finds the schema when Corral runs from its build tree. Call first. */
void corral_application_init_environment (void);

G_END_DECLS
