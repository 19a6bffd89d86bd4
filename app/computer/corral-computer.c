/* corral-computer.c — the computer tool's actions on the VM's screen (see corral-computer.h).
 *
 * An action is first turned into steps (pointer and key events, pauses) from the checked
 * input, then the steps are played in order on the main context, then the screen is let
 * settle and shown. Nothing is sent before the whole input was understood, so a half-done
 * action never leaves a key or a button held.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer.h"

#include <gdk-pixbuf/gdk-pixbuf.h>
#include <glib/gi18n.h>
#include <math.h>
#include <png.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>

#include "corral-computer-compose.h"
#include "corral-computer-keys.h"
#include "corral-computer-private.h"
#include "corral-thread.h"

typedef enum { STEP_POINTER, STEP_KEY, STEP_SLEEP } StepKind;

typedef struct {
        StepKind kind;
        guint x, y, buttons; /* screen pixels; CorralVncButtons */
        guint32 keysym;
        guint scancode; /* the key on the VM's US keyboard, 0 for none */
        gboolean down;
        guint ms;
} Step;

typedef enum {
        SHOW_SCREEN, /* a settled screenshot */
        SHOW_ZOOM, /* a region of the screen, settled */
        SHOW_POSITION, /* the pointer's position, no picture */
} Show;

/* One action in flight. */
typedef struct {
        GArray *steps;
        guint next;
        Show show;
        guint zoom_x0, zoom_y0, zoom_x1, zoom_y1; /* screen pixels, x1/y1 past the region */
        char *said;
        gboolean has_point;
        guint point_x, point_y; /* the model's */
        guint source;
        gint64 settle_start;
        guint64 settle_updates;
        GCancellable *cancellable;
        gulong cancel_id;
        gint64 wait_start; /* when it began waiting for the person to give the screen back */
        gboolean reconnect_tried; /* the screen was gone before the action began */
        gint64 reconnected_at;
        guint64 reconnect_updates;
        guint waited_s; /* how long it waited */
} Run;

struct _CorralComputer {
        GObject parent_instance;
        CorralVnc *vnc;
        CorralComputerImageFormat format;
        guint pointer_x, pointer_y, buttons; /* what was last sent, screen pixels */
        GQueue waiting; /* GTask, the first one running */
        gulong connected_id;
        char *held; /* nullable: the person has the screen, and why */
};

G_DEFINE_FINAL_TYPE (CorralComputer, corral_computer, G_TYPE_OBJECT)

static void run_next (CorralComputer *self);
static gboolean play (gpointer data);

/* The running action looks at once (not when its pause ends) whether it can go on. */
static void
kick (GTask *task)
{
        Run *run = g_task_get_task_data (task);

        if (!run->source)
                return; /* not started, or between steps right now: it looks anyway */
        g_source_remove (run->source);
        run->source = g_idle_add (play, task);
}

static void
on_connected_changed (CorralComputer *self)
{
        GTask *task = g_queue_peek_head (&self->waiting);

        if (task && !corral_vnc_is_connected (self->vnc))
                kick (task);
}

static gboolean
kick_cancelled (gpointer data)
{
        GTask *task = data;
        CorralComputer *self = g_task_get_source_object (task);

        if (g_queue_peek_head (&self->waiting) == task)
                kick (task);
        return G_SOURCE_REMOVE;
}

/* May come on another thread: looked at on the main context. */
static void
on_cancelled (GCancellable *cancellable, gpointer data)
{
        GTask *task = data;

        corral_main_context_post (g_task_get_context (task), kick_cancelled, g_object_ref (task),
                                  g_object_unref);
}

void
corral_computer_result_free (CorralComputerResult *result)
{
        if (!result)
                return;
        g_free (result->text);
        g_clear_pointer (&result->image, g_bytes_unref);
        g_free (result);
}

static void
run_free (Run *run)
{
        if (run->cancel_id)
                g_cancellable_disconnect (run->cancellable, run->cancel_id);
        g_clear_object (&run->cancellable);
        g_array_unref (run->steps);
        g_free (run->said);
        g_clear_handle_id (&run->source, g_source_remove);
        g_free (run);
}

static void
corral_computer_dispose (GObject *object)
{
        CorralComputer *self = CORRAL_COMPUTER (object);
        GTask *task;

        while ((task = g_queue_pop_head (&self->waiting))) {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s",
                                         _ ("The computer tool was closed"));
                g_object_unref (task);
        }
        if (self->vnc)
                g_clear_signal_handler (&self->connected_id, self->vnc);
        g_clear_object (&self->vnc);
        g_clear_pointer (&self->held, g_free);
        G_OBJECT_CLASS (corral_computer_parent_class)->dispose (object);
}

enum { PROP_0, PROP_HELD, N_PROPS };
static GParamSpec *props[N_PROPS];

static void
corral_computer_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
        switch (id) {
        case PROP_HELD:
                g_value_set_boolean (value, CORRAL_COMPUTER (object)->held != NULL);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
        }
}

static void
corral_computer_class_init (CorralComputerClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_computer_dispose;
        object_class->get_property = corral_computer_get_property;
        props[PROP_HELD] = g_param_spec_boolean ("held", NULL, NULL, FALSE,
                                                 G_PARAM_READABLE | G_PARAM_STATIC_STRINGS |
                                                         G_PARAM_EXPLICIT_NOTIFY);
        g_object_class_install_properties (object_class, N_PROPS, props);
}

