/* corral-terminal-panel.c — a VteTerminal wired to a shell process in the guest.
 *
 * There is no local PTY: the guest's PTY output is fed to VTE, what VTE commits (keys, pastes,
 * its answers to the shell's queries) is written to the process's stdin, and the terminal's
 * grid size is sent as a PTY resize.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-terminal-panel.h"

#include <glib/gi18n.h>
#include <signal.h>

#include "corral-process.h"

/* The user's login shell is not known from here (the agent sets SHELL=/bin/sh); bash when the
 * image has it, else the POSIX shell. */
#define SHELL_COMMAND "command -v bash >/dev/null 2>&1 && exec bash -l; exec sh -l"

/* A VteTerminal that reports when its grid (columns, rows) changes ---------------------------- */

typedef struct {
        VteTerminal parent_instance;
        glong rows;
        glong cols;
} TermView;

typedef struct {
        VteTerminalClass parent_class;
} TermViewClass;

static GType term_view_get_type (void);
G_DEFINE_FINAL_TYPE (TermView, term_view, VTE_TYPE_TERMINAL)

enum { SIGNAL_GRID_CHANGED, N_SIGNALS };
static guint term_view_signals[N_SIGNALS];

static void
term_view_size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
        TermView *self = (TermView *) widget;
        VteTerminal *term = VTE_TERMINAL (widget);

        GTK_WIDGET_CLASS (term_view_parent_class)->size_allocate (widget, width, height, baseline);
        /* The context menu is our child: GTK asks its parent to place it. */
        for (GtkWidget *c = gtk_widget_get_first_child (widget); c;
             c = gtk_widget_get_next_sibling (c))
                if (GTK_IS_POPOVER (c))
                        gtk_popover_present (GTK_POPOVER (c));
        if (vte_terminal_get_row_count (term) == self->rows &&
            vte_terminal_get_column_count (term) == self->cols)
                return;
        self->rows = vte_terminal_get_row_count (term);
        self->cols = vte_terminal_get_column_count (term);
        g_signal_emit (self, term_view_signals[SIGNAL_GRID_CHANGED], 0);
}

/* The libadwaita view colours, so that the terminal follows the light and dark styles; the 16
 * ANSI colours stay VTE's own. */
static void
term_view_css_changed (GtkWidget *widget, GtkCssStyleChange *change)
{
        GtkStyleContext *context = gtk_widget_get_style_context (widget);
        GdkRGBA fg, bg;

        GTK_WIDGET_CLASS (term_view_parent_class)->css_changed (widget, change);
        if (!gtk_style_context_lookup_color (context, "view_fg_color", &fg))
                gtk_style_context_get_color (context, &fg);
        if (!gtk_style_context_lookup_color (context, "view_bg_color", &bg))
                return;
        vte_terminal_set_colors (VTE_TERMINAL (widget), &fg, &bg, NULL, 0);
}

