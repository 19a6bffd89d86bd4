/* test-ui-screen.c — the Screen panel (computer use) against a real VNC server (LibVNCServer,
 * tests/integration/vnc-test-server.h) on a unix socket, as a VM's vnc.sock: the live view
 * shows the same picture the assistant's screenshot does, Take Control makes the assistant's
 * input wait until Give Back, and a task without a screen says so. Screenshots are saved like
 * the other UI tests'.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib/gstdio.h>
#include <string.h>

#include "corral-screen-panel.h"
#include "corral-tool-card.h"
#include "ui-test-util.h"
#include "vnc-test-server.h"

typedef struct {
        char *tmp;
        char *socket;
        GtkWidget *window;
        CorralScreenPanel *panel;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        f->tmp = g_dir_make_tmp ("corral-ui-screen-XXXXXX", NULL);
        f->socket = g_build_filename (f->tmp, "vnc.sock", NULL);
        f->window = gtk_window_new ();
        gtk_window_set_default_size (GTK_WINDOW (f->window), 900, 640);
        f->panel = CORRAL_SCREEN_PANEL (corral_screen_panel_new ());
        gtk_window_set_child (GTK_WINDOW (f->window), GTK_WIDGET (f->panel));
        gtk_window_present (GTK_WINDOW (f->window));
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        if (f->panel)
                corral_screen_panel_set_socket (f->panel, NULL);
        gtk_window_destroy (GTK_WINDOW (f->window));
        ui_test_spin (100);
        if (g_file_test (f->socket, G_FILE_TEST_EXISTS))
                vnc_test_server_stop ();
        g_unlink (f->socket);
        g_rmdir (f->tmp);
        g_free (f->socket);
        g_free (f->tmp);
}

static gboolean
picture_shown (gpointer data)
{
        Fixture *f = data;
        GtkWidget *picture = ui_test_find_type (GTK_WIDGET (f->panel), GTK_TYPE_PICTURE);

        return picture && gtk_picture_get_paintable (GTK_PICTURE (picture)) &&
               corral_screen_panel_get_computer (f->panel) &&
               ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_LABEL,
                             "The assistant uses this screen. Take control to use it yourself.");
}

static void
on_done (GObject *src, GAsyncResult *res, gpointer data)
{
        *(GAsyncResult **) data = g_object_ref (res);
}

/* Starts the action json; *res is set when it ends. */
static void
run (CorralComputer *computer, const char *json, GAsyncResult **res)
{
        cJSON *input = cJSON_Parse (json);

        g_assert_nonnull (input);
        corral_computer_run_async (computer, input, NULL, on_done, res);
        cJSON_Delete (input);
}

static gboolean
have_result (gpointer data)
{
        return *(GAsyncResult **) data != NULL;
}

static void
start_screen (Fixture *f)
{
        vnc_test_server_listen (f->socket);
        corral_screen_panel_set_socket (f->panel, f->socket);
        g_assert_true (ui_test_wait (picture_shown, f, 10000));
        /* The first picture may come in several updates: the tool's own screenshot action
         * waits until the screen has settled. */
        {
                GAsyncResult *res = NULL;
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralComputerResult) settled = NULL;
                CorralComputer *computer = corral_screen_panel_get_computer (f->panel);

                run (computer, "{\"action\": \"screenshot\"}", &res);
                g_assert_true (ui_test_wait (have_result, &res, 20000));
                settled = corral_computer_run_finish (computer, res, &error);
                g_object_unref (res);
                g_assert_no_error (error);
        }
        g_array_unref (vnc_test_server_take_events ());
}

/* The view shows what the assistant sees: the panel's picture and the tool's screenshot agree
 * cell by cell (ui_test_view_distance: mean colour within 24 of 255). */