static void
corral_computer_init (CorralComputer *self)
{
        g_queue_init (&self->waiting);
}

CorralComputer *
corral_computer_new (CorralVnc *vnc)
{
        CorralComputer *self = g_object_new (CORRAL_TYPE_COMPUTER, NULL);

        self->vnc = g_object_ref (vnc);
        self->connected_id = g_signal_connect_object (vnc, "notify::connected",
                                                      G_CALLBACK (on_connected_changed), self,
                                                      G_CONNECT_SWAPPED);
        return self;
}

void
corral_computer_set_image_format (CorralComputer *self, CorralComputerImageFormat format)
{
        self->format = format;
}

void
corral_computer_get_scale (CorralComputer *self, CorralScreenScale *scale)
{
        guint w = corral_vnc_get_width (self->vnc), h = corral_vnc_get_height (self->vnc);

        memset (scale, 0, sizeof *scale);
        if (w && h)
                corral_computer_scale_init (scale, w, h);
}

/* Pictures --------------------------------------------------------------------------- */

static void
png_append (png_structp png, png_bytep data, png_size_t length)
{
        g_byte_array_append (png_get_io_ptr (png), data, length);
}

static void
png_flush_nothing (png_structp png)
{
}

/* PNG with libpng directly: gdk-pixbuf's saver tries every row filter at its chosen zlib
 * level, which costs more than the rest of a screenshot. A screen is mostly flat colour and
 * text: the "sub" filter and zlib's fastest level keep it small for a fraction of the time. */
GBytes *
corral_computer_encode_png (GdkPixbuf *pixbuf, GError **error)
{
        g_autoptr (GByteArray) out = g_byte_array_new ();
        png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
        png_infop info = png ? png_create_info_struct (png) : NULL;
        int width = gdk_pixbuf_get_width (pixbuf), height = gdk_pixbuf_get_height (pixbuf);
        int stride = gdk_pixbuf_get_rowstride (pixbuf);
        const guint8 *pixels = gdk_pixbuf_read_pixels (pixbuf);

        if (!png || !info || setjmp (png_jmpbuf (png))) {
                png_destroy_write_struct (&png, &info);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                     _ ("The screenshot could not be encoded as PNG"));
                return NULL;
        }
        png_set_write_fn (png, out, png_append, png_flush_nothing);
        png_set_IHDR (png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                      PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_set_filter (png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
        png_set_compression_level (png, 1);
        png_write_info (png, info);
        for (int y = 0; y < height; y++)
                png_write_row (png, pixels + (gsize) y * stride);
        png_write_end (png, NULL);
        png_destroy_write_struct (&png, &info);
        return g_byte_array_free_to_bytes (g_steal_pointer (&out));
}

/* The screen's region (x0, y0)-(x1, y1) scaled to width x height, encoded. */
static GBytes *
encode_region (CorralComputer *self,
               GBytes *rgba,
               guint stride_width,
               guint x0,
               guint y0,
               guint x1,
               guint y1,
               guint width,
               guint height,
               const char **mime_type,
               GError **error)
{
        g_autoptr (GdkPixbuf) region =
                gdk_pixbuf_new (GDK_COLORSPACE_RGB, FALSE, 8, x1 - x0, y1 - y0);
        g_autoptr (GdkPixbuf) scaled = NULL;
        const guint8 *from = g_bytes_get_data (rgba, NULL);
        guint8 *to = gdk_pixbuf_get_pixels (region);
        int to_stride = gdk_pixbuf_get_rowstride (region);
        g_autofree char *buffer = NULL;
        gsize size = 0;
        gboolean ok;

        for (guint row = y0; row < y1; row++) {
                const guint8 *line = from + ((gsize) row * stride_width + x0) * 4;
                guint8 *out = to + (gsize) (row - y0) * to_stride;

                for (guint i = 0; i < x1 - x0; i++) {
                        out[i * 3] = line[i * 4];
                        out[i * 3 + 1] = line[i * 4 + 1];
                        out[i * 3 + 2] = line[i * 4 + 2];
                }
        }
        if (width == x1 - x0 && height == y1 - y0)
                scaled = g_object_ref (region);
        else
                scaled = gdk_pixbuf_scale_simple (region, width, height, GDK_INTERP_BILINEAR);
        if (self->format == CORRAL_COMPUTER_IMAGE_JPEG) {
                ok = gdk_pixbuf_save_to_buffer (scaled, &buffer, &size, "jpeg", error, "quality",
                                                "85", NULL);
                *mime_type = "image/jpeg";
        } else {
                *mime_type = "image/png";
                return corral_computer_encode_png (scaled, error);
        }
        if (!ok)
                return NULL;
        return g_bytes_new_take (g_steal_pointer (&buffer), size);
}

static CorralComputerResult *
take_picture (CorralComputer *self, Run *run, GError **error)
{
        g_autoptr (CorralComputerResult) result = g_new0 (CorralComputerResult, 1);
        g_autoptr (GBytes) rgba = NULL;
        CorralScreenScale scale;
        guint w = 0, h = 0, x0 = 0, y0 = 0, x1, y1, out_w, out_h;

        rgba = corral_vnc_snapshot (self->vnc, &w, &h);
        if (!rgba || !w || !h) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED, "%s",
                             _ ("The VM’s screen is not connected"));
                return NULL;
        }
        corral_computer_scale_init (&scale, w, h);
        x1 = w;
        y1 = h;
        out_w = scale.width;
        out_h = scale.height;
        if (run && run->show == SHOW_ZOOM) {
                CorralScreenScale fit;

                x0 = MIN (run->zoom_x0, w - 1);
                y0 = MIN (run->zoom_y0, h - 1);
                x1 = CLAMP (run->zoom_x1, x0 + 1, w);
                y1 = CLAMP (run->zoom_y1, y0 + 1, h);
                /* The region as large as the model takes a picture, never more than 4 times
                 * its size on the screen. */
                corral_computer_scale_init (&fit, (x1 - x0) * 4, (y1 - y0) * 4);
                out_w = MAX (fit.width, 1);
                out_h = MAX (fit.height, 1);
        }
        result->image = encode_region (self, rgba, w, x0, y0, x1, y1, out_w, out_h,
                                       &result->mime_type, error);
        if (!result->image)
                return NULL;
        result->image_width = out_w;
        result->image_height = out_h;
        return g_steal_pointer (&result);
}

