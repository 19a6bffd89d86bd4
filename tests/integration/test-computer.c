/* test-computer.c — the computer tool's actions (app/computer/corral-computer.c) through Corral's
 * VNC client against a real VNC server (LibVNCServer, in this process, over a socketpair) that
 * records every key and pointer event and repaints when clicked, as a desktop would.
 *
 * The screen is 1920x1200, so the model sees it scaled (1357x848) and every point is mapped
 * back: the events the server receives must be exactly the ones the action means, at the
 * pixels the model pointed at, in order, with every key and button let go at the end.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/socket.h>
#include <xkbcommon/xkbcommon-keysyms.h>

#include "corral-computer.h"
#include "vnc-test-server.h"

#define SCREEN_W VNC_TEST_SCREEN_W
#define SCREEN_H VNC_TEST_SCREEN_H

typedef VncTestEvent Event;

/* The client side ---------------------------------------------------------------------- */

typedef struct {
        CorralVnc *vnc;
        CorralComputer *computer;
} Fixture;

static void
on_done (GObject *src, GAsyncResult *res, gpointer data)
{
        *(GAsyncResult **) data = g_object_ref (res);
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        /* data: the server offers QEMU's extended key events. */
        vnc_test_server_offer_extended_keys (data != NULL);
        f->vnc = vnc_test_server_connect (NULL);
        f->computer = corral_computer_new (f->vnc);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        g_clear_object (&f->computer);
        corral_vnc_close (f->vnc);
        g_clear_object (&f->vnc);
        vnc_test_server_stop ();
        for (guint i = 0; i < 20; i++) {
                while (g_main_context_iteration (NULL, FALSE))
                        ;
                g_usleep (5000);
        }
}

/* Runs input (JSON text) to its end. */
static CorralComputerResult *
run (Fixture *f, const char *json, GError **error)
{
        cJSON *input = cJSON_Parse (json);
        GAsyncResult *res = NULL;
        CorralComputerResult *result;

        g_assert_nonnull (input);
        corral_computer_run_async (f->computer, input, NULL, on_done, &res);
        cJSON_Delete (input);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        result = corral_computer_run_finish (f->computer, res, error);
        g_object_unref (res);
        return result;
}

/* Waits (10 s at most) until the server has seen at least n events: input crosses a thread and a
 * socket before it is recorded. */
static void
wait_events (guint n)
{
        gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

        while (vnc_test_server_n_events () < n && g_get_monotonic_time () < until) {
                g_main_context_iteration (NULL, FALSE);
                g_usleep (2000);
        }
}

/* Runs input, waits for the server to have seen n events, and takes them. */
static GArray *
run_expecting (Fixture *f, const char *json, guint n)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result = run (f, json, &error);

        g_assert_no_error (error);
        g_assert_nonnull (result);
        wait_events (n);
        g_usleep (50000); /* and nothing more */
        return vnc_test_server_take_events ();
}

static void
assert_key (GArray *events, guint i, guint32 keysym, gboolean down)
{
        const Event *e;

        g_assert_cmpuint (i, <, events->len);
        e = &g_array_index (events, Event, i);
        g_assert_cmpint (e->type, ==, 'k');
        g_assert_cmphex (e->keysym, ==, keysym);
        g_assert_cmpint (e->down, ==, down != 0); /* rfb.h makes TRUE -1 */
}

static void
assert_pointer (GArray *events, guint i, int x, int y, int buttons)
{
        const Event *e;

        g_assert_cmpuint (i, <, events->len);
        e = &g_array_index (events, Event, i);
        g_assert_cmpint (e->type, ==, 'p');
        g_assert_cmpint (e->x, ==, x);
        g_assert_cmpint (e->y, ==, y);
        g_assert_cmpint (e->buttons, ==, buttons);
}

/* The screen as the model sees it, decoded. */
static GdkPixbuf *
decode (const CorralComputerResult *result)
{
        g_autoptr (GdkPixbufLoader) loader = gdk_pixbuf_loader_new ();
        g_autoptr (GError) error = NULL;

        g_assert_nonnull (result->image);
        g_assert_true (gdk_pixbuf_loader_write_bytes (loader, result->image, &error));
        g_assert_true (gdk_pixbuf_loader_close (loader, &error));
        g_assert_no_error (error);
        return g_object_ref (gdk_pixbuf_loader_get_pixbuf (loader));
}

