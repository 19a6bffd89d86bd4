/* corral-window.h — the main window: first run (or a new task), the starting page, the session.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-first-run.h"
#include "corral-tasks-page.h"
#include "corral-launcher.h"
#include "corral-session-view.h"
#include "corral-starting-page.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_WINDOW (corral_window_get_type ())
G_DECLARE_FINAL_TYPE (CorralWindow, corral_window, CORRAL, WINDOW, AdwApplicationWindow)

/* app: (nullable) */
CorralWindow *
corral_window_new (GtkApplication *app, CorralLauncher *launcher, GSettings *settings);

/* "first-run", "starting", "session" */
const char *corral_window_get_page (CorralWindow *self);
void corral_window_new_task (CorralWindow *self);
/* Closes without asking (the session ends, the app was told to stop): a running task is paused
 * as the person's "Pause" would, and the workspace made ready ahead is released. */
void corral_window_close_now (CorralWindow *self);
/* (transfer none) the preferences window it opened */
GtkWindow *corral_window_show_preferences (CorralWindow *self);
/* The home screen: the person's tasks, listed again. */
void corral_window_show_tasks (CorralWindow *self);
/* What drives the chat of the running task (the assistant loop; tests: the demo source). */
void corral_window_set_chat_source (CorralWindow *self, CorralChatSource *source);
/* The pause-and-close question, or NULL. */
GtkWidget *corral_window_get_close_dialog (CorralWindow *self);

CorralFirstRun *corral_window_get_first_run (CorralWindow *self);
CorralTasksPage *corral_window_get_tasks_page (CorralWindow *self);
CorralStartingPage *corral_window_get_starting_page (CorralWindow *self);
CorralSessionView *corral_window_get_session_view (CorralWindow *self);

G_END_DECLS
