/* corral-chat-view.h — the conversation: the person's messages, the assistant's streamed text,
 * tool-call cards, approval dialogs, and the message entry with Send / Stop.
 *
 * Driven by a CorralChatSource (corral-chat-source.h). Without one, the view says that the
 * assistant is not connected and the entry is insensitive.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-chat-source.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_CHAT_VIEW (corral_chat_view_get_type ())
G_DECLARE_FINAL_TYPE (CorralChatView, corral_chat_view, CORRAL, CHAT_VIEW, GtkWidget)

GtkWidget *corral_chat_view_new (void);
/* source: (nullable) (transfer none) */
void corral_chat_view_set_source (CorralChatView *self, CorralChatSource *source);
/* Without a source: why the assistant is not there (title, description: plain text; NULL
 * description for none), with "Add a Key…" (offer_key: signal "key-requested") and "Try
 * Again" (offer_retry: signal "retry-requested", after which the page says it connects). */
void corral_chat_view_set_disconnected (CorralChatView *self,
                                        const char *title,
                                        const char *description,
                                        gboolean offer_key,
                                        gboolean offer_retry);
CorralChatSource *corral_chat_view_get_source (CorralChatView *self);
gboolean corral_chat_view_get_busy (CorralChatView *self);

/* Sends text as if the person had typed it and pressed Send. */
void corral_chat_view_send (CorralChatView *self, const char *text);
/* The stop button's action. */
void corral_chat_view_stop (CorralChatView *self);

/* An earlier conversation, shown again when a task is reopened (no source signals involved). */
/* Empties the transcript (another task's conversation). */
void corral_chat_view_clear (CorralChatView *self);
void corral_chat_view_add_restored_user_message (CorralChatView *self, const char *text);
void corral_chat_view_add_restored_reply (CorralChatView *self, const char *text);
/* tool: shown as a finished card. */
void corral_chat_view_add_restored_tool (CorralChatView *self, CorralChatTool *tool);
/* A remark in the transcript, as a source's ::notice shows it. */
void corral_chat_view_add_notice (CorralChatView *self, const char *text);

/* The approval dialog on screen (an AdwMessageDialog), or NULL. (transfer none) */
GtkWidget *corral_chat_view_get_approval_dialog (CorralChatView *self);
/* The text the assistant has streamed in its current (last) reply. (transfer none) */
const char *corral_chat_view_get_last_reply (CorralChatView *self);
guint corral_chat_view_get_n_tool_cards (CorralChatView *self);
/* How many cards are in state ("running", "done", "failed", "stopped"; corral-tool-card.h). */
guint corral_chat_view_count_tool_cards (CorralChatView *self, const char *state);

G_END_DECLS
