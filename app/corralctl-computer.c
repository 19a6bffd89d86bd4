/* corralctl-computer.c — corralctl computer VM ACTION…: one action of the assistant's computer
 * tool (app/computer/corral-computer.c) on a VM's screen, as a person or a script gives it.
 *
 * The words become the tool's JSON input ("click 100 200" is {"action": "left_click",
 * "coordinate": [100, 200]}), or --json gives that input as it is; coordinates are the
 * screenshot's (the screen as the model sees it, "corralctl computer VM size"). Every action is
 * recorded in the VM folder's computer.jsonl, beside the file server's audit.jsonl.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-computer.h"

#include <cjson/cJSON.h>
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

#include "corral-cjson.h"
#include "corral-computer-log.h"
#include "corral-computer.h"
#include "corral-vnc.h"
#include "corralctl-opts.h"
#include "corralctl-share.h"
#include "corralctl-vm.h"

/* How long the first picture of the screen may take once connected. */
#define FIRST_PICTURE_MS 10000

static int
report (const char *message)
{
        g_printerr ("corralctl computer: %s\n", message);
        return CORRALCTL_EXIT_USAGE;
}

static gboolean
number (const char *what, const char *text, cJSON *array, GError **error)
{
        gint64 v;

        if (!g_ascii_string_to_signed (text, 10, -1000000, 1000000, &v, NULL)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("%s must be a whole number, not “%s”"), what, text);
                return FALSE;
        }
        cJSON_AddItemToArray (array, cJSON_CreateNumber ((double) v));
        return TRUE;
}

static gboolean
point (cJSON *input, const char *name, const char *x, const char *y, GError **error)
{
        cJSON *array = cJSON_AddArrayToObject (input, name);

        return number ("X", x, array, error) && number ("Y", y, array, error);
}

/* The tool's input from the words after VM: (transfer full) or NULL with an error. */
static cJSON *
input_from_words (
        int n, char **w, const char *button, guint count, const char *hold, GError **error)
{
        g_autoptr (cJSON) input = cJSON_CreateObject ();
        const char *verb = n > 0 ? w[0] : "";
        const char *action = NULL;
        int want = 0;

        if (g_str_equal (verb, "screenshot"))
                action = "screenshot";
        else if (g_str_equal (verb, "cursor"))
                action = "cursor_position";
        else if (g_str_equal (verb, "move"))
                action = "mouse_move", want = 2;
        else if (g_str_equal (verb, "click"))
                want = 2;
        else if (g_str_equal (verb, "down"))
                action = "left_mouse_down", want = -2;
        else if (g_str_equal (verb, "up"))
                action = "left_mouse_up", want = -2;
        else if (g_str_equal (verb, "drag"))
                action = "left_click_drag", want = 4;
        else if (g_str_equal (verb, "scroll"))
                action = "scroll", want = 3;
        else if (g_str_equal (verb, "type"))
                action = "type", want = 1;
        else if (g_str_equal (verb, "key"))
                action = "key", want = 1;
        else if (g_str_equal (verb, "hold"))
                action = "hold_key", want = 2;
        else if (g_str_equal (verb, "wait"))
                action = "wait", want = 1;
        else if (g_str_equal (verb, "zoom"))
                action = "zoom", want = 4;
        else {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("unknown action “%s” (see “corralctl computer --help”)"), verb);
                return NULL;
        }
        if (g_str_equal (verb, "click")) {
                static const char *const names[3][3] = {
                        { "left_click", "double_click", "triple_click" },
                        { "right_click", NULL, NULL },
                        { "middle_click", NULL, NULL },
                };
                guint b = g_strcmp0 (button, "right") == 0    ? 1
                          : g_strcmp0 (button, "middle") == 0 ? 2
                                                              : 0;

                if (button && b == 0 && !g_str_equal (button, "left")) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("--button is left, right or middle, not “%s”"), button);
                        return NULL;
                }
                if (count < 1 || count > 3 || !names[b][count - 1]) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                             _ ("--count is 1, 2 or 3, and more than 1 only for "
                                                "the left button"));
                        return NULL;
                }
                action = names[b][count - 1];
        }
        /* want < 0: that many, or none */
        if (!(n - 1 == ABS (want) || (want < 0 && n == 1) ||
              (g_str_equal (verb, "scroll") && n - 1 == 4))) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” takes %d argument(s) (see “corralctl computer --help”)"),
                             verb, ABS (want));
                return NULL;
        }
        cJSON_AddStringToObject (input, "action", action);
        if (g_str_equal (verb, "move") || g_str_equal (verb, "click") ||
            ((g_str_equal (verb, "down") || g_str_equal (verb, "up")) && n == 3) ||
            g_str_equal (verb, "scroll")) {
                if (!point (input, "coordinate", w[1], w[2], error))
                        return NULL;
        }
        if (g_str_equal (verb, "drag") && (!point (input, "start_coordinate", w[1], w[2], error) ||
                                           !point (input, "coordinate", w[3], w[4], error)))
                return NULL;
        if (g_str_equal (verb, "zoom")) {
                cJSON *region = cJSON_AddArrayToObject (input, "region");

                for (int i = 1; i <= 4; i++)
                        if (!number (i % 2 ? "X" : "Y", w[i], region, error))
                                return NULL;
        }
        if (g_str_equal (verb, "scroll")) {
                cJSON_AddStringToObject (input, "scroll_direction", w[3]);
                if (n == 5) {
                        cJSON *amount = cJSON_CreateArray ();

                        if (!number (_ ("The amount"), w[4], amount, error)) {
                                cJSON_Delete (amount);
                                return NULL;
                        }
                        cJSON_AddNumberToObject (input, "scroll_amount",
                                                 cJSON_GetArrayItem (amount, 0)->valuedouble);
                        cJSON_Delete (amount);
                }
        }
        if (g_str_equal (verb, "type") || g_str_equal (verb, "key") || g_str_equal (verb, "hold"))
                cJSON_AddStringToObject (input, "text", w[1]);
        if (g_str_equal (verb, "hold") || g_str_equal (verb, "wait")) {
                const char *text = w[g_str_equal (verb, "hold") ? 2 : 1];
                char *end = NULL;
                double seconds = g_ascii_strtod (text, &end);

                if (end == text || *end || !(seconds >= 0 && seconds <= 60)) {
                        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("the time is a number of seconds from 0 to 60, not “%s”"),
                                     text);
                        return NULL;
                }
                cJSON_AddNumberToObject (input, "duration", seconds);
        }
        if (hold && (g_str_has_suffix (action, "_click") || g_str_equal (action, "scroll")))
                cJSON_AddStringToObject (input, "text", hold);
        return g_steal_pointer (&input);
}

