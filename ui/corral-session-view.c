/* corral-session-view.c — chat + side panels.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-session-view.h"

#include <glib/gi18n.h>

#include "corral-ui-util.h"

struct _CorralSessionView {
        GtkWidget parent_instance;

        char *vm_name;
        char *vm_dir;
        GtkWidget *flap;
        GtkWidget *chat;
        GtkWidget *panel_stack;
        GtkWidget *shares;
        GtkWidget *changes;
        GtkWidget *terminal;
        GtkWidget *screen;
        GtkWidget *activity;
        GSignalGroup *source_signals;
};

G_DEFINE_FINAL_TYPE (CorralSessionView, corral_session_view, GTK_TYPE_WIDGET)

static void
on_tool_finished (CorralChatSource *source, CorralChatTool *tool, CorralSessionView *self)
{
        /* The list is the change journal's: read again once a tool may have changed files. */
        corral_changes_panel_reload (CORRAL_CHANGES_PANEL (self->changes));
}

/* The assistant asks the person to take the screen: the Screen page, with the request; and a
 * desktop notification when the window is not the one the person is looking at. */
static void
on_help_requested (CorralChatSource *source, const char *request, CorralSessionView *self)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
        GtkApplication *app =
                GTK_IS_WINDOW (root) ? gtk_window_get_application (GTK_WINDOW (root)) : NULL;

        corral_screen_panel_set_help_request (CORRAL_SCREEN_PANEL (self->screen), request);
        if (!request) {
                if (app)
                        g_application_withdraw_notification (G_APPLICATION (app), "screen-help");
                return;
        }
        corral_session_view_show_panel (self, "screen");
        if (app && !gtk_window_is_active (GTK_WINDOW (root))) {
                g_autoptr (GNotification) n =
                        g_notification_new (_ ("The Assistant Needs Your Help"));

                g_notification_set_body (n, request);
                g_notification_set_priority (n, G_NOTIFICATION_PRIORITY_HIGH);
                g_application_send_notification (G_APPLICATION (app), "screen-help", n);
        }
}

static void
on_help_declined (CorralSessionView *self)
{
        CorralChatSource *source = g_signal_group_dup_target (self->source_signals);

        if (source)
                corral_chat_source_decline_help (source);
        g_clear_object (&source);
}

/* The side panel's width: room for lists and the terminal; the Screen page gets twice that, so
 * the VM's desktop (1280 × 800 by default) shows at half its size, where its text is still
 * legible, instead of at a quarter. */
#define PANEL_WIDTH 340
#define SCREEN_PANEL_WIDTH 680

static void
on_panel_page (AdwViewStack *stack, GParamSpec *pspec, GtkWidget *box)
{
        gboolean screen = g_strcmp0 (adw_view_stack_get_visible_child_name (stack), "screen") == 0;

        gtk_widget_set_size_request (box, screen ? SCREEN_PANEL_WIDTH : PANEL_WIDTH, -1);
}

