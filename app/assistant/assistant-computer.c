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

#include "assistant-text.h"

#include <glib/gi18n-lib.h>
#include <string.h>

#include "corral-computer-log.h"

#define COMPUTER_TOOL_TYPE "computer_20250124"

/* ask_for_help: what only the person should do on the screen. */
#define HELP_DESCRIPTION                                                                           \
        "Ask the person to use the screen themselves, for what only they should do: sign in, "     \
        "solve a CAPTCHA, confirm a payment, make a choice that is theirs. They are notified "     \
        "and see your request. The tool returns when they have taken the screen and given it "     \
        "back (then take a screenshot: things will have changed), when they say not now, or "      \
        "after 10 minutes. While they have the screen, your computer actions wait."
#define HELP_SCHEMA                                                                                \
        "{\"type\":\"object\",\"properties\":{\"request\":{\"type\":\"string\","                   \
        "\"description\":\"What you need them to do, in one or two plain sentences\"}},"           \
        "\"required\":[\"request\"]}"
#define HELP_WAIT_S 600
#define HELP_REQUEST_MAX 300

typedef struct _AssistantHelp {
        AssistantToolCall *call;
        gulong held_id;
        gulong cancel_id;
        guint timeout_id;
        gboolean taken; /* the person has taken the screen since the request */
} AssistantHelp;

/* Ends the request with text for the model; the person's views stop showing it. */
static void
help_end (CorralAssistantSession *self, char *text, gboolean is_error)
{
        AssistantHelp *help = self->help;
        AssistantToolCall *call;

        if (!help)
                return;
        call = help->call;
        self->help = NULL;
        g_clear_signal_handler (&help->held_id, self->computer);
        g_clear_handle_id (&help->timeout_id, g_source_remove);
        if (help->cancel_id)
                g_cancellable_disconnect (call->cancellable, help->cancel_id);
        g_free (help);
        assistant_session_emit_help (self, NULL);
        assistant_tool_call_return (call, text, is_error);
}

static void
on_held (CorralComputer *computer, GParamSpec *pspec, CorralAssistantSession *self)
{
        if (corral_computer_is_held (computer))
                self->help->taken = TRUE;
        else if (self->help->taken)
                help_end (self,
                          g_strdup (_ ("The person took the screen and gave it back. Take a "
                                       "screenshot to see what changed before you go on.")),
                          FALSE);
}

static gboolean
on_help_timeout (gpointer data)
{
        CorralAssistantSession *self = data;

        self->help->timeout_id = 0;
        /* Still in the person's hands: they are at it; keep waiting until they give it back. */
        if (corral_computer_is_held (self->computer))
                return G_SOURCE_REMOVE;
        help_end (self,
                  g_strdup_printf (_ ("No one took the screen in %d minutes. Go on without it if "
                                      "you can, or end your turn and say what you need."),
                                   HELP_WAIT_S / 60),
                  FALSE);
        return G_SOURCE_REMOVE;
}

static gboolean
on_help_cancelled_idle (gpointer data)
{
        CorralAssistantSession *self = data;

        help_end (self, g_strdup (_ ("Cancelled.")), TRUE);
        return G_SOURCE_REMOVE;
}

static void
on_help_cancelled (GCancellable *cancellable, CorralAssistantSession *self)
{
        /* Not from inside g_cancellable_cancel (): disconnecting there would deadlock. */
        g_idle_add_full (G_PRIORITY_HIGH, on_help_cancelled_idle, g_object_ref (self),
                         g_object_unref);
}

void
corral_assistant_session_decline_help (CorralAssistantSession *self)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        help_end (self,
                  g_strdup (_ ("The person said not now. Go on without it if you can, or end your "
                               "turn and say what you need.")),
                  FALSE);
}

void
assistant_tool_ask_for_help (AssistantToolCall *call)
{
        CorralAssistantSession *self = call->session;
        const char *request = cJSON_GetStringValue (cJSON_GetObjectItem (call->input, "request"));
        g_autofree char *shown = NULL;
        AssistantHelp *help;

        g_free (call->card->title);
        call->card->title = g_strdup ("ask_for_help");
        if (!request || !*request) {
                assistant_tool_call_return (call,
                                            g_strdup (_ ("Say what you need the person to do in "
                                                         "“request”.")),
                                            TRUE);
                return;
        }
        if (self->help) {
                assistant_tool_call_return (call,
                                            g_strdup (_ ("You are already asking the person for "
                                                         "help; wait for that answer.")),
                                            TRUE);
                return;
        }
        if (!assistant_session_has_help_handler (self)) {
                assistant_tool_call_return (
                        call,
                        g_strdup (_ ("No one is watching the screen to help here. Go on without "
                                     "it if you can, or end your turn and say what you need.")),
                        FALSE);
                return;
        }
        shown = assistant_text_escaped (request, HELP_REQUEST_MAX);
        g_free (call->card->command);
        call->card->command = g_strdup (shown);
        help = g_new0 (AssistantHelp, 1);
        help->call = call;
        help->taken = corral_computer_is_held (self->computer);
        self->help = help;
        help->held_id =
                g_signal_connect (self->computer, "notify::held", G_CALLBACK (on_held), self);
        help->timeout_id = g_timeout_add_seconds (HELP_WAIT_S, on_help_timeout, self);
        if (call->cancellable)
                help->cancel_id = g_cancellable_connect (
                        call->cancellable, G_CALLBACK (on_help_cancelled), self, NULL);
        assistant_session_emit_help (self, shown);
}

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
        corral_llm_conversation_add_tool (conv, "ask_for_help", HELP_DESCRIPTION,
                                          cJSON_Parse (HELP_SCHEMA));
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