static void
test_view_matches_screenshot (Fixture *f, gconstpointer data)
{
        g_autoptr (GdkTexture) view = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) shot = NULL;
        g_autoptr (GdkPixbufLoader) loader = gdk_pixbuf_loader_new ();

        start_screen (f);
        ui_test_screenshot (f->window, "30-screen-panel");
        shot = corral_computer_screenshot (corral_screen_panel_get_computer (f->panel), &error);
        g_assert_no_error (error);
        g_assert_true (gdk_pixbuf_loader_write_bytes (loader, shot->image, &error));
        g_assert_true (gdk_pixbuf_loader_close (loader, &error));
        view = ui_test_render (ui_test_find_type (GTK_WIDGET (f->panel), GTK_TYPE_PICTURE));
        g_assert_cmpfloat (ui_test_view_distance (view, gdk_pixbuf_loader_get_pixbuf (loader),
                                                  VNC_TEST_SCREEN_W, VNC_TEST_SCREEN_H),
                           <, 24);
}

/* Take Control: the assistant's click waits (nothing reaches the screen) until Give Back, and
 * its result says it waited for the person. */
static void
test_take_control (Fixture *f, gconstpointer data)
{
        GtkWidget *take;
        GtkWidget *give;
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result = NULL;
        CorralComputer *computer;
        g_autoptr (GArray) events = NULL;

        start_screen (f);
        computer = corral_screen_panel_get_computer (f->panel);
        take = ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_BUTTON, "Take Control");
        g_assert_nonnull (take);
        /* A button's activation is a short press: clicked comes 250 ms later. */
        gtk_widget_activate (take);
        ui_test_spin (400);
        g_assert_true (corral_computer_is_held (computer));
        g_assert_true (corral_screen_panel_get_in_control (f->panel));
        g_assert_nonnull (
                ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_LABEL,
                              "You have the screen. The assistant waits until you give it back."));
        ui_test_screenshot (f->window, "31-screen-in-control");

        g_array_unref (vnc_test_server_take_events ());
        run (computer, "{\"action\": \"left_click\", \"coordinate\": [100, 100]}", &res);
        ui_test_spin (1500);
        g_assert_null (res);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, ==, 0);

        give = ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_BUTTON, "Give Back");
        g_assert_nonnull (give);
        gtk_widget_activate (give);
        g_assert_true (ui_test_wait (have_result, &res, 10000));
        result = corral_computer_run_finish (computer, res, &error);
        g_object_unref (res);
        g_assert_no_error (error);
        g_test_message ("%s", result->text);
        g_assert_nonnull (strstr (result->text, "waited"));
        g_assert_false (corral_computer_is_held (computer));
        ui_test_spin (300);
        g_clear_pointer (&events, g_array_unref);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, >, 0);
}

static void
on_declined (CorralScreenPanel *panel, gboolean *declined)
{
        *declined = TRUE;
}

/* The assistant asks for help: its request above the screen, Not Now answers it. */
static void
test_help_request (Fixture *f, gconstpointer data)
{
        gboolean declined = FALSE;
        GtkWidget *label, *not_now;

        start_screen (f);
        g_signal_connect (f->panel, "help-declined", G_CALLBACK (on_declined), &declined);
        corral_screen_panel_set_help_request (f->panel, "Please sign in to the bank site.");
        label = ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_LABEL,
                              "The assistant asks for your help: Please sign in to the bank "
                              "site. Take control, do it, then give the screen back.");
        g_assert_nonnull (label);
        ui_test_screenshot (f->window, "34-screen-help-request");
        not_now = ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_BUTTON, "Not Now");
        g_assert_nonnull (not_now);
        gtk_widget_activate (not_now);
        ui_test_spin (400);
        g_assert_true (declined);
        g_assert_false (gtk_widget_get_visible (gtk_widget_get_parent (label)));
        /* The assistant stopped asking: the bar goes. */
        corral_screen_panel_set_help_request (f->panel, "Again");
        corral_screen_panel_set_help_request (f->panel, NULL);
        g_assert_false (gtk_widget_get_visible (gtk_widget_get_parent (label)));
}

/* A task without a screen: the page says what turns one on. */
static void
test_no_screen (Fixture *f, gconstpointer data)
{
        corral_screen_panel_set_vm_dir (f->panel, f->tmp);
        g_assert_null (corral_screen_panel_get_computer (f->panel));
        ui_test_spin (200);
        g_assert_nonnull (
                ui_test_find (GTK_WIDGET (f->panel), GTK_ACCESSIBLE_ROLE_LABEL, "No Screen"));
        ui_test_screenshot (f->window, "32-screen-none");
}