static guint32
pixel (GdkPixbuf *pixbuf, guint x, guint y)
{
        const guint8 *p = gdk_pixbuf_read_pixels (pixbuf) + y * gdk_pixbuf_get_rowstride (pixbuf) +
                          x * gdk_pixbuf_get_n_channels (pixbuf);

        return (guint32) p[0] << 16 | p[1] << 8 | p[2];
}

static void
test_screenshot (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result = run (f, "{\"action\": \"screenshot\"}", &error);
        g_autoptr (GdkPixbuf) picture = NULL;
        CorralScreenScale scale;
        guint sx, sy;

        g_assert_no_error (error);
        corral_computer_get_scale (f->computer, &scale);
        g_assert_cmpuint (scale.width, ==, result->image_width);
        g_assert_cmpuint (scale.height, ==, result->image_height);
        g_assert_cmpuint (MAX (scale.width, scale.height), <=, CORRAL_COMPUTER_MAX_LONG_EDGE);
        g_assert_cmpuint (scale.width * scale.height, <=, CORRAL_COMPUTER_MAX_PIXELS);
        g_assert_cmpstr (result->mime_type, ==, "image/png");
        picture = decode (result);
        g_assert_cmpint (gdk_pixbuf_get_width (picture), ==, scale.width);
        g_assert_cmpint (gdk_pixbuf_get_height (picture), ==, scale.height);
        /* The blue square where the model would see it, grey elsewhere. */
        corral_computer_scale_to_model (&scale, 1010, 650, &sx, &sy);
        g_assert_cmphex (pixel (picture, sx, sy), ==, 0x0000ff);
        g_assert_cmphex (pixel (picture, 10, 10), ==, 0x808080);
        g_assert_false (result->has_point);

        /* JPEG when the provider prefers it. */
        corral_computer_set_image_format (f->computer, CORRAL_COMPUTER_IMAGE_JPEG);
        {
                g_autoptr (CorralComputerResult) jpeg =
                        run (f, "{\"action\":\"screenshot\"}", &error);

                g_assert_no_error (error);
                g_assert_cmpstr (jpeg->mime_type, ==, "image/jpeg");
                g_clear_object (&picture);
                picture = decode (jpeg);
                g_assert_cmpint (gdk_pixbuf_get_width (picture), ==, scale.width);
        }
}

static void
test_click (Fixture *f, gconstpointer data)
{
        CorralScreenScale scale;
        guint mx, my, sx, sy;
        g_autofree char *json = NULL;
        g_autoptr (GArray) events = NULL;

        corral_computer_get_scale (f->computer, &scale);
        corral_computer_scale_to_model (&scale, 1010, 650, &mx, &my);
        /* Where that point of the model's lands (a scaled-down pixel covers a few of the
         * screen's). */
        g_assert_true (corral_computer_scale_to_screen (&scale, mx, my, &sx, &sy, NULL));
        g_assert_cmpuint (sx, >=, 1009);
        g_assert_cmpuint (sx, <=, 1011);
        json = g_strdup_printf ("{\"action\": \"left_click\", \"coordinate\": [%u, %u], "
                                "\"text\": \"shift\"}",
                                mx, my);
        events = run_expecting (f, json, 5);
        /* Shift down, move there, press, release, shift up: at the very pixel. */
        g_assert_cmpuint (events->len, ==, 5);
        assert_key (events, 0, XKB_KEY_Shift_L, TRUE);
        assert_pointer (events, 1, sx, sy, 0);
        assert_pointer (events, 2, sx, sy, 1);
        assert_pointer (events, 3, sx, sy, 0);
        assert_key (events, 4, XKB_KEY_Shift_L, FALSE);
        g_clear_pointer (&events, g_array_unref);

        /* A triple click of the right button where the pointer is. */
        events = run_expecting (f, "{\"action\": \"triple_click\"}", 7);
        g_assert_cmpuint (events->len, ==, 7);
        for (guint i = 0; i < 3; i++) {
                assert_pointer (events, 1 + i * 2, sx, sy, 1);
                assert_pointer (events, 2 + i * 2, sx, sy, 0);
        }
        g_clear_pointer (&events, g_array_unref);
        events = run_expecting (f, "{\"action\": \"right_click\", \"coordinate\": [0, 0]}", 3);
        assert_pointer (events, 1, 0, 0, 4);
        assert_pointer (events, 2, 0, 0, 0);
}

