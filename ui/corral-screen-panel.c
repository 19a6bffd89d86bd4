/* corral-screen-panel.c — see corral-screen-panel.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-screen-panel.h"

#include <glib/gi18n.h>

#include "corral-computer-log.h"
#include "corral-ui-util.h"
#include "corral-vnc.h"

/* A screen that went away (the VM paused or saved) is looked for again this often. */
#define RECONNECT_S 2

struct _CorralScreenPanel {
        GtkWidget parent_instance;
        GtkWidget *stack; /* "none", "screen" */
        GtkWidget *status;
        GtkWidget *control_button;
        GtkWidget *help_bar; /* the assistant's request, when it asks for help */
        GtkWidget *help_label;
        GtkWidget *picture;

        char *socket; /* (nullable) the screen's vnc.sock */
        char *vm_dir; /* (nullable) where the person's taking and giving back are logged */
        CorralVnc *vnc;
        CorralComputer *computer;
        GCancellable *cancellable;
        guint reconnect_source;
        char *problem; /* (nullable) why the screen is not shown now */
        guint buttons; /* CorralVncButtons the person holds */
        double pointer_x, pointer_y; /* where the pointer last was over the picture */
};

G_DEFINE_FINAL_TYPE (CorralScreenPanel, corral_screen_panel, GTK_TYPE_WIDGET)

enum { SIGNAL_HELP_DECLINED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void connect_screen (CorralScreenPanel *self);

static void
update_status (CorralScreenPanel *self)
{
        gboolean in_control = corral_screen_panel_get_in_control (self);
        const char *text;
        g_autofree char *problem = NULL;

        if (self->problem)
                text = problem = g_strdup_printf (_ ("The screen is not available now (%s). "
                                                     "Corral keeps trying."),
                                                  self->problem);
        else if (!self->vnc || !corral_vnc_is_connected (self->vnc))
                text = _ ("Connecting to the screen…");
        else if (in_control)
                text = _ ("You have the screen. The assistant waits until you give it back.");
        else
                text = _ ("The assistant uses this screen. Take control to use it yourself.");
        gtk_label_set_text (GTK_LABEL (self->status), text);
        gtk_button_set_label (GTK_BUTTON (self->control_button),
                              in_control ? _ ("_Give Back") : _ ("_Take Control"));
        gtk_widget_set_sensitive (self->control_button,
                                  self->computer && self->vnc &&
                                          corral_vnc_is_connected (self->vnc));
        gtk_widget_set_focusable (self->picture, in_control);
        /* The VM's own pointer is not in its picture (QEMU draws no cursor into what it
         * sends): the person's stays visible while they have the screen. */
        gtk_widget_set_cursor_from_name (self->picture, in_control ? "default" : NULL);
}

static void
show_picture (CorralScreenPanel *self)
{
        guint width, height;
        g_autoptr (GBytes) pixels = corral_vnc_snapshot (self->vnc, &width, &height);
        g_autoptr (GdkTexture) texture = NULL;

        if (!pixels || !width || !height)
                return;
        texture = gdk_memory_texture_new ((int) width, (int) height, GDK_MEMORY_R8G8B8A8, pixels,
                                          (gsize) width * 4);
        gtk_picture_set_paintable (GTK_PICTURE (self->picture), GDK_PAINTABLE (texture));
}

static void
on_screen_changed (CorralVnc *vnc, guint x, guint y, guint w, guint h, CorralScreenPanel *self)
{
        show_picture (self);
}

static gboolean
reconnect (gpointer data)
{
        CorralScreenPanel *self = data;

        self->reconnect_source = 0;
        connect_screen (self);
        return G_SOURCE_REMOVE;
}

static void
schedule_reconnect (CorralScreenPanel *self)
{
        if (!self->reconnect_source && self->socket)
                self->reconnect_source = g_timeout_add_seconds (RECONNECT_S, reconnect, self);
}

static void
on_closed (CorralVnc *vnc, const char *reason, CorralScreenPanel *self)
{
        /* The person cannot use a screen that is gone; the assistant may go on when it is back. */
        if (self->computer && corral_computer_is_held (self->computer))
                corral_computer_release (self->computer);
        self->buttons = 0;
        g_free (self->problem);
        self->problem = g_strdup (reason ? reason : _ ("the connection ended"));
        update_status (self);
        schedule_reconnect (self);
}

static void
on_connected (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralScreenPanel) self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_vnc_connect_finish (CORRAL_VNC (source), res, &error)) {
                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        return;
                g_free (self->problem);
                self->problem = g_strdup (error->message);
                update_status (self);
                schedule_reconnect (self);
                return;
        }
        g_clear_pointer (&self->problem, g_free);
        show_picture (self);
        update_status (self);
}

