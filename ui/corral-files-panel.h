/* corral-files-panel.h — the files the assistant changed in this task: open one, or show it in
 * its folder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define CORRAL_TYPE_FILES_PANEL (corral_files_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralFilesPanel, corral_files_panel, CORRAL, FILES_PANEL, GtkWidget)

GtkWidget *corral_files_panel_new (void);
/* vm_path: as the workspace sees it; host_path: (nullable) where it is on this computer. A path
 * already listed moves to the top. */
void corral_files_panel_add (CorralFilesPanel *self, const char *vm_path, const char *host_path);
void corral_files_panel_clear (CorralFilesPanel *self);
guint corral_files_panel_get_n_files (CorralFilesPanel *self);

G_END_DECLS