static void
test_cursor_position (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) moved =
                run (f, "{\"action\": \"mouse_move\", \"coordinate\": [321, 456]}", &error);
        g_autoptr (CorralComputerResult) where = NULL;

        g_assert_no_error (error);
        g_assert_true (moved->has_point);
        g_assert_cmpuint (moved->point_x, ==, 321);
        g_assert_cmpuint (moved->point_y, ==, 456);
        where = run (f, "{\"action\": \"cursor_position\"}", &error);
        g_assert_no_error (error);
        g_assert_cmpstr (where->text, ==, "X=321,Y=456");
        g_assert_null (where->image);
}

/* What "type" sends for "a@#{}|~<>é中\n" on QEMU's VNC (with extended key events: each key's
 * scancode on the US keyboard) or another server (keysyms alone): Shift held around the
 * shifted symbols as a person would (QEMU's keysym mapping does not press it); "é", which has
 * no key there, as X's Compose sequence (the Compose key, ' and e); "中", which has none, as
 * GTK's Unicode input: ctrl+shift+u 4 e 2 d space. */
static const struct {
        guint32 keysym, scancode;
        gboolean down;
} typed[] = {
        { 'a', 0x1e, 1 },
        { 'a', 0x1e, 0 },
#define SHIFTED(sym, code)                                                                         \
        { XKB_KEY_Shift_L, 0x2a, 1 }, { sym, code, 1 }, { sym, code, 0 },                          \
        {                                                                                          \
                XKB_KEY_Shift_L, 0x2a, 0                                                           \
        }
#define TAP(sym, code)                                                                             \
        { sym, code, 1 },                                                                          \
        {                                                                                          \
                sym, code, 0                                                                       \
        }
        SHIFTED ('@', 0x03),
        SHIFTED ('#', 0x04),
        SHIFTED ('{', 0x1a),
        SHIFTED ('}', 0x1b),
        SHIFTED ('|', 0x2b),
        SHIFTED ('~', 0x29),
        SHIFTED ('<', 0x33),
        SHIFTED ('>', 0x34),
        TAP (XKB_KEY_Multi_key, 0xb8),
        TAP ('\'', 0x28),
        TAP ('e', 0x12),
        { XKB_KEY_Control_L, 0x1d, 1 },
        { XKB_KEY_Shift_L, 0x2a, 1 },
        TAP ('u', 0x16),
        { XKB_KEY_Shift_L, 0x2a, 0 },
        { XKB_KEY_Control_L, 0x1d, 0 },
        TAP ('4', 0x05),
        TAP ('e', 0x12),
        TAP ('2', 0x03),
        TAP ('d', 0x20),
        TAP (XKB_KEY_space, 0x39),
        TAP (XKB_KEY_Return, 0x1c),
#undef TAP
#undef SHIFTED
};

static void
test_type (Fixture *f, gconstpointer data)
{
        gboolean extended = data != NULL;
        g_autoptr (GArray) events = run_expecting (
                f, "{\"action\": \"type\", \"text\": \"a@#{}|~<>é中\\n\"}", G_N_ELEMENTS (typed));

        g_assert_cmpuint (events->len, ==, G_N_ELEMENTS (typed));
        for (guint i = 0; i < G_N_ELEMENTS (typed); i++) {
                assert_key (events, i, typed[i].keysym, typed[i].down);
                g_assert_cmphex (g_array_index (events, Event, i).scancode, ==,
                                 (extended ? typed[i].scancode : 0));
        }
}

static void
test_type_long (Fixture *f, gconstpointer data)
{
        g_autoptr (GString) text = g_string_new (NULL);
        g_autofree char *json = NULL;
        g_autoptr (GArray) events = NULL;

        for (guint i = 0; i < 260; i++)
                g_string_append_c (text, 'a' + i % 26);
        json = g_strdup_printf ("{\"action\": \"type\", \"text\": \"%s\"}", text->str);
        events = run_expecting (f, json, 520);
        g_assert_cmpuint (events->len, ==, 520);
        for (guint i = 0; i < 260; i++)
                assert_key (events, i * 2, 'a' + i % 26, TRUE);
}

