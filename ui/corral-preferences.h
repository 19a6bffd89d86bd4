/* corral-preferences.h — Preferences: assistant (provider, model), credentials (names and hosts
 * only), network (preset and allowed sites; the running task's policy when there is one), MCP
 * servers, workspace (memory, processors, image) and appearance. A setting the administrator
 * locked (GSettings not writable) is shown insensitive with a row that says why.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define CORRAL_TYPE_PREFERENCES (corral_preferences_get_type ())
G_DECLARE_FINAL_TYPE (
        CorralPreferences, corral_preferences, CORRAL, PREFERENCES, AdwPreferencesWindow)

/* vm_dir: (nullable) the running task's workspace, whose network policy the Network page edits. */
CorralPreferences *
corral_preferences_new (GtkWindow *parent, GSettings *settings, const char *vm_dir);

/* "assistant", "credentials", "network", "tools", "workspace" */
void corral_preferences_show_page (CorralPreferences *self, const char *name);
/* TRUE once the credentials and images lists were loaded (or failed to load). */
gboolean corral_preferences_get_loaded (CorralPreferences *self);
/* The open "Remove the Key?" question, or NULL (for tests). */
GtkWidget *corral_preferences_get_remove_dialog (CorralPreferences *self);
/* Adds an allowed site (what the Add button does). */
gboolean
corral_preferences_allow_site (CorralPreferences *self, const char *pattern, GError **error);

G_END_DECLS