static void
term_view_class_init (TermViewClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        widget_class->size_allocate = term_view_size_allocate;
        widget_class->css_changed = term_view_css_changed;
        term_view_signals[SIGNAL_GRID_CHANGED] =
                g_signal_new ("grid-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 0);
}

static void
term_view_init (TermView *self)
{
}

/* The panel ----------------------------------------------------------------------------------- */

struct _CorralTerminalPanel {
        GtkWidget parent_instance;

        CorralAgentClient *client;
        CorralProcess *process;
        GCancellable *cancellable; /* the shell being started, or waited on */
        guint rows, cols; /* the PTY size last sent */

        GtkWidget *stack;
        GtkWidget *terminal;
        GtkWidget *revealer;
        GtkWidget *message;
        GtkWidget *menu; /* the terminal's context menu */
};

G_DEFINE_FINAL_TYPE (CorralTerminalPanel, corral_terminal_panel, GTK_TYPE_WIDGET)

static void
show_ended (CorralTerminalPanel *self, const char *message)
{
        gtk_label_set_text (GTK_LABEL (self->message), message);
        gtk_revealer_set_reveal_child (GTK_REVEALER (self->revealer), TRUE);
}

/* Ends the shell; nothing of it reaches the terminal afterwards. */
static void
stop_shell (CorralTerminalPanel *self)
{
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        if (self->process) {
                g_signal_handlers_disconnect_by_data (self->process, self);
                if (!corral_process_get_exited (self->process))
                        corral_process_kill (self->process, SIGHUP);
                g_clear_object (&self->process);
        }
}

static void
send_size (CorralTerminalPanel *self)
{
        VteTerminal *term = VTE_TERMINAL (self->terminal);
        guint rows = (guint) vte_terminal_get_row_count (term);
        guint cols = (guint) vte_terminal_get_column_count (term);

        if (!self->process || (rows == self->rows && cols == self->cols))
                return;
        self->rows = rows;
        self->cols = cols;
        corral_process_resize (self->process, rows, cols);
}

static void
on_output (CorralProcess *process, guint stream, GBytes *data, CorralTerminalPanel *self)
{
        gsize len;
        const char *bytes = g_bytes_get_data (data, &len);

        vte_terminal_feed (VTE_TERMINAL (self->terminal), bytes, (gssize) len);
}

static void
on_written (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        /* The shell ending, or the connection dropping, is reported by the wait. */
        if (!corral_process_write_finish (CORRAL_PROCESS (source), result, &error))
                g_debug ("Terminal input not delivered: %s", error->message);
}

static void
on_commit (VteTerminal *term, const char *text, guint size, CorralTerminalPanel *self)
{
        g_autoptr (GBytes) bytes = NULL;

        if (!self->process || corral_process_get_exited (self->process) || size == 0)
                return;
        bytes = g_bytes_new (text, size);
        corral_process_write_async (self->process, bytes, self->cancellable, on_written, NULL);
}

static void
on_shell_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        CorralProcess *process = CORRAL_PROCESS (source);
        g_autoptr (GError) error = NULL;
        CorralTerminalPanel *self;

        if (!corral_process_wait_finish (process, result, &error) &&
            g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        self = user_data;
        if (error)
                show_ended (self, _ ("The connection to the workspace was lost."));
        else
                show_ended (self, _ ("The shell has ended."));
        g_signal_handlers_disconnect_by_data (process, self);
        g_clear_object (&self->process);
}

static void
on_spawned (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralProcess) process =
                corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        CorralTerminalPanel *self;
        g_autofree char *message = NULL;

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        self = user_data;
        if (!process) {
                message = g_strdup_printf (_ ("Could not start a shell: %s"), error->message);
                show_ended (self, message);
                return;
        }
        /* Held output is emitted from an idle right after this callback: connect now. */
        self->process = g_steal_pointer (&process);
        g_signal_connect (self->process, "output", G_CALLBACK (on_output), self);
        corral_process_wait_async (self->process, self->cancellable, on_shell_done, self);
        send_size (self);
}

static void
start_shell (CorralTerminalPanel *self)
{
        VteTerminal *term = VTE_TERMINAL (self->terminal);
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_shell (SHELL_COMMAND);

        stop_shell (self);
        gtk_revealer_set_reveal_child (GTK_REVEALER (self->revealer), FALSE);
        vte_terminal_reset (term, TRUE, TRUE);
        self->rows = (guint) vte_terminal_get_row_count (term);
        self->cols = (guint) vte_terminal_get_column_count (term);
        corral_exec_spec_set_pty (spec, self->rows, self->cols);
        corral_exec_spec_set_stdin (spec, TRUE);
        corral_exec_spec_set_env (spec, "TERM", "xterm-256color");
        self->cancellable = g_cancellable_new ();
        corral_agent_client_spawn_async (self->client, spec, self->cancellable, on_spawned, self);
}

static GtkWidget *
build_empty (void)
{
        GtkWidget *page = adw_status_page_new ();

        adw_status_page_set_icon_name (ADW_STATUS_PAGE (page), "utilities-terminal-symbolic");
        adw_status_page_set_title (ADW_STATUS_PAGE (page), _ ("Terminal Not Connected Yet"));
        adw_status_page_set_description (ADW_STATUS_PAGE (page),
                                         _ ("A terminal inside the workspace will appear here. "
                                            "Until then, “corralctl shell” opens one."));
        gtk_widget_add_css_class (page, "compact");
        return page;
}

static GtkWidget *
build_bar (CorralTerminalPanel *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
        GtkWidget *restart = gtk_button_new_with_mnemonic (_ ("_Restart"));

        self->message = gtk_label_new (NULL);
        gtk_label_set_wrap (GTK_LABEL (self->message), TRUE);
        gtk_label_set_xalign (GTK_LABEL (self->message), 0);
        gtk_widget_set_hexpand (self->message, TRUE);
        gtk_widget_set_valign (restart, GTK_ALIGN_CENTER);
        g_signal_connect_swapped (restart, "clicked", G_CALLBACK (corral_terminal_panel_restart),
                                  self);
        gtk_widget_add_css_class (box, "toolbar");
        gtk_box_append (GTK_BOX (box), self->message);
        gtk_box_append (GTK_BOX (box), restart);
        self->revealer = gtk_revealer_new ();
        gtk_revealer_set_transition_type (GTK_REVEALER (self->revealer),
                                          GTK_REVEALER_TRANSITION_TYPE_SLIDE_UP);
        gtk_revealer_set_child (GTK_REVEALER (self->revealer), box);
        return self->revealer;
}

/* Copy and paste ------------------------------------------------------------------------------ */