static void
test_key (Fixture *f, gconstpointer data)
{
        g_autoptr (GArray) events =
                run_expecting (f, "{\"action\": \"key\", \"text\": \"ctrl+shift+t Return\"}", 8);

        g_assert_cmpuint (events->len, ==, 8);
        assert_key (events, 0, XKB_KEY_Control_L, TRUE);
        assert_key (events, 1, XKB_KEY_Shift_L, TRUE);
        assert_key (events, 2, 't', TRUE);
        assert_key (events, 3, 't', FALSE);
        assert_key (events, 4, XKB_KEY_Shift_L, FALSE);
        assert_key (events, 5, XKB_KEY_Control_L, FALSE);
        assert_key (events, 6, XKB_KEY_Return, TRUE);
        assert_key (events, 7, XKB_KEY_Return, FALSE);
}

/* Like xdotool: a key that needs Shift gets it when the combination has none. */
static void
test_key_shifted (Fixture *f, gconstpointer data)
{
        g_autoptr (GArray) events =
                run_expecting (f, "{\"action\": \"key\", \"text\": \"ctrl+A shift+A\"}", 10);

        g_assert_cmpuint (events->len, ==, 10);
        assert_key (events, 0, XKB_KEY_Shift_L, TRUE);
        assert_key (events, 1, XKB_KEY_Control_L, TRUE);
        assert_key (events, 2, 'A', TRUE);
        assert_key (events, 3, 'A', FALSE);
        assert_key (events, 4, XKB_KEY_Control_L, FALSE);
        assert_key (events, 5, XKB_KEY_Shift_L, FALSE);
        assert_key (events, 6, XKB_KEY_Shift_L, TRUE);
        assert_key (events, 7, 'A', TRUE);
        assert_key (events, 8, 'A', FALSE);
        assert_key (events, 9, XKB_KEY_Shift_L, FALSE);
}

static void
test_hold_key (Fixture *f, gconstpointer data)
{
        gint64 t0 = g_get_monotonic_time ();
        g_autoptr (GArray) events = run_expecting (
                f, "{\"action\": \"hold_key\", \"text\": \"alt\", \"duration\": 0.3}", 2);

        g_assert_cmpuint (events->len, ==, 2);
        assert_key (events, 0, XKB_KEY_Alt_L, TRUE);
        assert_key (events, 1, XKB_KEY_Alt_L, FALSE);
        /* Held for the duration (a lower bound: never asserted as a time it must be within). */
        g_assert_cmpint (g_get_monotonic_time () - t0, >=, 300000);
}

static void
test_scroll (Fixture *f, gconstpointer data)
{
        g_autoptr (GArray) events = run_expecting (
                f,
                "{\"action\": \"scroll\", \"coordinate\": [100, 100], \"scroll_direction\": "
                "\"down\", \"scroll_amount\": 3}",
                7);
        CorralScreenScale scale;
        guint sx, sy;
        g_autoptr (GError) error = NULL;

        corral_computer_get_scale (f->computer, &scale);
        g_assert_true (corral_computer_scale_to_screen (&scale, 100, 100, &sx, &sy, &error));
        g_assert_cmpuint (events->len, ==, 7);
        assert_pointer (events, 0, sx, sy, 0);
        for (guint i = 0; i < 3; i++) {
                assert_pointer (events, 1 + i * 2, sx, sy, 16); /* button 5: down */
                assert_pointer (events, 2 + i * 2, sx, sy, 0);
        }
}

static void
test_drag (Fixture *f, gconstpointer data)
{
        g_autoptr (GArray) events =
                run_expecting (f,
                               "{\"action\": \"left_click_drag\", \"start_coordinate\": [0, 0], "
                               "\"coordinate\": [1355, 846]}",
                               13);
        const Event *last;

        g_assert_cmpuint (events->len, ==, 13);
        assert_pointer (events, 0, 0, 0, 0);
        assert_pointer (events, 1, 0, 0, 1);
        /* Through the way, button held, ending at the far corner. */
        for (guint i = 2; i < 12; i++) {
                const Event *e = &g_array_index (events, Event, i);

                g_assert_cmpint (e->buttons, ==, 1);
                g_assert_cmpint (e->x, >, g_array_index (events, Event, i - 1).x);
        }
        last = &g_array_index (events, Event, 12);
        g_assert_cmpint (last->buttons, ==, 0);
        /* The model's last pixel is the screen's last. */
        g_assert_cmpint (last->x, ==, SCREEN_W - 1);
        g_assert_cmpint (last->y, ==, SCREEN_H - 1);
}