CorralComputerResult *
corral_computer_screenshot (CorralComputer *self, GError **error)
{
        CorralComputerResult *result = take_picture (self, NULL, error);

        if (result)
                result->text = g_strdup_printf (_ ("The screen, %u × %u."), result->image_width,
                                                result->image_height);
        return result;
}

/* Reading the input ---------------------------------------------------------------------- */

/* input[name] as a point [x, y] of the model's screen, mapped to the VM's. */
static gboolean
read_point (const cJSON *input,
            const char *name,
            const CorralScreenScale *scale,
            guint *x,
            guint *y,
            guint *model_x,
            guint *model_y,
            GError **error)
{
        const cJSON *point = cJSON_GetObjectItemCaseSensitive (input, name);
        const cJSON *px, *py;
        g_autoptr (GError) local = NULL;

        if (!cJSON_IsArray (point) || cJSON_GetArraySize (point) != 2 ||
            !cJSON_IsNumber (px = cJSON_GetArrayItem (point, 0)) ||
            !cJSON_IsNumber (py = cJSON_GetArrayItem (point, 1)) ||
            px->valuedouble != floor (px->valuedouble) ||
            py->valuedouble != floor (py->valuedouble) || fabs (px->valuedouble) > 1e9 ||
            fabs (py->valuedouble) > 1e9)
                return corral_computer_refuse (
                        error,
                        _ ("“%s” must be a point [x, y] of whole pixels on the %u × %u "
                           "screen"),
                        name, scale->width, scale->height);
        if (!corral_computer_scale_to_screen (scale, (gint64) px->valuedouble,
                                              (gint64) py->valuedouble, x, y, &local))
                return corral_computer_refuse (error, "“%s”: %s", name, local->message);
        *model_x = (guint) px->valuedouble;
        *model_y = (guint) py->valuedouble;
        return TRUE;
}

static const char *
read_string (const cJSON *input, const char *name)
{
        return cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (input, name));
}

/* input[name] as a number from min to max; missing: fallback. */
static gboolean
read_number (const cJSON *input,
             const char *name,
             double min,
             double max,
             double fallback,
             double *value,
             GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (input, name);

        if (!item) {
                *value = fallback;
                return TRUE;
        }
        if (!cJSON_IsNumber (item) || isnan (item->valuedouble) || item->valuedouble < min ||
            item->valuedouble > max)
                return corral_computer_refuse (error, _ ("“%s” must be a number from %g to %g"),
                                               name, min, max);
        *value = item->valuedouble;
        return TRUE;
}

static void
add_pointer (GArray *steps, guint x, guint y, guint buttons)
{
        Step s = { .kind = STEP_POINTER, .x = x, .y = y, .buttons = buttons };

        g_array_append_val (steps, s);
}

static void
add_key (GArray *steps, guint32 keysym, gboolean down)
{
        Step s = { .kind = STEP_KEY, .keysym = keysym, .down = down };
        gboolean shift;

        corral_computer_key_position (keysym, &s.scancode, &shift);
        g_array_append_val (steps, s);
}

static gboolean
needs_shift (guint32 keysym)
{
        guint scancode;
        gboolean shift;

        return corral_computer_key_position (keysym, &scancode, &shift) && shift;
}

static void
add_sleep (GArray *steps, guint ms)
{
        Step s = { .kind = STEP_SLEEP, .ms = ms };

        g_array_append_val (steps, s);
}

/* A combination's keys, pressed in order or released in reverse. Like xdotool, Shift comes
 * first when a key needs it ("ctrl+A", "ctrl+@") and the combination has none. */
static void
add_combo (GArray *steps, const CorralKeyCombo *combo, gboolean down)
{
        gboolean shift = FALSE, has_shift = FALSE;

        for (guint i = 0; i < combo->n; i++) {
                shift |= needs_shift (combo->keysyms[i]);
                has_shift |= combo->keysyms[i] == XKB_KEY_Shift_L ||
                             combo->keysyms[i] == XKB_KEY_Shift_R;
        }
        shift &= !has_shift;
        if (shift && down)
                add_key (steps, XKB_KEY_Shift_L, TRUE);
        for (guint i = 0; i < combo->n; i++)
                add_key (steps, combo->keysyms[down ? i : combo->n - 1 - i], down);
        if (shift && !down)
                add_key (steps, XKB_KEY_Shift_L, FALSE);
}

static void
add_tap (GArray *steps, guint32 keysym)
{
        add_key (steps, keysym, TRUE);
        add_key (steps, keysym, FALSE);
}

/* A key of the US keyboard, pressed and let go as a combination of its own (with Shift when it
 * needs it); FALSE when there is none. */
