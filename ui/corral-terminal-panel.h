/* corral-terminal-panel.h — a terminal into the workspace: an interactive login shell in the
 * guest, on a PTY, run through the guest agent (what `corralctl shell` does, in a widget).
 *
 * The guest's output is untrusted: VTE parses it, scrollback is bounded, and the shell runs as
 * the guest's default unprivileged user.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>
#include <vte/vte.h>

#include "corral-agent-client.h"

G_BEGIN_DECLS

/* Lines of scrollback kept; older output is dropped. */
#define CORRAL_TERMINAL_SCROLLBACK_LINES 10000

#define CORRAL_TYPE_TERMINAL_PANEL (corral_terminal_panel_get_type ())
G_DECLARE_FINAL_TYPE (CorralTerminalPanel, corral_terminal_panel, CORRAL, TERMINAL_PANEL, GtkWidget)

GtkWidget *corral_terminal_panel_new (void);
/* client: (nullable) a connected agent client; a shell starts in the guest right away. NULL ends
 * the shell and shows that no terminal is connected. */
void corral_terminal_panel_set_client (CorralTerminalPanel *self, CorralAgentClient *client);
/* (transfer none) (nullable) */
CorralAgentClient *corral_terminal_panel_get_client (CorralTerminalPanel *self);
/* Ends the shell (if any) and starts a new one, on a cleared terminal. */
void corral_terminal_panel_restart (CorralTerminalPanel *self);
/* TRUE from the moment the shell started until it ends. */
gboolean corral_terminal_panel_get_running (CorralTerminalPanel *self);
/* (transfer none) */
VteTerminal *corral_terminal_panel_get_terminal (CorralTerminalPanel *self);

G_END_DECLS
