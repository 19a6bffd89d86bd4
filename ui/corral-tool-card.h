/* corral-tool-card.h — one tool call in the transcript: what ran, its output, the files it read
 * or changed, its network requests and what the sandbox blocked.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-chat-source.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_TOOL_CARD (corral_tool_card_get_type ())
G_DECLARE_FINAL_TYPE (CorralToolCard, corral_tool_card, CORRAL, TOOL_CARD, GtkWidget)

GtkWidget *corral_tool_card_new (CorralChatTool *tool);
/* Shows the finished state of the call (tool->id must match). */
void corral_tool_card_update (CorralToolCard *self, CorralChatTool *tool);
const char *corral_tool_card_get_id (CorralToolCard *self);
gboolean corral_tool_card_get_finished (CorralToolCard *self);
/* The task ended while the call ran (Stop, an error): the card says it was stopped. */
void corral_tool_card_stop (CorralToolCard *self);
/* "running", "done", "failed" (an error, a refusal, a command's status other than 0) or
 * "stopped": what the card's icon and words say. */
const char *corral_tool_card_get_state (CorralToolCard *self);

G_END_DECLS