static GtkWidget *
build_panel (CorralSessionView *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *switcher = adw_view_switcher_new ();
        AdwViewStackPage *page;

        gtk_widget_add_css_class (box, "side-panel");
        gtk_widget_set_size_request (box, PANEL_WIDTH, -1);
        self->panel_stack = adw_view_stack_new ();
        g_signal_connect_object (self->panel_stack, "notify::visible-child-name",
                                 G_CALLBACK (on_panel_page), box, 0);
        gtk_widget_set_vexpand (self->panel_stack, TRUE);
        self->shares = corral_shares_panel_new ();
        self->changes = corral_changes_panel_new ();
        self->terminal = corral_terminal_panel_new ();
        self->screen = corral_screen_panel_new ();
        self->activity = corral_activity_panel_new ();
        page = adw_view_stack_add_titled (ADW_VIEW_STACK (self->panel_stack), self->shares,
                                          "folders", _ ("Folders"));
        adw_view_stack_page_set_icon_name (page, "folder-symbolic");
        page = adw_view_stack_add_titled (ADW_VIEW_STACK (self->panel_stack), self->changes,
                                          "changes", _ ("Changes"));
        adw_view_stack_page_set_icon_name (page, "document-edit-symbolic");
        page = adw_view_stack_add_titled (ADW_VIEW_STACK (self->panel_stack), self->terminal,
                                          "terminal", _ ("Terminal"));
        adw_view_stack_page_set_icon_name (page, "utilities-terminal-symbolic");
        page = adw_view_stack_add_titled (ADW_VIEW_STACK (self->panel_stack), self->screen,
                                          "screen", _ ("Screen"));
        adw_view_stack_page_set_icon_name (page, "video-display-symbolic");
        adw_view_stack_page_set_visible (page, FALSE);
        page = adw_view_stack_add_titled (ADW_VIEW_STACK (self->panel_stack), self->activity,
                                          "activity", _ ("Activity"));
        adw_view_stack_page_set_icon_name (page, "document-open-recent-symbolic");
        adw_view_switcher_set_stack (ADW_VIEW_SWITCHER (switcher),
                                     ADW_VIEW_STACK (self->panel_stack));
        adw_view_switcher_set_policy (ADW_VIEW_SWITCHER (switcher),
                                      ADW_VIEW_SWITCHER_POLICY_NARROW);
        gtk_widget_set_margin_top (switcher, 6);
        gtk_widget_set_margin_bottom (switcher, 6);
        gtk_widget_set_margin_start (switcher, 6);
        gtk_widget_set_margin_end (switcher, 6);
        gtk_box_append (GTK_BOX (box), switcher);
        gtk_box_append (GTK_BOX (box), gtk_separator_new (GTK_ORIENTATION_HORIZONTAL));
        gtk_box_append (GTK_BOX (box), self->panel_stack);
        gtk_accessible_update_property (GTK_ACCESSIBLE (box), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        _ ("Side panel"), -1);
        return box;
}

static void
corral_session_view_dispose (GObject *object)
{
        CorralSessionView *self = CORRAL_SESSION_VIEW (object);

        if (self->source_signals)
                g_signal_group_set_target (self->source_signals, NULL);
        g_clear_object (&self->source_signals);
        g_clear_pointer (&self->flap, gtk_widget_unparent);
        g_clear_pointer (&self->vm_name, g_free);
        g_clear_pointer (&self->vm_dir, g_free);
        G_OBJECT_CLASS (corral_session_view_parent_class)->dispose (object);
}