static gboolean
add_typed_key (GArray *steps, guint32 keysym)
{
        const CorralKeyCombo one = { .keysyms = { keysym }, .n = 1 };
        guint scancode;
        gboolean shift;

        if (!corral_computer_key_position (keysym, &scancode, &shift))
                return FALSE;
        add_combo (steps, &one, TRUE);
        add_combo (steps, &one, FALSE);
        return TRUE;
}

/* One character of typed text: its key, with Shift when the key needs it. A character the US
 * keyboard has no key for ("é", "€") goes as X's Compose sequence for it (the Compose key, the
 * image's right Alt, then plain keys), which every X application takes; one without a sequence
 * as GTK's Unicode input (ctrl+shift+u, its code in hex, space), which GTK applications take
 * unless they bind ctrl+shift+u themselves. */
static void
add_character (GArray *steps, guint32 keysym)
{
        gunichar c = xkb_keysym_to_utf32 (keysym);
        guint32 sequence[CORRAL_COMPUTER_COMPOSE_MAX];
        guint n = 0;

        if (add_typed_key (steps, keysym))
                return;
        if (corral_computer_compose_sequence (c, sequence, &n)) {
                add_tap (steps, XKB_KEY_Multi_key);
                for (guint i = 0; i < n; i++)
                        add_typed_key (steps, sequence[i]);
                return;
        }
        {
                const CorralKeyCombo unicode = {
                        .keysyms = { XKB_KEY_Control_L, XKB_KEY_Shift_L, XKB_KEY_u }, .n = 3
                };
                char hex[16];

                add_combo (steps, &unicode, TRUE);
                add_combo (steps, &unicode, FALSE);
                g_snprintf (hex, sizeof hex, "%x", (guint) c);
                for (const char *h = hex; *h; h++)
                        add_tap (steps, (guint32) *h);
                add_tap (steps, XKB_KEY_space);
        }
}

static guint
button_of (const char *action)
{
        if (g_str_has_prefix (action, "right"))
                return CORRAL_VNC_BUTTON_RIGHT;
        if (g_str_has_prefix (action, "middle"))
                return CORRAL_VNC_BUTTON_MIDDLE;
        return CORRAL_VNC_BUTTON_LEFT;
}

static const char *const actions[] = {
        "screenshot",
        "mouse_move",
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
        "left_click_drag",
        "left_mouse_down",
        "left_mouse_up",
        "scroll",
        "type",
        "key",
        "hold_key",
        "wait",
        "cursor_position",
        "zoom",
};