/* The click repaints the screen only after 400 ms: the screenshot the action returns shows it,
 * because the tool waits for the screen to settle instead of taking it at once. */
static void
test_settles (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result = NULL;
        g_autoptr (GdkPixbuf) picture = NULL;

        vnc_test_server_repaint_on_click (400, 0x20c040);
        result = run (f, "{\"action\": \"left_click\", \"coordinate\": [50, 50]}", &error);
        g_assert_no_error (error);
        picture = decode (result);
        g_assert_cmphex (pixel (picture, 10, 10), ==, 0x20c040);
        g_assert_true (result->has_point);
        g_assert_cmpuint (result->point_x, ==, 50);
}

static void
test_zoom (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        CorralScreenScale scale;
        guint x0, y0, x1, y1;
        g_autofree char *json = NULL;
        g_autoptr (CorralComputerResult) result = NULL;
        g_autoptr (GdkPixbuf) picture = NULL;

        corral_computer_get_scale (f->computer, &scale);
        corral_computer_scale_to_model (&scale, 960, 600, &x0, &y0);
        corral_computer_scale_to_model (&scale, 1059, 699, &x1, &y1);
        json = g_strdup_printf ("{\"action\": \"zoom\", \"region\": [%u, %u, %u, %u]}", x0, y0, x1,
                                y1);
        result = run (f, json, &error);
        g_assert_no_error (error);
        picture = decode (result);
        /* The blue square, larger than the screenshot showed it, and blue all over. */
        g_assert_cmpint (gdk_pixbuf_get_width (picture), >, (int) (x1 - x0));
        g_assert_cmphex (pixel (picture, gdk_pixbuf_get_width (picture) / 2,
                                gdk_pixbuf_get_height (picture) / 2),
                         ==, 0x0000ff);
        g_assert_cmphex (pixel (picture, 2, 2), ==, 0x0000ff);
}

/* Input the model got wrong: an error that says what to send, and nothing sent. */
static void
test_refused (Fixture *f, gconstpointer data)
{
        static const char *const inputs[] = {
                "[]",
                "{}",
                "{\"action\": \"dance\"}",
                "{\"action\": \"left_click\", \"coordinate\": [5000, 10]}",
                "{\"action\": \"left_click\", \"coordinate\": [-1, 10]}",
                "{\"action\": \"left_click\", \"coordinate\": [1.5, 10]}",
                "{\"action\": \"left_click\", \"coordinate\": [10]}",
                "{\"action\": \"left_click\", \"coordinate\": [10, 10], \"text\": \"a\"}",
                "{\"action\": \"mouse_move\"}",
                "{\"action\": \"scroll\", \"scroll_direction\": \"sideways\"}",
                "{\"action\": \"scroll\", \"scroll_direction\": \"up\", \"scroll_amount\": 1000}",
                "{\"action\": \"type\"}",
                "{\"action\": \"type\", \"text\": \"\\u0007\"}",
                "{\"action\": \"key\", \"text\": \"ctrl+nosuchkey\"}",
                "{\"action\": \"hold_key\", \"text\": \"a\"}",
                "{\"action\": \"hold_key\", \"text\": \"a\", \"duration\": 3600}",
                "{\"action\": \"wait\", \"duration\": -1}",
                "{\"action\": \"zoom\", \"region\": [10, 10, 5, 5]}",
                "{\"action\": \"zoom\", \"region\": [10, 10]}",
                "{\"action\": \"left_click_drag\", \"coordinate\": [10, 10]}",
        };
        g_autoptr (GArray) events = NULL;

        for (guint i = 0; i < G_N_ELEMENTS (inputs); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralComputerResult) result = run (f, inputs[i], &error);

                g_test_message ("%s: %s", inputs[i], error ? error->message : "(accepted)");
                g_assert_null (result);
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        }
        g_usleep (100000);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, ==, 0);
}