static void
corral_session_view_class_init (CorralSessionViewClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_session_view_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
corral_session_view_init (CorralSessionView *self)
{
        self->flap = adw_flap_new ();
        adw_flap_set_flap_position (ADW_FLAP (self->flap), GTK_PACK_END);
        adw_flap_set_fold_policy (ADW_FLAP (self->flap), ADW_FLAP_FOLD_POLICY_AUTO);
        self->chat = corral_chat_view_new ();
        gtk_widget_set_hexpand (self->chat, TRUE);
        adw_flap_set_content (ADW_FLAP (self->flap), self->chat);
        adw_flap_set_separator (ADW_FLAP (self->flap),
                                gtk_separator_new (GTK_ORIENTATION_VERTICAL));
        adw_flap_set_flap (ADW_FLAP (self->flap), build_panel (self));
        gtk_widget_set_parent (self->flap, GTK_WIDGET (self));

        self->source_signals = g_signal_group_new (CORRAL_TYPE_CHAT_SOURCE);
        g_signal_group_connect (self->source_signals, "tool-finished",
                                G_CALLBACK (on_tool_finished), self);
        g_signal_group_connect (self->source_signals, "help-requested",
                                G_CALLBACK (on_help_requested), self);
        g_signal_connect_swapped (self->screen, "help-declined", G_CALLBACK (on_help_declined),
                                  self);
}

GtkWidget *
corral_session_view_new (void)
{
        return g_object_new (CORRAL_TYPE_SESSION_VIEW, NULL);
}

void
corral_session_view_set_workspace (CorralSessionView *self, const char *vm_name, const char *vm_dir)
{
        g_return_if_fail (CORRAL_IS_SESSION_VIEW (self));

        g_free (self->vm_name);
        g_free (self->vm_dir);
        self->vm_name = g_strdup (vm_name);
        self->vm_dir = g_strdup (vm_dir);
        corral_changes_panel_set_vm_dir (CORRAL_CHANGES_PANEL (self->changes), vm_dir);
        corral_shares_panel_set_vm_dir (CORRAL_SHARES_PANEL (self->shares), vm_dir);
        corral_activity_panel_set_vm_dir (CORRAL_ACTIVITY_PANEL (self->activity), vm_dir);
        corral_screen_panel_set_vm_dir (CORRAL_SCREEN_PANEL (self->screen), vm_dir);
        /* Only a task with a screen has the page. */
        adw_view_stack_page_set_visible (
                adw_view_stack_get_page (ADW_VIEW_STACK (self->panel_stack), self->screen),
                corral_screen_panel_get_computer (CORRAL_SCREEN_PANEL (self->screen)) != NULL);
}

void
corral_session_view_set_agent_client (CorralSessionView *self, CorralAgentClient *client)
{
        g_return_if_fail (CORRAL_IS_SESSION_VIEW (self));
        corral_terminal_panel_set_client (CORRAL_TERMINAL_PANEL (self->terminal), client);
}

const char *
corral_session_view_get_vm_name (CorralSessionView *self)
{
        g_return_val_if_fail (CORRAL_IS_SESSION_VIEW (self), NULL);
        return self->vm_name;
}

const char *
corral_session_view_get_vm_dir (CorralSessionView *self)
{
        g_return_val_if_fail (CORRAL_IS_SESSION_VIEW (self), NULL);
        return self->vm_dir;
}

void
corral_session_view_set_chat_source (CorralSessionView *self, CorralChatSource *source)
{
        g_return_if_fail (CORRAL_IS_SESSION_VIEW (self));
        corral_chat_view_set_source (CORRAL_CHAT_VIEW (self->chat), source);
        g_signal_group_set_target (self->source_signals, source);
}

void
corral_session_view_set_panel_visible (CorralSessionView *self, gboolean visible)
{
        g_return_if_fail (CORRAL_IS_SESSION_VIEW (self));
        adw_flap_set_reveal_flap (ADW_FLAP (self->flap), visible);
}

gboolean
corral_session_view_get_panel_visible (CorralSessionView *self)
{
        g_return_val_if_fail (CORRAL_IS_SESSION_VIEW (self), FALSE);
        return adw_flap_get_reveal_flap (ADW_FLAP (self->flap));
}

void
corral_session_view_show_panel (CorralSessionView *self, const char *name)
{
        g_return_if_fail (CORRAL_IS_SESSION_VIEW (self));
        adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (self->panel_stack), name);
        corral_session_view_set_panel_visible (self, TRUE);
}

CorralChatView *
corral_session_view_get_chat (CorralSessionView *self)
{
        return CORRAL_CHAT_VIEW (self->chat);
}

CorralSharesPanel *
corral_session_view_get_shares (CorralSessionView *self)
{
        return CORRAL_SHARES_PANEL (self->shares);
}

CorralChangesPanel *
corral_session_view_get_changes (CorralSessionView *self)
{
        return CORRAL_CHANGES_PANEL (self->changes);
}

CorralTerminalPanel *
corral_session_view_get_terminal (CorralSessionView *self)
{
        return CORRAL_TERMINAL_PANEL (self->terminal);
}

CorralScreenPanel *
corral_session_view_get_screen (CorralSessionView *self)
{
        return CORRAL_SCREEN_PANEL (self->screen);
}

CorralActivityPanel *
corral_session_view_get_activity (CorralSessionView *self)
{
        return CORRAL_ACTIVITY_PANEL (self->activity);
}