static gboolean
ignore_no_wm_warnings (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
        return !(g_strcmp0 (domain, "Gtk") == 0 && strstr (message, "did not receive a focus-out"));
}

/* The assistant's computer action in the transcript: its words, and the screenshot it got with
 * the point it clicked marked (a red ring where the click was, in the picture as shown). */
static void
test_tool_card (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralChatTool) tool =
                corral_chat_tool_new ("c1", "computer", "computer: left_click");
        g_autoptr (GdkPixbuf) shot = gdk_pixbuf_new (GDK_COLORSPACE_RGB, FALSE, 8, 400, 250);
        g_autoptr (GdkTexture) drawn = NULL;
        g_autofree guint8 *px = NULL;
        g_autofree char *diff = NULL;
        gchar *png = NULL;
        gsize png_len = 0;
        GtkWidget *card, *picture;
        int w, h;
        double scale;
        guint reds = 0;

        gdk_pixbuf_fill (shot, 0x808080ff);
        g_assert_true (gdk_pixbuf_save_to_buffer (shot, &png, &png_len, "png", NULL, NULL));
        tool->image = g_bytes_new_take (png, png_len);
        tool->has_point = TRUE;
        tool->point_x = 300;
        tool->point_y = 60;
        tool->finished = TRUE;
        tool->output = g_strdup ("Clicked at (300, 60).");
        card = corral_tool_card_new (tool);
        gtk_window_set_child (GTK_WINDOW (f->window), card);
        f->panel = NULL;
        diff = gtk_test_accessible_check_property (GTK_ACCESSIBLE (card),
                                                   GTK_ACCESSIBLE_PROPERTY_LABEL, "Clicked: Done");
        g_assert_cmpstr (diff, ==, NULL);
        picture = ui_test_find (card, GTK_ACCESSIBLE_ROLE_IMG,
                                "What the assistant saw, with where it pointed marked");
        g_assert_nonnull (picture);
        ui_test_screenshot (f->window, "33-computer-tool-card");
        drawn = ui_test_render (picture);
        w = gdk_texture_get_width (drawn);
        h = gdk_texture_get_height (drawn);
        px = g_malloc ((gsize) w * h * 4);
        gdk_texture_download (drawn, px, (gsize) w * 4);
        /* Contained, centred: the point's place in the picture as drawn. */
        scale = MIN (w / 400.0, h / 250.0);
        for (int dy = -16; dy <= 16; dy++) {
                for (int dx = -16; dx <= 16; dx++) {
                        int x = (int) ((w - 400 * scale) / 2 + 300 * scale) + dx;
                        int y = (int) ((h - 250 * scale) / 2 + 60 * scale) + dy;
                        const guint8 *p = px + ((gsize) y * w + x) * 4; /* B G R A */

                        if (x >= 0 && y >= 0 && x < w && y < h && p[2] > 180 && p[1] < 90 &&
                            p[0] < 90)
                                reds++;
                }
        }
        g_test_message ("picture %dx%d, %u red pixels around the point", w, h, reds);
        g_assert_cmpuint (reds, >, 20);
}

int
main (int argc, char **argv)
{
        int status;

        /* 77: no display (the TAP skip line is printed), which TAP reports as a skip with 0. */
        if ((status = ui_test_setup_display ()) != 0)
                return status == 77 ? 0 : status;
        gtk_test_init (&argc, &argv, NULL);
        g_test_log_set_fatal_handler (ignore_no_wm_warnings, NULL);
        adw_init ();
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/ui-screen/view-matches-screenshot", test_view_matches_screenshot);
        ADD ("/ui-screen/take-control", test_take_control);
        ADD ("/ui-screen/no-screen", test_no_screen);
        ADD ("/ui-screen/help-request", test_help_request);
        ADD ("/ui-screen/tool-card", test_tool_card);
#undef ADD
        status = g_test_run ();
        ui_test_teardown_display ();
        return status;
}
