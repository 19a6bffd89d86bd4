/* test-assistant-computer.c — the computer tool in the assistant loop: a scripted model (the fake
 * provider, both wire formats) drives a real VNC server (LibVNCServer in the test) through a
 * real session: the tool offered as each provider wants it, a two-step task (look, then click)
 * whose click lands where the model pointed, the screenshot back to the model and on the card
 * with the click point; and no computer tool at all until the person turns computer use on.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <string.h>

#include "corral-computer.h"
#include "corral-vnc.h"
#include "test-assistant-loop-util.h"
#include "vnc-test-server.h"

typedef struct {
        CorralVnc *vnc;
        CorralComputer *computer;
} Screen;

static void
screen_open (Screen *s)
{
        s->vnc = vnc_test_server_connect (NULL);
        s->computer = corral_computer_new (s->vnc);
}

static void
screen_close (Screen *s)
{
        g_clear_object (&s->computer);
        corral_vnc_close (s->vnc);
        g_clear_object (&s->vnc);
        vnc_test_server_stop ();
        for (guint i = 0; i < 20; i++) {
                while (g_main_context_iteration (NULL, FALSE))
                        ;
                g_usleep (5000);
        }
}

static const char *
sent_header (Fix *fix, guint i, const char *name)
{
        const cJSON *req = corral_fake_llm_server_get_request (fix->server, i);

        return cJSON_GetStringValue (
                cJSON_GetObjectItemCaseSensitive (cJSON_GetObjectItem (req, "headers"), name));
}

static void
test_two_steps (gconstpointer data)
{
        CorralLlmProviderKind kind = GPOINTER_TO_INT (data);
        g_autoptr (Fix) fix = fix_new (kind);
        Screen s = { 0 };
        CorralScreenScale scale;
        guint mx, my, sx, sy;
        g_autofree char *click = NULL, *first = NULL, *second = NULL;
        g_autoptr (GArray) events = NULL;
        CorralAssistantToolCard *card;
        const VncTestEvent *press = NULL;

        screen_open (&s);
        corral_assistant_session_set_computer (fix->session, s.computer);
        /* A VM folder: the actions go into its computer.jsonl. */
        corral_assistant_session_set_vm (fix->session, "screen-vm", fix->dir);
        corral_computer_get_scale (s.computer, &scale);
        /* The blue square's middle, as the model reads it off the screenshot. */
        corral_computer_scale_to_model (&scale, 1010, 650, &mx, &my);
        g_assert_true (corral_computer_scale_to_screen (&scale, mx, my, &sx, &sy, NULL));
        click = g_strdup_printf ("{\"action\": \"left_click\", \"coordinate\": [%u, %u]}", mx, my);
        fix_push (fix, "Let me look.", "computer", "{\"action\": \"screenshot\"}", "tool");
        fix_push (fix, "Clicking the blue square.", "computer", click, "tool");
        fix_push (fix, "Done.", NULL, NULL, "end");
        fix_run (fix, "Click the blue square", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpint (fix->result->stop, ==, CORRAL_ASSISTANT_STOP_DONE);
        g_assert_cmpuint (fix->result->tool_calls, ==, 2);

        /* Offered as the provider wants it, at the size the screenshots have. */
        first = fix_sent_text (fix, 0);
        if (kind == CORRAL_LLM_PROVIDER_ANTHROPIC) {
                g_autofree char *size = g_strdup_printf ("\"display_width_px\":%u", scale.width);

                g_assert_nonnull (strstr (first, "\"type\":\"computer_20250124\""));
                g_assert_nonnull (strstr (first, size));
                g_assert_cmpstr (sent_header (fix, 0, "anthropic-beta"), ==,
                                 "computer-use-2025-01-24");
        } else {
                g_assert_nonnull (strstr (first, "\"name\":\"computer\""));
                g_assert_nonnull (strstr (first, "\"left_click_drag\""));
                g_assert_null (sent_header (fix, 0, "anthropic-beta"));
        }

        /* The screenshot went back to the model (base64 PNG) and onto the card. */
        second = fix_sent_text (fix, 1);
        g_assert_nonnull (strstr (second, "iVBORw0KGgo"));
        card = fix_card (fix, 0);
        g_assert_cmpstr (card->tool, ==, "computer");
        g_assert_cmpstr (card->title, ==, "computer: screenshot");
        g_assert_nonnull (card->image);
        g_assert_cmpstr (card->image_media_type, ==, "image/png");
        g_assert_cmpuint (card->image_width, ==, scale.width);
        g_assert_false (card->has_point);
        card = fix_card (fix, 1);
        g_assert_false (card->is_error);
        g_assert_true (card->has_point);
        g_assert_cmpuint (card->point_x, ==, mx);
        g_assert_cmpuint (card->point_y, ==, my);
        g_assert_nonnull (card->image);

        /* The click landed where the model pointed. */
        events = vnc_test_server_take_events ();
        for (guint i = 0; i < events->len; i++) {
                const VncTestEvent *e = &g_array_index (events, VncTestEvent, i);

                if (e->type == 'p' && e->buttons == 1) {
                        press = e;
                        break;
                }
        }
        if (!press)
                g_error ("the click never reached the screen");
        g_assert_cmpint (press->x, ==, (int) sx);
        g_assert_cmpint (press->y, ==, (int) sy);

        /* Each action in the VM folder's computer log, by the assistant, with its result. */
        {
                g_autofree char *path = g_build_filename (fix->dir, "computer.jsonl", NULL);
                g_autofree char *log = NULL;
                g_auto (GStrv) lines = NULL;

                g_assert_true (g_file_get_contents (path, &log, NULL, NULL));
                lines = g_strsplit (g_strchomp (log), "\n", -1);
                g_assert_cmpuint (g_strv_length (lines), ==, 2);
                g_assert_nonnull (strstr (lines[0], "\"by\":\"assistant\""));
                g_assert_nonnull (strstr (lines[0], "\"action\":\"screenshot\""));
                g_assert_nonnull (strstr (lines[1], "\"action\":\"left_click\""));
                g_assert_nonnull (strstr (lines[1], "\"result\":\"Clicked at"));
                /* Never the screenshots themselves. */
                g_assert_null (strstr (log, "iVBORw0KGgo"));
        }
        screen_close (&s);
}