/* The action's steps; FALSE with G_IO_ERROR_INVALID_ARGUMENT when the input is wrong. */
static gboolean
plan (CorralComputer *self, const cJSON *input, Run *run, GError **error)
{
        CorralScreenScale scale;
        const char *action = read_string (input, "action");
        const char *text = read_string (input, "text");
        guint x = self->pointer_x, y = self->pointer_y, mx = 0, my = 0;
        gboolean known = FALSE;

        corral_computer_get_scale (self, &scale);
        if (!scale.width) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED, "%s",
                             _ ("The VM’s screen is not connected"));
                return FALSE;
        }
        if (!cJSON_IsObject (input) || !action)
                return corral_computer_refuse (
                        error, _ ("The input needs an “action”: one of screenshot, "
                                  "left_click, type, key, scroll and the others listed "
                                  "in the tool’s description"));
        for (guint i = 0; i < G_N_ELEMENTS (actions); i++)
                known |= g_str_equal (action, actions[i]);
        if (!known)
                return corral_computer_refuse (error, _ ("There is no action “%.64s”"), action);
        run->show = SHOW_SCREEN;

        if (g_str_equal (action, "screenshot"))
                return TRUE;
        if (g_str_equal (action, "cursor_position")) {
                run->show = SHOW_POSITION;
                return TRUE;
        }
        if (g_str_equal (action, "mouse_move")) {
                if (!read_point (input, "coordinate", &scale, &x, &y, &mx, &my, error))
                        return FALSE;
                add_pointer (run->steps, x, y, self->buttons);
                run->said = g_strdup_printf (_ ("Moved the pointer to (%u, %u)."), mx, my);
                goto pointed;
        }
        if (g_str_has_suffix (action, "_click")) {
                guint button = button_of (action);
                guint times = g_str_equal (action, "double_click")   ? 2
                              : g_str_equal (action, "triple_click") ? 3
                                                                     : 1;
                CorralKeyCombo mods = { 0 };

                if (cJSON_GetObjectItemCaseSensitive (input, "coordinate") &&
                    !read_point (input, "coordinate", &scale, &x, &y, &mx, &my, error))
                        return FALSE;
                if (!cJSON_GetObjectItemCaseSensitive (input, "coordinate"))
                        corral_computer_scale_to_model (&scale, x, y, &mx, &my);
                if (!corral_computer_parse_modifiers (text, &mods, error))
                        return FALSE;
                add_combo (run->steps, &mods, TRUE);
                add_pointer (run->steps, x, y, self->buttons);
                for (guint i = 0; i < times; i++) {
                        if (i)
                                add_sleep (run->steps, 40);
                        add_pointer (run->steps, x, y, self->buttons | button);
                        add_pointer (run->steps, x, y, self->buttons & ~button);
                }
                add_combo (run->steps, &mods, FALSE);
                run->said = g_strdup_printf (_ ("Clicked at (%u, %u)."), mx, my);
                goto pointed;
        }
        if (g_str_equal (action, "left_click_drag")) {
                guint sx, sy, smx, smy;

                if (!read_point (input, "start_coordinate", &scale, &sx, &sy, &smx, &smy, error) ||
                    !read_point (input, "coordinate", &scale, &x, &y, &mx, &my, error))
                        return FALSE;
                add_pointer (run->steps, sx, sy, 0);
                add_sleep (run->steps, 60);
                add_pointer (run->steps, sx, sy, CORRAL_VNC_BUTTON_LEFT);
                /* Held a moment, then in steps, as a hand moves: toolkits start a drag after a
                 * few pixels, and a window manager that grabs the pointer on the press (xfwm4
                 * moving a window by its title) missed steps that came sooner or faster. */
                add_sleep (run->steps, 200);
                for (guint i = 1; i <= 10; i++) {
                        add_pointer (run->steps, sx + ((double) x - sx) * i / 10,
                                     sy + ((double) y - sy) * i / 10, CORRAL_VNC_BUTTON_LEFT);
                        add_sleep (run->steps, 40);
                }
                add_sleep (run->steps, 60);
                add_pointer (run->steps, x, y, 0);
                run->said = g_strdup_printf (_ ("Dragged from (%u, %u) to (%u, %u)."), smx, smy, mx,
                                             my);
                self->buttons = 0;
                goto pointed;
        }
        if (g_str_equal (action, "left_mouse_down") || g_str_equal (action, "left_mouse_up")) {
                gboolean down = g_str_equal (action, "left_mouse_down");
                guint buttons = down ? self->buttons | CORRAL_VNC_BUTTON_LEFT
                                     : self->buttons & ~CORRAL_VNC_BUTTON_LEFT;

                if (cJSON_GetObjectItemCaseSensitive (input, "coordinate")) {
                        if (!read_point (input, "coordinate", &scale, &x, &y, &mx, &my, error))
                                return FALSE;
                } else {
                        corral_computer_scale_to_model (&scale, x, y, &mx, &my);
                }
                add_pointer (run->steps, x, y, buttons);
                self->buttons = buttons;
                run->said = g_strdup_printf (down ? _ ("Pressed the left button at (%u, %u).")
                                                  : _ ("Released the left button at (%u, %u)."),
                                             mx, my);
                goto pointed;
        }
        if (g_str_equal (action, "scroll")) {
                const char *direction = read_string (input, "scroll_direction");
                double amount;
                guint wheel;
                CorralKeyCombo mods = { 0 };

                if (!direction)
                        direction = "";
                wheel = g_str_equal (direction, "up")      ? CORRAL_VNC_BUTTON_WHEEL_UP
                        : g_str_equal (direction, "down")  ? CORRAL_VNC_BUTTON_WHEEL_DOWN
                        : g_str_equal (direction, "left")  ? CORRAL_VNC_BUTTON_WHEEL_LEFT
                        : g_str_equal (direction, "right") ? CORRAL_VNC_BUTTON_WHEEL_RIGHT
                                                           : 0;
                if (!wheel)
                        return corral_computer_refuse (
                                error, _ ("“scroll_direction” must be up, down, left or "
                                          "right"));
                if (!read_number (input, "scroll_amount", 1, CORRAL_COMPUTER_MAX_SCROLL, 3, &amount,
                                  error))
                        return FALSE;
                if (cJSON_GetObjectItemCaseSensitive (input, "coordinate")) {
                        if (!read_point (input, "coordinate", &scale, &x, &y, &mx, &my, error))
                                return FALSE;
                } else {
                        corral_computer_scale_to_model (&scale, x, y, &mx, &my);
                }
                if (!corral_computer_parse_modifiers (text, &mods, error))
                        return FALSE;
                add_combo (run->steps, &mods, TRUE);
                add_pointer (run->steps, x, y, self->buttons);
                /* The pointer arrives first, and the steps come apart: X applications (GTK's
                 * XInput 2 scrolling) took a burst of wheel steps sent with the move that
                 * brought the pointer into their window as no scroll at all. */
                add_sleep (run->steps, 60);
                for (guint i = 0; i < (guint) amount; i++) {
                        if (i)
                                add_sleep (run->steps, 30);
                        add_pointer (run->steps, x, y, self->buttons | wheel);
                        add_pointer (run->steps, x, y, self->buttons);
                }
                add_combo (run->steps, &mods, FALSE);
                run->said = g_strdup_printf (_ ("Scrolled %s by %u at (%u, %u)."), direction,
                                             (guint) amount, mx, my);
                goto pointed;
        }
        if (g_str_equal (action, "type")) {
                g_autoptr (GArray) keysyms = NULL;

                if (!text)
                        return corral_computer_refuse (error,
                                                       _ ("“type” needs the “text” to type"));
                keysyms = corral_computer_text_keysyms (text, CORRAL_COMPUTER_MAX_TYPE, error);
                if (!keysyms)
                        return FALSE;
                for (guint i = 0; i < keysyms->len; i++) {
                        if (i && i % CORRAL_COMPUTER_TYPE_GROUP == 0)
                                add_sleep (run->steps, 50);
                        add_character (run->steps, g_array_index (keysyms, guint32, i));
                }
                run->said = g_strdup_printf (_ ("Typed %u characters."), keysyms->len);
                return TRUE;
        }
        if (g_str_equal (action, "key") || g_str_equal (action, "hold_key")) {
                g_autoptr (GArray) combos = NULL;
                double duration = 0;

                if (!text)
                        return corral_computer_refuse (error,
                                                       _ ("“%s” needs the keys in “text”, such as "
                                                          "“ctrl+s” or “Return”"),
                                                       action);
                combos = corral_computer_parse_keys (text, error);
                if (!combos)
                        return FALSE;
                if (g_str_equal (action, "hold_key")) {
                        if (!cJSON_GetObjectItemCaseSensitive (input, "duration"))
                                return corral_computer_refuse (
                                        error, _ ("“hold_key” needs a “duration” in "
                                                  "seconds"));
                        if (!read_number (input, "duration", 0, CORRAL_COMPUTER_MAX_DURATION_S, 0,
                                          &duration, error))
                                return FALSE;
                }
                for (guint i = 0; i < combos->len; i++) {
                        const CorralKeyCombo *combo = &g_array_index (combos, CorralKeyCombo, i);

                        add_combo (run->steps, combo, TRUE);
                        if (duration > 0)
                                add_sleep (run->steps, (guint) (duration * 1000));
                        add_combo (run->steps, combo, FALSE);
                }
                run->said = g_strdup_printf (_ ("Pressed %s."), text);
                return TRUE;
        }
        if (g_str_equal (action, "wait")) {
                double duration;

                if (!read_number (input, "duration", 0, CORRAL_COMPUTER_MAX_DURATION_S, 1,
                                  &duration, error))
                        return FALSE;
                add_sleep (run->steps, (guint) (duration * 1000));
                run->said = g_strdup_printf (_ ("Waited %g s."), duration);
                return TRUE;
        }
        /* zoom */
        {
                const cJSON *region = cJSON_GetObjectItemCaseSensitive (input, "region");
                double v[4];
                guint x0, y0, x1, y1;
                g_autoptr (GError) local = NULL;

                if (!cJSON_IsArray (region) || cJSON_GetArraySize (region) != 4)
                        return corral_computer_refuse (
                                error,
                                _ ("“region” must be [x0, y0, x1, y1] on the %u × %u "
                                   "screen"),
                                scale.width, scale.height);
                for (guint i = 0; i < 4; i++) {
                        const cJSON *item = cJSON_GetArrayItem (region, i);

                        if (!cJSON_IsNumber (item) || isnan (item->valuedouble) ||
                            fabs (item->valuedouble) > 1e9)
                                return corral_computer_refuse (error,
                                                               _ ("“region” must be four numbers"));
                        v[i] = item->valuedouble;
                }
                if (v[2] <= v[0] || v[3] <= v[1])
                        return corral_computer_refuse (
                                error, _ ("“region” must have x1 > x0 and y1 > y0"));
                if (!corral_computer_scale_to_screen (&scale, (gint64) v[0], (gint64) v[1], &x0,
                                                      &y0, &local) ||
                    !corral_computer_scale_to_screen (&scale, (gint64) MIN (v[2], scale.width - 1),
                                                      (gint64) MIN (v[3], scale.height - 1), &x1,
                                                      &y1, &local))
                        return corral_computer_refuse (error, "“region”: %s", local->message);
                run->show = SHOW_ZOOM;
                run->zoom_x0 = x0;
                run->zoom_y0 = y0;
                run->zoom_x1 = x1 + 1;
                run->zoom_y1 = y1 + 1;
                run->said = g_strdup_printf (_ ("The region (%g, %g)–(%g, %g), enlarged."), v[0],
                                             v[1], v[2], v[3]);
                return TRUE;
        }
