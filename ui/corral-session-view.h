/* corral-session-view.h — a running task: the chat, and side panels for the shared folders,
 * the files changed in this task, a terminal into the workspace and the activity log.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-activity-panel.h"
#include "corral-chat-view.h"
#include "corral-changes-panel.h"
#include "corral-screen-panel.h"
#include "corral-shares-panel.h"
#include "corral-terminal-panel.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_SESSION_VIEW (corral_session_view_get_type ())
G_DECLARE_FINAL_TYPE (CorralSessionView, corral_session_view, CORRAL, SESSION_VIEW, GtkWidget)

GtkWidget *corral_session_view_new (void);
/* vm_name, vm_dir: (nullable) the task's workspace; NULL clears. */
void corral_session_view_set_workspace (CorralSessionView *self,
                                        const char *vm_name,
                                        const char *vm_dir);
const char *corral_session_view_get_vm_name (CorralSessionView *self);
const char *corral_session_view_get_vm_dir (CorralSessionView *self);
/* client: (nullable) the workspace's connected agent; the terminal panel opens a shell with it.
 * NULL (no workspace, or none reachable) ends that shell. */
void corral_session_view_set_agent_client (CorralSessionView *self, CorralAgentClient *client);
/* source: (nullable) what drives the chat; also fills the changed-files panel. */
void corral_session_view_set_chat_source (CorralSessionView *self, CorralChatSource *source);

void corral_session_view_set_panel_visible (CorralSessionView *self, gboolean visible);
gboolean corral_session_view_get_panel_visible (CorralSessionView *self);
/* "folders", "changes", "terminal", "activity" */
void corral_session_view_show_panel (CorralSessionView *self, const char *name);

CorralChatView *corral_session_view_get_chat (CorralSessionView *self);
CorralSharesPanel *corral_session_view_get_shares (CorralSessionView *self);
CorralChangesPanel *corral_session_view_get_changes (CorralSessionView *self);
CorralTerminalPanel *corral_session_view_get_terminal (CorralSessionView *self);
CorralActivityPanel *corral_session_view_get_activity (CorralSessionView *self);
/* The Screen page: shown for a task with computer use. */
CorralScreenPanel *corral_session_view_get_screen (CorralSessionView *self);

G_END_DECLS