/* Computer use is off until the person turns it on: no tool offered, and a model that calls
 * one anyway is told there is none; nothing reaches the screen. */
static void
test_off_by_default (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        Screen s = { 0 };
        g_autofree char *first = NULL;
        g_autoptr (GArray) events = NULL;

        screen_open (&s);
        fix_push (fix, NULL, "computer", "{\"action\": \"left_click\", \"coordinate\": [5, 5]}",
                  "tool");
        fix_push (fix, "I cannot.", NULL, NULL, "end");
        fix_run (fix, "Click", NULL);
        g_assert_no_error (fix->error);
        first = fix_sent_text (fix, 0);
        g_assert_null (strstr (first, "computer_2025"));
        g_assert_null (strstr (first, "\"name\":\"computer\""));
        g_assert_null (sent_header (fix, 0, "anthropic-beta"));
        g_assert_true (fix_card (fix, 0)->is_error);
        g_assert_nonnull (strstr (fix_output (fix, 0), "no tool named"));
        g_usleep (100000);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, ==, 0);
        screen_close (&s);
}

/* A bad action is the model's to fix: an error result naming what to send, not a failed task. */
static void
test_bad_action (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_OPENAI);
        Screen s = { 0 };

        screen_open (&s);
        corral_assistant_session_set_computer (fix->session, s.computer);
        fix_push (fix, NULL, "computer", "{\"action\": \"left_click\", \"coordinate\": [99999, 5]}",
                  "tool");
        fix_push (fix, "Sorry.", NULL, NULL, "end");
        fix_run (fix, "Click", NULL);
        g_assert_no_error (fix->error);
        g_assert_true (fix_card (fix, 0)->is_error);
        g_assert_nonnull (strstr (fix_output (fix, 0), "off the screen"));
        g_assert_null (fix_card (fix, 0)->image);
        screen_close (&s);
}

/* ask_for_help: the person is asked (the request escaped), and the model hears how it went:
 * the person took the screen and gave it back, said not now, or no one is there to ask. */