pointed:
        self->pointer_x = x;
        self->pointer_y = y;
        run->has_point = TRUE;
        run->point_x = mx;
        run->point_y = my;
        return TRUE;
}

/* Playing the steps ----------------------------------------------------------------------- */

static gboolean settle_tick (gpointer data);
static void stop_run (GTask *task, int code, const char *message);

static void
on_reconnected (GObject *source, GAsyncResult *res, gpointer data)
{
        g_autoptr (GTask) task = data;
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;

        if (g_queue_peek_head (&self->waiting) != task)
                return; /* already ended (disposed) */
        if (!corral_vnc_connect_finish (CORRAL_VNC (source), res, &error)) {
                g_autofree char *message = g_strdup_printf (
                        _ ("The connection to the VM’s screen ended and could not be made again "
                           "(%s); nothing was done."),
                        error->message);

                stop_run (task,
                          g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                                  ? G_IO_ERROR_CANCELLED
                                  : G_IO_ERROR_NOT_CONNECTED,
                          message);
                return;
        }
        run->reconnected_at = g_get_monotonic_time ();
        run->reconnect_updates = corral_vnc_get_update_count (self->vnc);
        run->source = g_idle_add (play, task);
}

static void
finish (GTask *task)
{
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);
        g_autoptr (GError) error = NULL;
        CorralComputerResult *result = NULL;

        if (run->show == SHOW_POSITION) {
                CorralScreenScale scale;
                guint mx, my;

                corral_computer_get_scale (self, &scale);
                corral_computer_scale_to_model (&scale, self->pointer_x, self->pointer_y, &mx, &my);
                result = g_new0 (CorralComputerResult, 1);
                result->text = g_strdup_printf ("X=%u,Y=%u", mx, my);
        } else {
                result = take_picture (self, run, &error);
                if (result) {
                        result->text = run->waited_s
                                               ? g_strdup_printf (_ ("%s (It waited %u s while the "
                                                                     "person used the screen.)"),
                                                                  run->said ? run->said : "",
                                                                  run->waited_s)
                                               : g_strdup (run->said ? run->said : "");
                        result->has_point = run->has_point;
                        result->point_x = run->point_x;
                        result->point_y = run->point_y;
                }
        }
        g_queue_remove (&self->waiting, task);
        if (result)
                g_task_return_pointer (task, result, (GDestroyNotify) corral_computer_result_free);
        else
                g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        run_next (self);
}