static void
copy_activated (GtkWidget *widget, const char *action, GVariant *param)
{
        VteTerminal *term = VTE_TERMINAL (CORRAL_TERMINAL_PANEL (widget)->terminal);

        if (vte_terminal_get_has_selection (term))
                vte_terminal_copy_clipboard_format (term, VTE_FORMAT_TEXT);
}

static void
paste_activated (GtkWidget *widget, const char *action, GVariant *param)
{
        /* VTE commits the text (bracketed when the shell asked for it): on_commit sends it. */
        vte_terminal_paste_clipboard (VTE_TERMINAL (CORRAL_TERMINAL_PANEL (widget)->terminal));
}

static void
select_all_activated (GtkWidget *widget, const char *action, GVariant *param)
{
        vte_terminal_select_all (VTE_TERMINAL (CORRAL_TERMINAL_PANEL (widget)->terminal));
}

static void
on_selection_changed (CorralTerminalPanel *self)
{
        gtk_widget_action_set_enabled (
                GTK_WIDGET (self), "terminal.copy",
                vte_terminal_get_has_selection (VTE_TERMINAL (self->terminal)));
}

static void
popup_menu_at (CorralTerminalPanel *self, double x, double y)
{
        GdkRectangle at = { (int) x, (int) y, 1, 1 };

        gtk_popover_set_pointing_to (GTK_POPOVER (self->menu), &at);
        gtk_popover_popup (GTK_POPOVER (self->menu));
}

static void
on_secondary_click (
        GtkGestureClick *gesture, int n_press, double x, double y, CorralTerminalPanel *self)
{
        popup_menu_at (self, x, y);
        gtk_gesture_set_state (GTK_GESTURE (gesture), GTK_EVENT_SEQUENCE_CLAIMED);
}

/* From the keyboard (Menu, Shift+F10): at the terminal's cursor. */
static void
menu_activated (GtkWidget *widget, const char *action, GVariant *param)
{
        CorralTerminalPanel *self = CORRAL_TERMINAL_PANEL (widget);
        VteTerminal *term = VTE_TERMINAL (self->terminal);
        glong col = 0, row = 0;
        double top = gtk_adjustment_get_value (
                gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (self->terminal)));

        vte_terminal_get_cursor_position (term, &col, &row);
        popup_menu_at (self, (double) (col * vte_terminal_get_char_width (term)),
                       (double) (row - (glong) top + 1) * vte_terminal_get_char_height (term));
}

/* The usual terminal keys (Ctrl+Shift+C/V/A, Shift+Insert; Ctrl+C stays the shell's
 * interrupt) and a context menu (secondary click, Menu, Shift+F10). */
static void
add_clipboard_controls (CorralTerminalPanel *self)
{
        static const struct {
                const char *trigger, *action;
        } keys[] = {
                { "<Control><Shift>c", "terminal.copy" },
                { "<Control><Shift>v", "terminal.paste" },
                { "<Shift>Insert", "terminal.paste" },
                { "<Control><Shift>a", "terminal.select-all" },
                { "Menu", "terminal.menu" },
                { "<Shift>F10", "terminal.menu" },
        };
        GtkEventController *shortcuts = gtk_shortcut_controller_new ();
        GtkGesture *click = gtk_gesture_click_new ();
        g_autoptr (GMenu) menu = g_menu_new ();
        g_autoptr (GMenu) section = g_menu_new ();

        /* Before VTE, which would send the keys to the shell. */
        gtk_event_controller_set_propagation_phase (shortcuts, GTK_PHASE_CAPTURE);
        for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
                gtk_shortcut_controller_add_shortcut (
                        GTK_SHORTCUT_CONTROLLER (shortcuts),
                        gtk_shortcut_new (gtk_shortcut_trigger_parse_string (keys[i].trigger),
                                          gtk_named_action_new (keys[i].action)));
        gtk_widget_add_controller (self->terminal, shortcuts);

        g_menu_append (section, _ ("_Copy"), "terminal.copy");
        g_menu_append (section, _ ("_Paste"), "terminal.paste");
        g_menu_append_section (menu, NULL, G_MENU_MODEL (section));
        g_menu_append (menu, _ ("Select _All"), "terminal.select-all");
        self->menu = gtk_popover_menu_new_from_model (G_MENU_MODEL (menu));
        gtk_popover_set_has_arrow (GTK_POPOVER (self->menu), FALSE);
        gtk_widget_set_halign (self->menu, GTK_ALIGN_START);
        gtk_widget_set_parent (self->menu, self->terminal);
        gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), GDK_BUTTON_SECONDARY);
        gtk_event_controller_set_propagation_phase (GTK_EVENT_CONTROLLER (click),
                                                    GTK_PHASE_CAPTURE);
        g_signal_connect (click, "pressed", G_CALLBACK (on_secondary_click), self);
        gtk_widget_add_controller (self->terminal, GTK_EVENT_CONTROLLER (click));
        g_signal_connect_swapped (self->terminal, "selection-changed",
                                  G_CALLBACK (on_selection_changed), self);
}