static void
connect_screen (CorralScreenPanel *self)
{
        if (!self->socket || !self->vnc || corral_vnc_is_connected (self->vnc))
                return;
        corral_vnc_connect_async (self->vnc, self->socket, self->cancellable, on_connected,
                                  g_object_ref (self));
}

static void
disconnect_screen (CorralScreenPanel *self)
{
        g_clear_handle_id (&self->reconnect_source, g_source_remove);
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        if (self->computer && corral_computer_is_held (self->computer))
                corral_computer_release (self->computer);
        g_clear_object (&self->computer);
        if (self->vnc) {
                g_signal_handlers_disconnect_by_data (self->vnc, self);
                corral_vnc_close (self->vnc);
                g_clear_object (&self->vnc);
        }
        g_clear_pointer (&self->socket, g_free);
        g_clear_pointer (&self->problem, g_free);
        gtk_picture_set_paintable (GTK_PICTURE (self->picture), NULL);
        gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (self->control_button), FALSE);
}

void
corral_screen_panel_set_socket (CorralScreenPanel *self, const char *path)
{
        g_return_if_fail (CORRAL_IS_SCREEN_PANEL (self));

        if (g_strcmp0 (path, self->socket) == 0)
                return;
        disconnect_screen (self);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), path ? "screen" : "none");
        if (path) {
                self->socket = g_strdup (path);
                self->cancellable = g_cancellable_new ();
                self->vnc = corral_vnc_new ();
                g_signal_connect (self->vnc, "screen-changed", G_CALLBACK (on_screen_changed),
                                  self);
                g_signal_connect (self->vnc, "closed", G_CALLBACK (on_closed), self);
                connect_screen (self);
                /* At once, so that the assistant has it from its first turn. */
                self->computer = corral_computer_new (self->vnc);
        }
        update_status (self);
}

void
corral_screen_panel_set_vm_dir (CorralScreenPanel *self, const char *vm_dir)
{
        g_autofree char *path = vm_dir ? g_build_filename (vm_dir, "vnc.sock", NULL) : NULL;

        g_return_if_fail (CORRAL_IS_SCREEN_PANEL (self));
        corral_screen_panel_set_socket (
                self, path && g_file_test (path, G_FILE_TEST_EXISTS) ? path : NULL);
        g_free (self->vm_dir);
        self->vm_dir = g_strdup (vm_dir);
}

CorralComputer *
corral_screen_panel_get_computer (CorralScreenPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_SCREEN_PANEL (self), NULL);
        return self->computer;
}

void
corral_screen_panel_set_help_request (CorralScreenPanel *self, const char *request)
{
        g_autofree char *text = NULL;

        g_return_if_fail (CORRAL_IS_SCREEN_PANEL (self));
        if (request)
                text = g_strdup_printf (_ ("The assistant asks for your help: %s Take control, "
                                           "do it, then give the screen back."),
                                        request);
        gtk_label_set_text (GTK_LABEL (self->help_label), text ? text : "");
        gtk_widget_set_visible (self->help_bar, request != NULL);
}

static void
on_not_now (CorralScreenPanel *self)
{
        gtk_widget_set_visible (self->help_bar, FALSE);
        g_signal_emit (self, signals[SIGNAL_HELP_DECLINED], 0);
}