static void
on_closed (CorralVnc *vnc, const char *reason, gpointer data)
{
        char **slot = data;

        if (reason && !*slot)
                *slot = g_strdup (reason);
}

static gboolean
wake (gpointer data)
{
        *(gboolean *) data = TRUE;
        return G_SOURCE_REMOVE;
}

CorralComputer *
corralctl_computer_open (const char *vm, const char *vm_dir, GError **error)
{
        g_autofree char *sock = g_build_filename (vm_dir, "vnc.sock", NULL);
        g_autofree char *closed_reason = NULL;
        g_autoptr (CorralVnc) vnc = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        gboolean late = FALSE;
        guint timeout;

        if (!g_file_test (sock, G_FILE_TEST_EXISTS)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("the VM “%s” has no screen, or is not running (a VM with one: "
                                "corralctl vm create --screen NAME)"),
                             vm);
                return NULL;
        }
        vnc = corral_vnc_new ();
        g_signal_connect (vnc, "closed", G_CALLBACK (on_closed), &closed_reason);
        corral_vnc_connect_async (vnc, sock, NULL, corralctl_got_result, &res);
        if (!corral_vnc_connect_finish (vnc, corralctl_wait_for (&res), error))
                return NULL;
        timeout = g_timeout_add (FIRST_PICTURE_MS, wake, &late);
        while (corral_vnc_get_update_count (vnc) == 0 && corral_vnc_is_connected (vnc) && !late)
                g_main_context_iteration (NULL, TRUE);
        if (!late)
                g_source_remove (timeout);
        g_signal_handlers_disconnect_by_func (vnc, on_closed, &closed_reason);
        if (corral_vnc_get_update_count (vnc) == 0) {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                     closed_reason ? closed_reason
                                                   : _ ("the VM’s screen sent no picture"));
                return NULL;
        }
        return corral_computer_new (vnc);
}

