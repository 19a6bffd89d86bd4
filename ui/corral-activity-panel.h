/* corral-activity-panel.h — what happened in the workspace, in plain words: the tail of the VM's
 * audit.jsonl (shared-folder changes and refusals) and egress.jsonl (network requests), newest
 * first, re-read every two seconds while the panel is shown.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

/* The lines of the logs read at most (the tail of each file). */
#define CORRAL_ACTIVITY_TAIL_BYTES (64 * 1024)

/* One log line in words for people, or NULL for a line that is not JSON or says nothing
 * to show. *ret_problem is TRUE for refusals. Log lines are untrusted text. (transfer full) */
char *corral_activity_describe (const char *json_line, gboolean *ret_problem, char **ret_time);

#define CORRAL_TYPE_ACTIVITY_PANEL (corral_activity_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralActivityPanel, corral_activity_panel, CORRAL, ACTIVITY_PANEL, GtkWidget)

GtkWidget *corral_activity_panel_new (void);
void corral_activity_panel_set_vm_dir (CorralActivityPanel *self, const char *vm_dir);
void corral_activity_panel_reload (CorralActivityPanel *self);
guint corral_activity_panel_get_n_entries (CorralActivityPanel *self);

G_END_DECLS