void
corral_screen_panel_set_in_control (CorralScreenPanel *self, gboolean in_control)
{
        g_return_if_fail (CORRAL_IS_SCREEN_PANEL (self));
        gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (self->control_button), in_control);
}

gboolean
corral_screen_panel_get_in_control (CorralScreenPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_SCREEN_PANEL (self), FALSE);
        return self->computer && corral_computer_is_held (self->computer);
}

static void
on_control_toggled (CorralScreenPanel *self)
{
        gboolean take = gtk_toggle_button_get_active (GTK_TOGGLE_BUTTON (self->control_button));

        if (self->computer && take != corral_computer_is_held (self->computer)) {
                /* In the VM's computer log, with the assistant's actions. */
                if (self->vm_dir)
                        corral_computer_log (self->vm_dir, "person", NULL,
                                             take ? "took the screen" : "gave the screen back",
                                             NULL);
                if (take)
                        corral_computer_hold (self->computer, _ ("the person is using the screen"));
                else {
                        /* Nothing the person pressed stays held for the assistant. */
                        if (self->buttons && self->vnc)
                                corral_vnc_pointer (self->vnc, 0, 0, 0);
                        self->buttons = 0;
                        corral_computer_release (self->computer);
                }
        }
        update_status (self);
        if (take)
                gtk_widget_grab_focus (self->picture);
}

/* The person's input, when they have the screen ---------------------------------------------- */

/* Where a point of the picture is on the screen (the picture is scaled to fit, centred). */
static gboolean
to_screen (CorralScreenPanel *self, double wx, double wy, guint *sx, guint *sy)
{
        double w = gtk_widget_get_width (self->picture), h = gtk_widget_get_height (self->picture);
        guint sw = self->vnc ? corral_vnc_get_width (self->vnc) : 0;
        guint sh = self->vnc ? corral_vnc_get_height (self->vnc) : 0;
        double scale, x, y;

        if (!corral_screen_panel_get_in_control (self) || !sw || !sh || w <= 0 || h <= 0)
                return FALSE;
        scale = MIN (w / sw, h / sh);
        x = (wx - (w - sw * scale) / 2) / scale;
        y = (wy - (h - sh * scale) / 2) / scale;
        *sx = (guint) CLAMP (x, 0, sw - 1);
        *sy = (guint) CLAMP (y, 0, sh - 1);
        return TRUE;
}

static void
on_motion (GtkEventControllerMotion *motion, double x, double y, CorralScreenPanel *self)
{
        guint sx, sy;

        self->pointer_x = x;
        self->pointer_y = y;
        if (to_screen (self, x, y, &sx, &sy))
                corral_vnc_pointer (self->vnc, sx, sy, self->buttons);
}

static guint
button_mask (GtkGesture *gesture)
{
        switch (gtk_gesture_single_get_current_button (GTK_GESTURE_SINGLE (gesture))) {
        case GDK_BUTTON_PRIMARY:
                return CORRAL_VNC_BUTTON_LEFT;
        case GDK_BUTTON_MIDDLE:
                return CORRAL_VNC_BUTTON_MIDDLE;
        case GDK_BUTTON_SECONDARY:
                return CORRAL_VNC_BUTTON_RIGHT;
        default:
                return 0;
        }
}

static void
on_pressed (GtkGestureClick *click, int n, double x, double y, CorralScreenPanel *self)
{
        guint sx, sy;

        if (!to_screen (self, x, y, &sx, &sy))
                return;
        gtk_widget_grab_focus (self->picture);
        self->buttons |= button_mask (GTK_GESTURE (click));
        corral_vnc_pointer (self->vnc, sx, sy, self->buttons);
}

static void
on_released (GtkGestureClick *click, int n, double x, double y, CorralScreenPanel *self)
{
        guint sx, sy;

        if (!to_screen (self, x, y, &sx, &sy))
                return;
        self->buttons &= ~button_mask (GTK_GESTURE (click));
        corral_vnc_pointer (self->vnc, sx, sy, self->buttons);
}