int
corralctl_computer_main (int argc, char **argv)
{
        g_autofree char *output = NULL, *json = NULL, *button = NULL, *hold = NULL;
        int count = 1;
        gboolean jpeg = FALSE;
        const GOptionEntry entries[] = {
                { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
                  N_ ("Write the screenshot taken after the action to FILE"), N_ ("FILE") },
                { "json", 0, 0, G_OPTION_ARG_STRING, &json,
                  N_ ("The tool’s input as the model sends it, instead of ACTION"), N_ ("JSON") },
                { "button", 0, 0, G_OPTION_ARG_STRING, &button,
                  N_ ("click: left (the default), right or middle"), N_ ("BUTTON") },
                { "count", 0, 0, G_OPTION_ARG_INT, &count,
                  N_ ("click: 1 (the default), 2 (double) or 3 (triple)"), N_ ("N") },
                { "hold", 0, 0, G_OPTION_ARG_STRING, &hold,
                  N_ ("click, scroll: modifier keys held, such as shift or ctrl+alt"),
                  N_ ("KEYS") },
                { "jpeg", 0, 0, G_OPTION_ARG_NONE, &jpeg,
                  N_ ("Write the screenshot as JPEG, not PNG"), NULL },
                G_OPTION_ENTRY_NULL
        };
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) input = NULL;
        g_autoptr (CorralComputer) computer = NULL;
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (CorralComputerResult) result = NULL;
        g_autofree char *vm_dir = NULL;

        if (!corralctl_options_parse (
                    "computer", _ ("VM ACTION [ARGUMENT…]"),
                    _ ("Do one action of the assistant’s computer tool on a VM’s screen (a VM made "
                       "with "
                       "“corralctl vm create --screen”). Coordinates are the screenshot’s.\n\n"
                       "Actions:\n"
                       "  screenshot -o FILE          the screen as the model sees it\n"
                       "  size                        the screenshot’s size and the screen’s\n"
                       "  cursor                      where the pointer is\n"
                       "  move X Y                    move the pointer\n"
                       "  click X Y                   click (--button, --count, --hold)\n"
                       "  down|up [X Y]               press or release the left button\n"
                       "  drag X1 Y1 X2 Y2            drag with the left button\n"
                       "  scroll X Y DIRECTION [N]    up, down, left or right, N steps\n"
                       "  type TEXT                   type text\n"
                       "  key COMBO                   press keys: ctrl+s, Return, alt+F4\n"
                       "  hold COMBO SECONDS          hold keys down\n"
                       "  wait SECONDS                wait, then take a screenshot\n"
                       "  zoom X0 Y0 X1 Y1            a region, enlarged"),
                    entries, &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (argc < 2 || (argc < 3 && !json))
                return corralctl_usage_error ("computer", _ ("VM ACTION [ARGUMENT…]"));
        if (!(vm_dir = corralctl_vm_dir (argv[1], &error)))
                return report (error->message);

        if (json) {
                if (argc > 2)
                        return report (_ ("give either --json or an action, not both"));
                if (!(input = cJSON_Parse (json)) || !cJSON_IsObject (input))
                        return report (_ ("--json must be a JSON object, such as "
                                          "{\"action\": \"screenshot\"}"));
        } else if (!g_str_equal (argv[2], "size") &&
                   !(input = input_from_words (argc - 2, argv + 2, button, (guint) count, hold,
                                               &error))) {
                return report (error->message);
        }

        if (!(computer = corralctl_computer_open (argv[1], vm_dir, &error)))
                return report (error->message);
        corral_computer_set_image_format (computer, jpeg ? CORRAL_COMPUTER_IMAGE_JPEG
                                                         : CORRAL_COMPUTER_IMAGE_PNG);
        if (!input) {
                CorralScreenScale scale;

                corral_computer_get_scale (computer, &scale);
                g_print (_ ("screenshot %ux%u (the screen %ux%u)\n"), scale.width, scale.height,
                         scale.screen_width, scale.screen_height);
                return 0;
        }
        g_clear_object (&res);
        corral_computer_run_async (computer, input, NULL, corralctl_got_result, &res);
        result = corral_computer_run_finish (computer, corralctl_wait_for (&res), &error);
        corral_computer_log (vm_dir, "corralctl", input, result ? result->text : NULL, error);
        if (!result)
                return report (error->message);
        if (result->text && *result->text)
                g_print ("%s\n", result->text);
        if (output && result->image) {
                if (!g_file_set_contents (output, g_bytes_get_data (result->image, NULL),
                                          g_bytes_get_size (result->image), &error))
                        return report (error->message);
                g_print (_ ("%s: %ux%u %s\n"), output, result->image_width, result->image_height,
                         result->mime_type);
        } else if (output) {
                return report (_ ("this action has no picture to write"));
        }
        return 0;
}
