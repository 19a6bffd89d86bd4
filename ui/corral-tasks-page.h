/* corral-tasks-page.h — the home screen: the person's tasks (named after their first request,
 * with folder, date and state), each to reopen, rename or remove, and "New Task".
 *
 * Only tasks made in the app are listed (those with a record; the task service's
 * corral_launcher_list_tasks_async). Renaming writes the record; removing asks first, says what
 * goes (the workspace, the conversation) and what stays (the folder's files), and goes through
 * the task service.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_TASKS_PAGE (corral_tasks_page_get_type ())
G_DECLARE_FINAL_TYPE (CorralTasksPage, corral_tasks_page, CORRAL, TASKS_PAGE, GtkWidget)

/* Lists the tasks of launcher (a reference is kept). Signals: "open" (vm_name) when a row is
 * activated, "new-task" for the button, "loaded" (guint n_tasks) after each listing. */
void corral_tasks_page_set_launcher (CorralTasksPage *self, CorralLauncher *launcher);
/* Lists the tasks again. */
void corral_tasks_page_refresh (CorralTasksPage *self);
/* The task open in the window (nullable): its row says so, and it cannot be removed from
 * here while it is open. */
void corral_tasks_page_set_current (CorralTasksPage *self, const char *vm_name);
guint corral_tasks_page_get_n_tasks (CorralTasksPage *self);
/* The tasks were listed at least once (n_tasks is known). */
gboolean corral_tasks_page_get_loaded (CorralTasksPage *self);

/* For tests: the row of vm_name (an AdwActionRow, or NULL); asks to rename or remove as the
 * row's menu does; the dialog shown (or NULL). */
GtkWidget *corral_tasks_page_get_row (CorralTasksPage *self, const char *vm_name);
void corral_tasks_page_ask_rename (CorralTasksPage *self, const char *vm_name);
void corral_tasks_page_ask_remove (CorralTasksPage *self, const char *vm_name);
GtkWidget *corral_tasks_page_get_dialog (CorralTasksPage *self);

G_END_DECLS