static gboolean
on_scroll (GtkEventControllerScroll *scroll, double dx, double dy, CorralScreenPanel *self)
{
        guint sx, sy, wheel;

        /* At the pointer, where the last motion put it (scroll events have no position). */
        if (!to_screen (self, self->pointer_x, self->pointer_y, &sx, &sy))
                return FALSE;
        wheel = dy < 0   ? CORRAL_VNC_BUTTON_WHEEL_UP
                : dy > 0 ? CORRAL_VNC_BUTTON_WHEEL_DOWN
                : dx < 0 ? CORRAL_VNC_BUTTON_WHEEL_LEFT
                         : CORRAL_VNC_BUTTON_WHEEL_RIGHT;
        corral_vnc_pointer (self->vnc, sx, sy, self->buttons | wheel);
        corral_vnc_pointer (self->vnc, sx, sy, self->buttons);
        return TRUE;
}

static void
send_key (CorralScreenPanel *self, guint keyval, guint keycode, gboolean down)
{
        /* GDK's key values are X keysyms; its hardware key codes X's, evdev's + 8. */
        corral_vnc_key (self->vnc, keyval,
                        keycode >= 8 ? corral_vnc_scancode_from_evdev (keycode - 8) : 0, down);
}

static gboolean
on_key_pressed (GtkEventControllerKey *key,
                guint keyval,
                guint keycode,
                GdkModifierType state,
                CorralScreenPanel *self)
{
        if (!corral_screen_panel_get_in_control (self))
                return FALSE;
        send_key (self, keyval, keycode, TRUE);
        return TRUE;
}

static void
on_key_released (GtkEventControllerKey *key,
                 guint keyval,
                 guint keycode,
                 GdkModifierType state,
                 CorralScreenPanel *self)
{
        if (corral_screen_panel_get_in_control (self))
                send_key (self, keyval, keycode, FALSE);
}

/* The widget ---------------------------------------------------------------------------------- */

static void
corral_screen_panel_dispose (GObject *object)
{
        CorralScreenPanel *self = CORRAL_SCREEN_PANEL (object);

        /* Once: the widgets disconnect_screen () touches go with the stack. */
        if (self->stack) {
                disconnect_screen (self);
                g_clear_pointer (&self->stack, gtk_widget_unparent);
        }
        g_clear_pointer (&self->vm_dir, g_free);
        G_OBJECT_CLASS (corral_screen_panel_parent_class)->dispose (object);
}