typedef enum { HELP_TAKE_AND_GIVE_BACK, HELP_DECLINE, HELP_NO_ONE } HelpAnswer;

typedef struct {
        Fix *fix;
        CorralComputer *computer;
        HelpAnswer answer;
        GPtrArray *requests; /* what the person was shown, NULL for "no longer asking" */
} Helper;

static gboolean
give_back (gpointer data)
{
        corral_computer_release (data);
        return G_SOURCE_REMOVE;
}

static void
on_help (CorralAssistantSession *session, const char *request, Helper *h)
{
        g_ptr_array_add (h->requests, g_strdup (request));
        if (!request)
                return;
        if (h->answer == HELP_DECLINE) {
                corral_assistant_session_decline_help (session);
                return;
        }
        /* The person takes the screen, does it, and gives it back a little later. */
        corral_computer_hold (h->computer, "signing in");
        g_timeout_add (200, give_back, h->computer);
}

static void
test_ask_for_help (gconstpointer data)
{
        HelpAnswer answer = GPOINTER_TO_INT (data);
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autoptr (GPtrArray) requests = g_ptr_array_new_with_free_func (g_free);
        Screen s = { 0 };
        Helper h = { fix, NULL, answer, requests };
        g_autofree char *first = NULL;
        const char *out;

        screen_open (&s);
        h.computer = s.computer;
        corral_assistant_session_set_computer (fix->session, s.computer);
        if (answer != HELP_NO_ONE)
                g_signal_connect (fix->session, "help-requested", G_CALLBACK (on_help), &h);
        fix_push (fix, NULL, "ask_for_help",
                  "{\"request\": \"Please sign in to the bank\\u202e site\"}", "tool");
        fix_push (fix, "Thanks.", NULL, NULL, "end");
        fix_run (fix, "Pay the bill", NULL);
        g_assert_no_error (fix->error);
        first = fix_sent_text (fix, 0);
        g_assert_nonnull (strstr (first, "\"name\":\"ask_for_help\""));
        out = fix_output (fix, 0);
        g_test_message ("%s", out);
        g_assert_cmpstr (fix_card (fix, 0)->tool, ==, "ask_for_help");
        switch (answer) {
        case HELP_TAKE_AND_GIVE_BACK:
                g_assert_nonnull (strstr (out, "took the screen and gave it back"));
                break;
        case HELP_DECLINE:
                g_assert_nonnull (strstr (out, "said not now"));
                break;
        case HELP_NO_ONE:
                g_assert_nonnull (strstr (out, "No one is watching"));
                g_assert_cmpuint (requests->len, ==, 0);
                break;
        }
        if (answer != HELP_NO_ONE) {
                /* Asked once, with the bidi control shown as an escape, then no longer. */
                g_assert_cmpuint (requests->len, ==, 2);
                g_assert_cmpstr (requests->pdata[0], ==, "Please sign in to the bank\\u202E site");
                g_assert_null (requests->pdata[1]);
                g_assert_false (corral_computer_is_held (s.computer));
        }
        screen_close (&s);
}

int
main (int argc, char **argv)
{
        fix_init_environment ();
        g_test_init (&argc, &argv, NULL);
        g_test_add_data_func ("/assistant-computer/anthropic/two-steps",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_ANTHROPIC), test_two_steps);
        g_test_add_data_func ("/assistant-computer/openai/two-steps",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_OPENAI), test_two_steps);
        g_test_add_func ("/assistant-computer/off-by-default", test_off_by_default);
        g_test_add_func ("/assistant-computer/bad-action", test_bad_action);
        g_test_add_data_func ("/assistant-computer/ask-for-help/given-back",
                              GINT_TO_POINTER (HELP_TAKE_AND_GIVE_BACK), test_ask_for_help);
        g_test_add_data_func ("/assistant-computer/ask-for-help/not-now",
                              GINT_TO_POINTER (HELP_DECLINE), test_ask_for_help);
        g_test_add_data_func ("/assistant-computer/ask-for-help/no-one",
                              GINT_TO_POINTER (HELP_NO_ONE), test_ask_for_help);
        return g_test_run ();
}