/* An action ended early: whatever it pressed is let go, so no key or button stays held. */
static void
release_held (CorralComputer *self, Run *run)
{
        for (guint i = run->next; i < run->steps->len; i++) {
                const Step *s = &g_array_index (run->steps, Step, i);

                if (s->kind == STEP_KEY && !s->down)
                        corral_vnc_key (self->vnc, s->keysym, s->scancode, FALSE);
        }
        self->buttons = 0;
        corral_vnc_pointer (self->vnc, self->pointer_x, self->pointer_y, 0);
        run->next = run->steps->len;
}

/* Ends the running action with an error for the model, letting go of what it pressed. */
static void
stop_run (GTask *task, int code, const char *message)
{
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);

        g_queue_remove (&self->waiting, task);
        if (run->next > 0)
                release_held (self, run);
        g_task_return_new_error (task, G_IO_ERROR, code, "%s", message);
        g_object_unref (task);
        run_next (self);
}

/* FALSE (and the task returned) when the action cannot go on. */
static gboolean
check_alive (GTask *task)
{
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);
        GCancellable *cancellable = g_task_get_cancellable (task);

        if (corral_vnc_is_connected (self->vnc) && !g_cancellable_is_cancelled (cancellable))
                return TRUE;
        /* Gone before anything was sent, with a socket to go back to: play() connects again. */
        if (!g_cancellable_is_cancelled (cancellable) && run->next == 0 && !run->settle_start &&
            !run->reconnect_tried && corral_vnc_get_path (self->vnc))
                return TRUE;
        g_queue_remove (&self->waiting, task);
        if (corral_vnc_is_connected (self->vnc)) {
                release_held (self, run);
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s",
                                         _ ("The action was stopped"));
        } else {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED, "%s",
                                         _ ("The connection to the VM’s screen ended"));
        }
        g_object_unref (task);
        run_next (self);
        return FALSE;
}

static gboolean
play (gpointer data)
{
        GTask *task = data;
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);

        run->source = 0;
        if (!check_alive (task))
                return G_SOURCE_REMOVE;
        /* The VM's QEMU changed under the connection (a managed save and restore): connected
         * again once, before anything is sent, and the screen's first picture waited for. */
        if (!corral_vnc_is_connected (self->vnc)) {
                run->reconnect_tried = TRUE;
                corral_vnc_connect_async (self->vnc, corral_vnc_get_path (self->vnc),
                                          g_task_get_cancellable (task), on_reconnected,
                                          g_object_ref (task));
                return G_SOURCE_REMOVE;
        }
        if (run->reconnected_at &&
            corral_vnc_get_update_count (self->vnc) == run->reconnect_updates &&
            g_get_monotonic_time () - run->reconnected_at < 5 * G_USEC_PER_SEC) {
                run->source = g_timeout_add (20, play, task);
                return G_SOURCE_REMOVE;
        }
        /* The person has the screen: nothing of the assistant's reaches it. An action that has
         * not begun waits (looking alone, with no input, goes on); one under way stops, letting
         * go of what it pressed. */
        if (self->held && run->steps->len > 0) {
                gint64 now = g_get_monotonic_time ();

                if (run->next > 0) {
                        stop_run (task, G_IO_ERROR_BUSY,
                                  _ ("The person took over the screen in the middle of this "
                                     "action, which was stopped. Take a screenshot once they "
                                     "give it back, then go on."));
                        return G_SOURCE_REMOVE;
                }
                if (!run->wait_start)
                        run->wait_start = now;
                if (now - run->wait_start >=
                    (gint64) CORRAL_COMPUTER_HOLD_WAIT_S * G_USEC_PER_SEC) {
                        g_autofree char *message = g_strdup_printf (
                                _ ("The person is using the screen (%s) and has not given it "
                                   "back after %u s; nothing was done. Ask them, or try later."),
                                self->held, CORRAL_COMPUTER_HOLD_WAIT_S);

                        stop_run (task, G_IO_ERROR_BUSY, message);
                        return G_SOURCE_REMOVE;
                }
                run->source = g_timeout_add (100, play, task);
                return G_SOURCE_REMOVE;
        }
        if (run->wait_start && !run->waited_s)
                run->waited_s =
                        MAX (1, (g_get_monotonic_time () - run->wait_start) / G_USEC_PER_SEC);
        while (run->next < run->steps->len) {
                const Step *s = &g_array_index (run->steps, Step, run->next++);

                if (s->kind == STEP_SLEEP) {
                        run->source = g_timeout_add (s->ms, play, task);
                        return G_SOURCE_REMOVE;
                }
                if (s->kind == STEP_POINTER)
                        corral_vnc_pointer (self->vnc, s->x, s->y, s->buttons);
                else
                        corral_vnc_key (self->vnc, s->keysym, s->scancode, s->down);
        }
        if (run->show == SHOW_POSITION) {
                finish (task);
                return G_SOURCE_REMOVE;
        }
        run->settle_start = g_get_monotonic_time ();
        run->settle_updates = corral_vnc_get_update_count (self->vnc);
        run->source = g_timeout_add (20, settle_tick, task);
        return G_SOURCE_REMOVE;
}