static void
corral_screen_panel_class_init (CorralScreenPanelClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_screen_panel_dispose;
        gtk_widget_class_set_layout_manager_type (GTK_WIDGET_CLASS (klass), GTK_TYPE_BIN_LAYOUT);
        signals[SIGNAL_HELP_DECLINED] =
                g_signal_new ("help-declined", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_screen_panel_init (CorralScreenPanel *self)
{
        GtkWidget *none = adw_status_page_new ();
        GtkWidget *screen = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
        GtkEventController *controller;
        GtkGesture *click;

        adw_status_page_set_icon_name (ADW_STATUS_PAGE (none), "video-display-symbolic");
        adw_status_page_set_title (ADW_STATUS_PAGE (none), _ ("No Screen"));
        adw_status_page_set_description (
                ADW_STATUS_PAGE (none),
                _ ("This task’s workspace has no screen. To let the assistant use one, turn on "
                   "“Let the Assistant Use a Screen” when you start a task."));

        self->status = gtk_label_new (NULL);
        gtk_label_set_wrap (GTK_LABEL (self->status), TRUE);
        gtk_label_set_xalign (GTK_LABEL (self->status), 0);
        gtk_widget_set_hexpand (self->status, TRUE);
        gtk_widget_add_css_class (self->status, "dim-label");
        self->control_button = gtk_toggle_button_new_with_mnemonic (_ ("_Take Control"));
        gtk_widget_set_valign (self->control_button, GTK_ALIGN_CENTER);
        g_signal_connect_swapped (self->control_button, "toggled", G_CALLBACK (on_control_toggled),
                                  self);
        gtk_box_append (GTK_BOX (bar), self->status);
        gtk_box_append (GTK_BOX (bar), self->control_button);
        gtk_widget_set_margin_start (bar, 6);
        gtk_widget_set_margin_end (bar, 6);
        gtk_widget_set_margin_top (bar, 6);

        self->picture = gtk_picture_new ();
        gtk_picture_set_can_shrink (GTK_PICTURE (self->picture), TRUE);
        gtk_picture_set_content_fit (GTK_PICTURE (self->picture), GTK_CONTENT_FIT_CONTAIN);
        gtk_widget_set_vexpand (self->picture, TRUE);
        gtk_widget_set_hexpand (self->picture, TRUE);
        corral_ui_set_accessible_label (self->picture, _ ("The workspace’s screen"));
        controller = gtk_event_controller_motion_new ();
        g_signal_connect (controller, "motion", G_CALLBACK (on_motion), self);
        gtk_widget_add_controller (self->picture, controller);
        click = gtk_gesture_click_new ();
        gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), 0);
        g_signal_connect (click, "pressed", G_CALLBACK (on_pressed), self);
        g_signal_connect (click, "released", G_CALLBACK (on_released), self);
        gtk_widget_add_controller (self->picture, GTK_EVENT_CONTROLLER (click));
        controller = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES |
                                                      GTK_EVENT_CONTROLLER_SCROLL_DISCRETE);
        g_signal_connect (controller, "scroll", G_CALLBACK (on_scroll), self);
        gtk_widget_add_controller (self->picture, controller);
        controller = gtk_event_controller_key_new ();
        g_signal_connect (controller, "key-pressed", G_CALLBACK (on_key_pressed), self);
        g_signal_connect (controller, "key-released", G_CALLBACK (on_key_released), self);
        gtk_widget_add_controller (self->picture, controller);

        /* The assistant's request, when it asks: above everything, until answered. */
        {
                GtkWidget *not_now = gtk_button_new_with_mnemonic (_ ("_Not Now"));

                self->help_bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
                gtk_widget_add_css_class (self->help_bar, "screen-help");
                gtk_widget_add_css_class (self->help_bar, "card");
                self->help_label = gtk_label_new (NULL);
                gtk_label_set_wrap (GTK_LABEL (self->help_label), TRUE);
                gtk_label_set_xalign (GTK_LABEL (self->help_label), 0);
                gtk_widget_set_hexpand (self->help_label, TRUE);
                gtk_widget_set_valign (not_now, GTK_ALIGN_CENTER);
                g_signal_connect_swapped (not_now, "clicked", G_CALLBACK (on_not_now), self);
                gtk_box_append (GTK_BOX (self->help_bar),
                                gtk_image_new_from_icon_name ("dialog-question-symbolic"));
                gtk_box_append (GTK_BOX (self->help_bar), self->help_label);
                gtk_box_append (GTK_BOX (self->help_bar), not_now);
                gtk_widget_set_margin_start (self->help_bar, 6);
                gtk_widget_set_margin_end (self->help_bar, 6);
                gtk_widget_set_margin_top (self->help_bar, 6);
                gtk_widget_set_visible (self->help_bar, FALSE);
                gtk_box_append (GTK_BOX (screen), self->help_bar);
        }
        gtk_box_append (GTK_BOX (screen), bar);
        gtk_box_append (GTK_BOX (screen), self->picture);

        self->stack = gtk_stack_new ();
        gtk_stack_add_named (GTK_STACK (self->stack), none, "none");
        gtk_stack_add_named (GTK_STACK (self->stack), screen, "screen");
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "none");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
        update_status (self);
}

GtkWidget *
corral_screen_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_SCREEN_PANEL, NULL);
}
