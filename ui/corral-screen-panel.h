/* corral-screen-panel.h — the Screen panel: the VM's desktop, live, for a task with computer
 * use. View-only by default: the person watches the assistant work. "Take Control" gives the
 * person the pointer and keyboard and makes the assistant's computer actions wait (it is told
 * that the person is using the screen); "Give Back" lets it go on.
 *
 * One VNC connection per task (vmm/corral-vnc.h) feeds both this view and the assistant's
 * computer tool (app/computer/corral-computer.h), which the panel owns and hands out.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-computer.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_SCREEN_PANEL (corral_screen_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralScreenPanel, corral_screen_panel, CORRAL, SCREEN_PANEL, GtkWidget)

GtkWidget *corral_screen_panel_new (void);

/* The task's VM folder (NULL: none): connects to its screen (vnc.sock) when it has one. */
void corral_screen_panel_set_vm_dir (CorralScreenPanel *self, const char *vm_dir);
/* Connects to the screen at path (a VM's vnc.sock; NULL: none). */
void corral_screen_panel_set_socket (CorralScreenPanel *self, const char *path);

/* (nullable) (transfer none) the computer tool on this screen, for the assistant. */
CorralComputer *corral_screen_panel_get_computer (CorralScreenPanel *self);

/* The assistant's request for help (escaped text; NULL: none): shown above the screen, with
 * Not Now, which emits "help-declined". */
void corral_screen_panel_set_help_request (CorralScreenPanel *self, const char *request);

/* Whether the person has the screen (Take Control). */
void corral_screen_panel_set_in_control (CorralScreenPanel *self, gboolean in_control);
gboolean corral_screen_panel_get_in_control (CorralScreenPanel *self);

G_END_DECLS
