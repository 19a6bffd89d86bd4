/* corral-changes-panel.h — what the assistant changed in this task's shared folders, from the
 * change journal (it outlives the VM and survives reopening the task): grouped as added,
 * modified, renamed and deleted, with sizes; each opens a review window (diff, preview) and can
 * be undone; Undo All and Keep All for the task. Only the person undoes.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-change-window.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_CHANGES_PANEL (corral_changes_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralChangesPanel, corral_changes_panel, CORRAL, CHANGES_PANEL, GtkWidget)

GtkWidget *corral_changes_panel_new (void);
/* The task's VM folder (NULL: none); the list is read again at once. */
void corral_changes_panel_set_vm_dir (CorralChangesPanel *self, const char *vm_dir);
/* Reads the list again (on a worker thread); also every 2 s while the panel is shown. */
void corral_changes_panel_reload (CorralChangesPanel *self);

/* Tests: how many changes are listed; whether a read, undo or keep is under way; the review
 * window opened last and the question asked last (NULL: none open); opens a change's window
 * by its key ("SHARE/PATH"). */
guint corral_changes_panel_get_n_changes (CorralChangesPanel *self);
gboolean corral_changes_panel_get_busy (CorralChangesPanel *self);
CorralChangeWindow *corral_changes_panel_get_review (CorralChangesPanel *self);
AdwMessageDialog *corral_changes_panel_get_dialog (CorralChangesPanel *self);
gboolean corral_changes_panel_review (CorralChangesPanel *self, const char *key);

G_END_DECLS
