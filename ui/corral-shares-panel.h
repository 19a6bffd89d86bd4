/* corral-shares-panel.h — the task's shared folders: add, remove, change what the assistant may
 * do, while the workspace runs (through corral-shares: the running file server, else
 * shares.json). Emits ::loaded after every (re)load of the list.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-share-mode.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_SHARES_PANEL (corral_shares_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralSharesPanel, corral_shares_panel, CORRAL, SHARES_PANEL, GtkWidget)

GtkWidget *corral_shares_panel_new (void);
/* vm_dir: (nullable) the VM folder whose shares to show. */
void corral_shares_panel_set_vm_dir (CorralSharesPanel *self, const char *vm_dir);
void corral_shares_panel_reload (CorralSharesPanel *self);
/* What the panel's own controls do (tests call these too). */
void corral_shares_panel_add (CorralSharesPanel *self, const char *path, FsMode mode);
void corral_shares_panel_set_mode (CorralSharesPanel *self, const char *name, FsMode mode);
void corral_shares_panel_remove (CorralSharesPanel *self, const char *name);
guint corral_shares_panel_get_n_shares (CorralSharesPanel *self);
/* The host path of a /workspace/NAME/... path, or NULL. (transfer full) */
char *corral_shares_panel_host_path (CorralSharesPanel *self, const char *vm_path);
/* The last error shown, or NULL. */
const char *corral_shares_panel_get_error (CorralSharesPanel *self);

G_END_DECLS