static GtkWidget *
build_terminal (CorralTerminalPanel *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *scrolled = gtk_scrolled_window_new ();
        VteTerminal *term;

        self->terminal = g_object_new (term_view_get_type (), NULL);
        term = VTE_TERMINAL (self->terminal);
        vte_terminal_set_scrollback_lines (term, CORRAL_TERMINAL_SCROLLBACK_LINES);
        vte_terminal_set_scroll_on_keystroke (term, TRUE);
        vte_terminal_set_scroll_on_output (term, FALSE);
        vte_terminal_set_mouse_autohide (term, TRUE);
        gtk_accessible_update_property (GTK_ACCESSIBLE (term), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        _ ("Terminal in the workspace"), -1);
        g_signal_connect (term, "commit", G_CALLBACK (on_commit), self);
        g_signal_connect_swapped (term, "grid-changed", G_CALLBACK (send_size), self);
        add_clipboard_controls (self);
        gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scrolled), GTK_POLICY_NEVER,
                                        GTK_POLICY_AUTOMATIC);
        gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scrolled), self->terminal);
        /* The margin shows the same view background as the terminal: text does not touch the
         * panel's edges. */
        gtk_widget_set_vexpand (scrolled, TRUE);
        gtk_widget_set_margin_start (scrolled, 6);
        gtk_widget_set_margin_top (scrolled, 6);
        gtk_widget_set_margin_bottom (scrolled, 6);
        gtk_widget_add_css_class (box, "view");
        gtk_box_append (GTK_BOX (box), scrolled);
        gtk_box_append (GTK_BOX (box), build_bar (self));
        return box;
}

static void
corral_terminal_panel_dispose (GObject *object)
{
        CorralTerminalPanel *self = CORRAL_TERMINAL_PANEL (object);

        stop_shell (self);
        g_clear_object (&self->client);
        g_clear_pointer (&self->menu, gtk_widget_unparent);
        g_clear_pointer (&self->stack, gtk_widget_unparent);
        G_OBJECT_CLASS (corral_terminal_panel_parent_class)->dispose (object);
}

static void
corral_terminal_panel_class_init (CorralTerminalPanelClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_terminal_panel_dispose;
        gtk_widget_class_install_action (widget_class, "terminal.copy", NULL, copy_activated);
        gtk_widget_class_install_action (widget_class, "terminal.paste", NULL, paste_activated);
        gtk_widget_class_install_action (widget_class, "terminal.select-all", NULL,
                                         select_all_activated);
        gtk_widget_class_install_action (widget_class, "terminal.menu", NULL, menu_activated);
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
corral_terminal_panel_init (CorralTerminalPanel *self)
{
        self->stack = gtk_stack_new ();
        gtk_stack_add_named (GTK_STACK (self->stack), build_empty (), "empty");
        gtk_stack_add_named (GTK_STACK (self->stack), build_terminal (self), "terminal");
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "empty");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
        gtk_widget_action_set_enabled (GTK_WIDGET (self), "terminal.copy", FALSE);
}

GtkWidget *
corral_terminal_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_TERMINAL_PANEL, NULL);
}

void
corral_terminal_panel_set_client (CorralTerminalPanel *self, CorralAgentClient *client)
{
        g_return_if_fail (CORRAL_IS_TERMINAL_PANEL (self));
        g_return_if_fail (client == NULL || CORRAL_IS_AGENT_CLIENT (client));

        if (client == self->client)
                return;
        stop_shell (self);
        g_set_object (&self->client, client);
        if (!client) {
                gtk_revealer_set_reveal_child (GTK_REVEALER (self->revealer), FALSE);
                vte_terminal_reset (VTE_TERMINAL (self->terminal), TRUE, TRUE);
                gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "empty");
                return;
        }
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "terminal");
        start_shell (self);
}

CorralAgentClient *
corral_terminal_panel_get_client (CorralTerminalPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_TERMINAL_PANEL (self), NULL);
        return self->client;
}

void
corral_terminal_panel_restart (CorralTerminalPanel *self)
{
        g_return_if_fail (CORRAL_IS_TERMINAL_PANEL (self));
        if (self->client)
                start_shell (self);
}

gboolean
corral_terminal_panel_get_running (CorralTerminalPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_TERMINAL_PANEL (self), FALSE);
        return self->process && !corral_process_get_exited (self->process);
}

VteTerminal *
corral_terminal_panel_get_terminal (CorralTerminalPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_TERMINAL_PANEL (self), NULL);
        return VTE_TERMINAL (self->terminal);
}