/* Stopped while a key is held: the key is let go. */
static void
test_cancel_releases (Fixture *f, gconstpointer data)
{
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        cJSON *input = cJSON_Parse ("{\"action\": \"hold_key\", \"text\": \"shift\", "
                                    "\"duration\": 30}");
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) events = NULL;

        corral_computer_run_async (f->computer, input, cancellable, on_done, &res);
        cJSON_Delete (input);
        wait_events (1);
        g_cancellable_cancel (cancellable);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        g_assert_null (corral_computer_run_finish (f->computer, res, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_object_unref (res);
        g_usleep (100000);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, >=, 2);
        assert_key (events, 0, XKB_KEY_Shift_L, TRUE);
        assert_key (events, 1, XKB_KEY_Shift_L, FALSE);
}

/* Take control: while the person has the screen, a new action waits (nothing reaches the screen)
 * and goes on when they give it back, saying it waited; looking goes on meanwhile. */
static void
test_held_waits (Fixture *f, gconstpointer data)
{
        cJSON *input = cJSON_Parse ("{\"action\": \"left_click\", \"coordinate\": [5, 5]}");
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) result = NULL, look = NULL;
        g_autoptr (GArray) events = NULL;
        gint64 until = g_get_monotonic_time () + 1200000;

        corral_computer_hold (f->computer, "the person is signing in");
        g_assert_true (corral_computer_is_held (f->computer));
        corral_computer_run_async (f->computer, input, NULL, on_done, &res);
        cJSON_Delete (input);
        while (g_get_monotonic_time () < until) {
                g_main_context_iteration (NULL, FALSE);
                g_usleep (5000);
        }
        g_assert_null (res);
        g_assert_cmpuint (vnc_test_server_n_events (), ==, 0);
        /* A screenshot sends nothing: it is not held up (it queues behind the click, so it is
         * taken directly here). */
        look = corral_computer_screenshot (f->computer, &error);
        g_assert_no_error (error);
        g_assert_nonnull (look->image);

        corral_computer_release (f->computer);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        result = corral_computer_run_finish (f->computer, res, &error);
        g_object_unref (res);
        g_assert_no_error (error);
        g_assert_nonnull (strstr (result->text, "waited"));
        g_usleep (100000);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, ==, 3);
}

/* Taking control in the middle of an action stops it, and what it held is let go. */
static void
test_held_stops (Fixture *f, gconstpointer data)
{
        cJSON *input = cJSON_Parse ("{\"action\": \"hold_key\", \"text\": \"ctrl\", "
                                    "\"duration\": 30}");
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) events = NULL;

        corral_computer_run_async (f->computer, input, NULL, on_done, &res);
        cJSON_Delete (input);
        wait_events (1);
        corral_computer_hold (f->computer, NULL);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        g_assert_null (corral_computer_run_finish (f->computer, res, &error));
        g_object_unref (res);
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_BUSY);
        g_assert_nonnull (strstr (error->message, "took over"));
        g_usleep (100000);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, >=, 2);
        assert_key (events, 0, XKB_KEY_Control_L, TRUE);
        assert_key (events, 1, XKB_KEY_Control_L, FALSE);
        corral_computer_release (f->computer);
}