/* Settled: the screen changed and then had no update for the quiet window; or nothing changed
 * for as long as a first update may take; or the cap. */
static gboolean
settle_tick (gpointer data)
{
        GTask *task = data;
        CorralComputer *self = g_task_get_source_object (task);
        Run *run = g_task_get_task_data (task);
        gint64 now = g_get_monotonic_time ();
        gint64 waited = (now - run->settle_start) / 1000;
        gboolean changed = corral_vnc_get_update_count (self->vnc) != run->settle_updates;
        gint64 quiet = (now - corral_vnc_get_last_update_time (self->vnc)) / 1000;
        guint id = run->source;

        /* Both below may free run. */
        run->source = 0;
        if (!check_alive (task))
                return G_SOURCE_REMOVE;
        if (waited >= CORRAL_COMPUTER_SETTLE_CAP_MS ||
            (changed && quiet >= CORRAL_COMPUTER_QUIET_MS) ||
            (!changed && waited >= CORRAL_COMPUTER_FIRST_UPDATE_MS) || run->steps->len == 0) {
                finish (task);
                return G_SOURCE_REMOVE;
        }
        run->source = id;
        return G_SOURCE_CONTINUE;
}

static void
run_next (CorralComputer *self)
{
        GTask *task = g_queue_peek_head (&self->waiting);
        Run *run;

        if (!task)
                return;
        run = g_task_get_task_data (task);
        if (!run->source)
                run->source = g_idle_add (play, task);
}

void
corral_computer_run_async (CorralComputer *self,
                           const cJSON *input,
                           GCancellable *cancellable,
                           GAsyncReadyCallback callback,
                           gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        g_autoptr (GError) error = NULL;
        Run *run = g_new0 (Run, 1);

        g_task_set_source_tag (task, corral_computer_run_async);
        run->steps = g_array_new (FALSE, TRUE, sizeof (Step));
        g_task_set_task_data (task, run, (GDestroyNotify) run_free);
        if (cancellable) {
                run->cancellable = g_object_ref (cancellable);
                run->cancel_id =
                        g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled), task, NULL);
        }
        /* Planned now, against the pointer as the actions queued before will leave it. */
        if (!plan (self, input, run, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        g_queue_push_tail (&self->waiting, g_steal_pointer (&task));
        if (self->waiting.length == 1)
                run_next (self);
}

CorralComputerResult *
corral_computer_run_finish (CorralComputer *self, GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}

/* The tool as a function tool --------------------------------------------------------- */

const char corral_computer_tool_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"action\":{\"type\":\"string\",\"enum\":[\"screenshot\",\"mouse_move\",\"left_click\","
        "\"right_click\",\"middle_click\",\"double_click\",\"triple_click\",\"left_click_drag\","
        "\"left_mouse_down\",\"left_mouse_up\",\"scroll\",\"type\",\"key\",\"hold_key\",\"wait\","
        "\"cursor_position\",\"zoom\"]},"
        "\"coordinate\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,"
        "\"maxItems\":2,\"description\":\"[x, y] on the screenshot\"},"
        "\"start_coordinate\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
        "\"minItems\":2,\"maxItems\":2,\"description\":\"left_click_drag: where it starts\"},"
        "\"text\":{\"type\":\"string\",\"description\":\"type: the text; key and hold_key: keys "
        "as xdotool names them (ctrl+s, Return); clicks and scroll: modifier keys held\"},"
        "\"scroll_direction\":{\"type\":\"string\",\"enum\":[\"up\",\"down\",\"left\","
        "\"right\"]},"
        "\"scroll_amount\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50},"
        "\"duration\":{\"type\":\"number\",\"description\":\"wait and hold_key: seconds (at most "
        "60)\"},"
        "\"region\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":4,"
        "\"maxItems\":4,\"description\":\"zoom: [x0, y0, x1, y1] on the screenshot\"}},"
        "\"required\":[\"action\"]}";

char *
corral_computer_tool_describe (guint width, guint height)
{
        return g_strdup_printf (
                "Use the VM's desktop, a screen of %u x %u pixels: take a screenshot, move and "
                "click the mouse, drag, scroll, type text and press keys. Coordinates are the "
                "screenshot's. Each action returns a screenshot taken once the screen has "
                "settled. Take a screenshot first to see what is there.",
                width, height);
}

/* The person and the screen -------------------------------------------------------------- */

void
corral_computer_hold (CorralComputer *self, const char *reason)
{
        GTask *task;
        gboolean was_held;

        g_return_if_fail (CORRAL_IS_COMPUTER (self));
        was_held = self->held != NULL;
        g_free (self->held);
        self->held = g_strdup (reason && *reason ? reason : _ ("the person is using it"));
        /* An action under way stops now, not at its next pause. */
        if ((task = g_queue_peek_head (&self->waiting)))
                kick (task);
        if (!was_held)
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_HELD]);
}

void
corral_computer_release (CorralComputer *self)
{
        g_return_if_fail (CORRAL_IS_COMPUTER (self));
        if (!self->held)
                return;
        g_clear_pointer (&self->held, g_free);
        g_object_notify_by_pspec (G_OBJECT (self), props[PROP_HELD]);
}

gboolean
corral_computer_is_held (CorralComputer *self)
{
        g_return_val_if_fail (CORRAL_IS_COMPUTER (self), FALSE);
        return self->held != NULL;
}
