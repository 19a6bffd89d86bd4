/* assistant-computer.c — the computer tool in the assistant loop: offered when the session has a
 * screen (corral_assistant_session_set_computer), run through app/computer/corral-computer.c.
 *
 * The screen the model is told of is the scaled one its screenshots have, so its coordinates
 * need no guessing. Anthropic models get their own tool type; other providers a function tool
 * whose schema lists the same actions and fields. The screenshot each action returns goes to
 * the model with the result and onto the card, with the point the action aimed at. Screenshots
 * are not kept in the task's transcript (they would make it grow by megabytes): a reopened
 * task's conversation has each result's text, and the model takes a new screenshot.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#include "corral-computer-log.h"

#define COMPUTER_TOOL_TYPE "computer_20250124"

void
assistant_computer_describe (CorralAssistantSession *self, CorralLlmConversation *conv)
{
        CorralScreenScale scale;
        g_autofree char *description = NULL;

        if (!self->computer)
                return;
        corral_computer_get_scale (self->computer, &scale);
        if (!scale.width || !scale.height)
                return; /* the screen is gone: no tool that cannot work */
        description = corral_computer_tool_describe (scale.width, scale.height);
        corral_llm_conversation_add_computer_tool (conv, COMPUTER_TOOL_TYPE, scale.width,
                                                   scale.height, description,
                                                   cJSON_Parse (corral_computer_tool_schema));
}

static void
computer_done (GObject *source, GAsyncResult *res, gpointer data)
{
        AssistantToolCall *call = data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result =
                corral_computer_run_finish (CORRAL_COMPUTER (source), res, &error);
        CorralAssistantToolCard *card = call->card;

        if (call->session->vm_dir)
                corral_computer_log (call->session->vm_dir, "assistant", call->input,
                                     result ? result->text : NULL, error);
        if (!result) {
                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        assistant_tool_call_return (call, g_strdup (error->message), TRUE);
                else
                        assistant_tool_call_return_error (call, error);
                return;
        }
        if (result->image) {
                card->image = g_bytes_ref (result->image);
                card->image_media_type = g_strdup (result->mime_type);
                card->image_width = result->image_width;
                card->image_height = result->image_height;
        }
        card->has_point = result->has_point;
        card->point_x = result->point_x;
        card->point_y = result->point_y;
        assistant_tool_call_return (call, g_strdup (result->text ? result->text : ""), FALSE);
}

void
assistant_tool_computer (AssistantToolCall *call)
{
        const char *action = cJSON_GetStringValue (cJSON_GetObjectItem (call->input, "action"));

        /* The model's word on a person's card: only a plain action name. */
        if (!action || strlen (action) > 24 ||
            strspn (action, "abcdefghijklmnopqrstuvwxyz_") != strlen (action))
                action = "?";
        g_free (call->card->title);
        call->card->title = g_strdup_printf ("computer: %s", action);
        corral_computer_run_async (call->session->computer, call->input, call->cancellable,
                                   computer_done, call);
}