/* The screen gone in the middle of a wait: an error saying so, not a picture of the past. */
static void
test_screen_gone (Fixture *f, gconstpointer data)
{
        cJSON *input = cJSON_Parse ("{\"action\": \"wait\", \"duration\": 30}");
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;

        gint64 until = g_get_monotonic_time () + 200000;

        corral_computer_run_async (f->computer, input, NULL, on_done, &res);
        cJSON_Delete (input);
        /* Well into the wait. */
        while (g_get_monotonic_time () < until) {
                g_main_context_iteration (NULL, FALSE);
                g_usleep (5000);
        }
        corral_vnc_close (f->vnc);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        g_assert_null (corral_computer_run_finish (f->computer, res, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED);
        g_object_unref (res);
}

/* A client of a screen no one was watching gets a black picture from QEMU first, and the
 * real one at its next refresh: the first screenshot is the real picture, not the black. A
 * screen that stays black is a picture too, after a while. */
static void
test_black_first (void)
{
        for (guint i = 0; i < 2; i++) {
                g_autoptr (CorralVnc) vnc = NULL;
                g_autoptr (CorralComputer) computer = NULL;
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralComputerResult) shot = NULL;
                g_autoptr (GdkPixbuf) picture = NULL;
                const guint8 *px;

                vnc_test_server_black_for (i == 0 ? 800 : G_MAXUINT);
                vnc = vnc_test_server_connect (NULL);
                computer = corral_computer_new (vnc);
                shot = corral_computer_screenshot (computer, &error);
                g_assert_no_error (error);
                picture = decode (shot);
                px = gdk_pixbuf_read_pixels (picture);
                g_test_message ("first pixel %u %u %u", px[0], px[1], px[2]);
                if (i == 0)
                        g_assert_cmpuint (px[0], ==, 0x80);
                else
                        g_assert_cmpuint (px[0] | px[1] | px[2], ==, 0);
                corral_vnc_close (vnc);
                vnc_test_server_stop ();
        }
}

/* The VM's QEMU changed under the connection (a managed save and restore closes it): the next
 * action connects again to the same socket and is done there. */
static void
test_reconnect (void)
{
        g_autofree char *dir = g_dir_make_tmp ("test-computer-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (dir, "vnc.sock", NULL);
        g_autoptr (CorralVnc) vnc = vnc_test_server_connect (path);
        g_autoptr (CorralComputer) computer = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralComputerResult) first = NULL, second = NULL;
        g_autoptr (GArray) events = NULL;
        GAsyncResult *res = NULL;
        cJSON *input = cJSON_Parse ("{\"action\": \"left_click\", \"coordinate\": [7, 7]}");

        computer = corral_computer_new (vnc);

        corral_computer_run_async (computer, input, NULL, on_done, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        first = corral_computer_run_finish (computer, res, &error);
        g_clear_object (&res);
        g_assert_no_error (error);

        vnc_test_server_drop_clients ();
        while (corral_vnc_is_connected (vnc))
                g_main_context_iteration (NULL, TRUE);
        g_usleep (100000);
        g_clear_pointer (&events, g_array_unref);
        events = vnc_test_server_take_events ();

        corral_computer_run_async (computer, input, NULL, on_done, &res);
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        second = corral_computer_run_finish (computer, res, &error);
        g_clear_object (&res);
        g_assert_no_error (error);
        g_assert_true (corral_vnc_is_connected (vnc));
        g_assert_nonnull (second->image);
        g_usleep (100000);
        g_clear_pointer (&events, g_array_unref);
        events = vnc_test_server_take_events ();
        g_assert_cmpuint (events->len, ==, 3);
        g_assert_cmpint (g_array_index (events, Event, 1).buttons, ==, 1);

        cJSON_Delete (input);
        g_clear_object (&computer);
        corral_vnc_close (vnc);
        vnc_test_server_stop ();
        g_unlink (path);
        g_rmdir (dir);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/computer/screenshot", test_screenshot);
        ADD ("/computer/click", test_click);
        ADD ("/computer/cursor-position", test_cursor_position);
        ADD ("/computer/type", test_type);
        g_test_add ("/computer/type-scancodes", Fixture, "extended", fixture_setup, test_type,
                    fixture_teardown);
        ADD ("/computer/type-long", test_type_long);
        ADD ("/computer/key", test_key);
        ADD ("/computer/key-shifted", test_key_shifted);
        ADD ("/computer/hold-key", test_hold_key);
        ADD ("/computer/scroll", test_scroll);
        ADD ("/computer/drag", test_drag);
        ADD ("/computer/settles", test_settles);
        ADD ("/computer/zoom", test_zoom);
        ADD ("/computer/refused", test_refused);
        ADD ("/computer/cancel-releases", test_cancel_releases);
        ADD ("/computer/screen-gone", test_screen_gone);
        ADD ("/computer/held-waits", test_held_waits);
        ADD ("/computer/held-stops", test_held_stops);
#undef ADD
        g_test_add_func ("/computer/reconnect", test_reconnect);
        g_test_add_func ("/computer/black-first", test_black_first);
        return g_test_run ();
}
