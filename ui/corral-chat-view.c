/* corral-chat-view.c — the conversation.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-chat-view.h"

#include <glib/gi18n.h>

#include "corral-tool-card.h"
#include "corral-markdown.h"
#include "corral-ui-util.h"

struct _CorralChatView {
        GtkWidget parent_instance;

        CorralChatSource *source;
        GSignalGroup *signals;
        gboolean busy;

        GtkWidget *toolbar_box; /* the whole view */
        GtkWidget *content_stack; /* "empty", "transcript", "disconnected" */
        GtkWidget *disconnected_page;
        GtkWidget *key_button;
        GtkWidget *retry_button;
        GtkWidget *scroller;
        gboolean follow; /* keep the end of the transcript in view as it grows */
        GtkWidget *transcript;
        GtkWidget *reply_label; /* the assistant text being streamed, or NULL */
        guint render_id; /* the streamed reply is rendered again once the pieces stop coming */
        GString *reply;
        GHashTable *cards; /* id -> CorralToolCard (transfer none) */
        guint n_cards;
        GtkWidget *entry;
        GtkWidget *send_button;
        GtkWidget *stop_button;
        GtkWidget *busy_spinner;
        GtkWidget *dialog; /* the approval dialog, or NULL */
        GQueue approvals; /* (element-type CorralChatApproval) waiting for the person */
};

G_DEFINE_FINAL_TYPE (CorralChatView, corral_chat_view, GTK_TYPE_WIDGET)

static void show_next_approval (CorralChatView *self);

/* New rows are laid out after they are added, so the end they make is not known yet: the view
 * follows the end (self->follow) until the person scrolls away from it. */
static void
scroll_to_end (CorralChatView *self)
{
        GtkAdjustment *adj =
                gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (self->scroller));

        self->follow = TRUE;
        gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj));
}

static void
on_scroll_range_changed (GtkAdjustment *adj, CorralChatView *self)
{
        if (self->follow)
                gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) -
                                                       gtk_adjustment_get_page_size (adj));
}

static void
on_scrolled (GtkAdjustment *adj, CorralChatView *self)
{
        self->follow = gtk_adjustment_get_value (adj) >=
                       gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj) - 1.0;
}

static void
append_row (CorralChatView *self, GtkWidget *row)
{
        gtk_box_append (GTK_BOX (self->transcript), row);
        gtk_stack_set_visible_child_name (GTK_STACK (self->content_stack), "transcript");
        scroll_to_end (self);
}

static void reply_label_set (GtkWidget *label, const char *text);

/* The streamed reply as it stands, parsed and shown (the pieces of one main-loop turn at once:
 * a reply arrives in thousands of them, and each render parses it whole). */
static void
render_reply (CorralChatView *self)
{
        g_clear_handle_id (&self->render_id, g_source_remove);
        if (self->reply_label)
                reply_label_set (self->reply_label, self->reply->str);
}

static gboolean
on_render_idle (gpointer data)
{
        CorralChatView *self = data;

        self->render_id = 0;
        render_reply (self);
        return G_SOURCE_REMOVE;
}

static void
end_reply (CorralChatView *self)
{
        render_reply (self);
        self->reply_label = NULL;
}

static void
set_busy (CorralChatView *self, gboolean busy)
{
        self->busy = busy;
        gtk_widget_set_visible (self->send_button, !busy);
        gtk_widget_set_visible (self->stop_button, busy);
        gtk_widget_set_visible (self->busy_spinner, busy);
        gtk_spinner_set_spinning (GTK_SPINNER (self->busy_spinner), busy);
        /* The entry stays usable while the assistant works (the next message can be typed);
         * only sending waits. Making a focused GtkText insensitive also confuses its focus. */
        gtk_widget_set_sensitive (self->entry, self->source != NULL);
        /* Back to the entry for the next message, unless the person is elsewhere. */
        if (!busy && self->source && gtk_widget_get_mapped (self->entry) &&
            GTK_IS_WINDOW (gtk_widget_get_root (GTK_WIDGET (self))) &&
            gtk_window_is_active (GTK_WINDOW (gtk_widget_get_root (GTK_WIDGET (self)))))
                gtk_widget_grab_focus (self->entry);
}

/* A reply of the assistant: its Markdown rendered (corral-markdown.h), links asked about. */
static GtkWidget *
reply_label_new (void)
{
        GtkWidget *label = corral_ui_plain_label ("", TRUE);

        gtk_widget_add_css_class (label, "chat-assistant");
        g_signal_connect (label, "activate-link", G_CALLBACK (corral_markdown_confirm_link), NULL);
        return label;
}

/* Shows text in label, without the model's leading and trailing blank lines (a reply that
 * starts after a card begins with them). The whole reply is parsed again at each piece: an
 * emphasis or a list is only known once its end arrives. */
static void
reply_label_set (GtkWidget *label, const char *text)
{
        g_autofree char *shown = g_strstrip (g_strdup (text));
        g_autofree char *markup = corral_markdown_to_pango (shown, -1);

        gtk_label_set_markup (GTK_LABEL (label), markup);
}

static void
on_text_delta (CorralChatSource *source, const char *text, CorralChatView *self)
{
        if (!self->reply_label) {
                g_string_truncate (self->reply, 0);
                self->reply_label = reply_label_new ();
                append_row (self, self->reply_label);
        }
        g_string_append (self->reply, text);
        if (!self->render_id)
                self->render_id = g_idle_add (on_render_idle, self);
        scroll_to_end (self);
}

static void
on_reply_restarted (CorralChatSource *source, CorralChatView *self)
{
        g_string_truncate (self->reply, 0);
        render_reply (self);
}

static void
on_tool_started (CorralChatSource *source, CorralChatTool *tool, CorralChatView *self)
{
        GtkWidget *card = corral_tool_card_new (tool);

        end_reply (self);
        g_hash_table_replace (self->cards, g_strdup (tool->id), card);
        self->n_cards++;
        append_row (self, card);
}

static void
on_tool_finished (CorralChatSource *source, CorralChatTool *tool, CorralChatView *self)
{
        CorralToolCard *card = g_hash_table_lookup (self->cards, tool->id);

        if (!card) {
                on_tool_started (source, tool, self);
                return;
        }
        corral_tool_card_update (card, tool);
        scroll_to_end (self);
}

static void
add_notice (CorralChatView *self, const char *text, gboolean error)
{
        GtkWidget *label = corral_ui_plain_label (text, TRUE);

        gtk_label_set_xalign (GTK_LABEL (label), 0.5f);
        gtk_label_set_justify (GTK_LABEL (label), GTK_JUSTIFY_CENTER);
        gtk_widget_add_css_class (label, error ? "error" : "dim-label");
        gtk_widget_add_css_class (label, "caption");
        end_reply (self);
        append_row (self, label);
}

static void
on_retry_clicked_in_chat (GtkButton *button, CorralChatView *self)
{
        gtk_widget_set_sensitive (GTK_WIDGET (button), FALSE);
        if (!self->source || !corral_chat_source_can_retry (self->source))
                return;
        set_busy (self, TRUE);
        corral_chat_source_retry (self->source);
}

/* A task that stopped on a passing failure: why, and Try Again, which goes on from there. */
static void
add_retry_notice (CorralChatView *self, const char *text)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *label = corral_ui_plain_label (text, TRUE);
        GtkWidget *button = gtk_button_new_with_mnemonic (_ ("_Try Again"));

        gtk_label_set_xalign (GTK_LABEL (label), 0.5f);
        gtk_label_set_justify (GTK_LABEL (label), GTK_JUSTIFY_CENTER);
        gtk_widget_add_css_class (label, "error");
        gtk_widget_add_css_class (label, "caption");
        gtk_widget_set_halign (button, GTK_ALIGN_CENTER);
        gtk_widget_add_css_class (button, "pill");
        g_signal_connect (button, "clicked", G_CALLBACK (on_retry_clicked_in_chat), self);
        gtk_box_append (GTK_BOX (box), label);
        gtk_box_append (GTK_BOX (box), button);
        end_reply (self);
        append_row (self, box);
}

static void
on_notice (CorralChatSource *source, const char *text, CorralChatView *self)
{
        add_notice (self, text, FALSE);
}

static void
on_task_finished (CorralChatSource *source, const char *error, CorralChatView *self)
{
        CorralChatApproval *a;

        GHashTableIter iter;
        gpointer card;

        end_reply (self);
        /* Calls that were still running when the task ended (Stop, an error) never finish. */
        g_hash_table_iter_init (&iter, self->cards);
        while (g_hash_table_iter_next (&iter, NULL, &card))
                corral_tool_card_stop (card);
        /* Questions of a finished task have no one left to answer them. */
        while ((a = g_queue_pop_head (&self->approvals)))
                corral_chat_approval_unref (a);
        if (self->dialog)
                gtk_window_destroy (GTK_WINDOW (self->dialog));
        if (error && self->source && corral_chat_source_can_retry (self->source))
                add_retry_notice (self, error);
        else if (error)
                add_notice (self, error, TRUE);
        set_busy (self, FALSE);
}

/* Approvals ----------------------------------------------------------------------------------- */

static void
on_dialog_response (AdwMessageDialog *dialog, const char *response, CorralChatView *self)
{
        CorralChatApproval *a = g_object_get_data (G_OBJECT (dialog), "approval");
        CorralChatAnswer answer = CORRAL_CHAT_ANSWER_DENY;

        if (g_strcmp0 (response, "allow") == 0)
                answer = CORRAL_CHAT_ANSWER_ALLOW_ONCE;
        else if (g_strcmp0 (response, "task") == 0)
                answer = CORRAL_CHAT_ANSWER_ALLOW_TASK;
        else if (g_strcmp0 (response, "always") == 0)
                answer = CORRAL_CHAT_ANSWER_ALLOW_ALWAYS;
        if (a)
                corral_chat_approval_respond (a, answer);
}

static void
on_dialog_destroy (GtkWidget *dialog, CorralChatView *self)
{
        if (self->dialog != dialog)
                return;
        self->dialog = NULL;
        show_next_approval (self);
}

/* One line of the file's details: what it is (title) and its value, as plain text. */
static GtkWidget *
detail_row (const char *title, const char *value)
{
        GtkWidget *row = adw_action_row_new ();

        /* Paths and names come from outside: never markup. */
        adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), value);
        gtk_widget_add_css_class (row, "approval-detail");
        return row;
}

/* The file exactly as the host will delete it: the path in the shared folder, the shared folder
 * and how it is shared, and where it is on this computer. */
static GtkWidget *
file_details (const CorralChatApprovalFile *file)
{
        GtkWidget *list = gtk_list_box_new ();
        g_autofree char *host_path = g_build_filename (file->share_folder, file->path, NULL);
        const char *what = file->type == G_FILE_TYPE_DIRECTORY       ? _ ("Folder")
                           : file->type == G_FILE_TYPE_SYMBOLIC_LINK ? _ ("Link")
                                                                     : _ ("File");

        gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (list, "boxed-list");
        gtk_list_box_append (GTK_LIST_BOX (list), detail_row (what, file->path));
        gtk_list_box_append (GTK_LIST_BOX (list),
                             detail_row (_ ("Shared Folder"), file->share_name));
        gtk_list_box_append (GTK_LIST_BOX (list),
                             detail_row (_ ("The Assistant"), fs_mode_describe (file->mode)));
        gtk_list_box_append (GTK_LIST_BOX (list), detail_row (_ ("On This Computer"), host_path));
        return list;
}

static GtkWidget *
delete_dialog (CorralChatApproval *a, GtkWindow *parent)
{
        const CorralChatApprovalFile *file = corral_chat_approval_get_file (a);
        GFileType type = file ? file->type : G_FILE_TYPE_REGULAR;
        GtkWidget *d;

        if (type == G_FILE_TYPE_DIRECTORY)
                d = adw_message_dialog_new (parent, _ ("Delete This Folder?"),
                                            _ ("The assistant asks you to delete this empty "
                                               "folder for it."));
        else if (type == G_FILE_TYPE_SYMBOLIC_LINK)
                d = adw_message_dialog_new (parent, _ ("Delete This Link?"),
                                            _ ("The assistant asks you to delete this link for "
                                               "it. What the link points to stays."));
        else
                d = adw_message_dialog_new (parent, _ ("Delete This File?"),
                                            _ ("The assistant asks you to delete this file for "
                                               "it. Corral keeps a copy."));
        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (d), "deny", _ ("_Deny"), "allow",
                                          _ ("_Allow Once"), NULL);
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (d), "allow",
                                                    ADW_RESPONSE_DESTRUCTIVE);
        return d;
}

static GtkWidget *
network_dialog (CorralChatApproval *a, GtkWindow *parent)
{
        /* Translators: %s is a host name such as pypi.org */
        g_autofree char *heading =
                g_strdup_printf (_ ("Allow %s?"), corral_chat_approval_get_target (a));
        g_autofree char *body =
                g_strdup_printf (_ ("The assistant wants to reach %s, which your network "
                                    "settings do not allow."),
                                 corral_chat_approval_get_target (a));
        GtkWidget *d = adw_message_dialog_new (parent, heading, body);
        /* Somewhere that trusts whoever reaches it: no answer but no is suggested. */
        AdwResponseAppearance allow = corral_chat_approval_get_warning (a)
                                              ? ADW_RESPONSE_DESTRUCTIVE
                                              : ADW_RESPONSE_SUGGESTED;

        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (d), "deny", _ ("_Deny"), "always",
                                          _ ("A_lways"), "task", _ ("For This _Task"), NULL);
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (d), "task", allow);
        if (corral_chat_approval_get_warning (a))
                adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (d), "always",
                                                            ADW_RESPONSE_DESTRUCTIVE);
        return d;
}

static GtkWidget *
reason_widget (CorralChatApproval *a)
{
        const char *reason = corral_chat_approval_get_reason (a);
        GtkWidget *label;
        g_autofree char *text = NULL;

        if (!reason || !*reason)
                return NULL;
        /* Translators: %s is the assistant's own explanation, quoted */
        text = g_strdup_printf (_ ("The assistant says: “%s”"), reason);
        label = corral_ui_plain_label (text, FALSE);
        gtk_label_set_xalign (GTK_LABEL (label), 0.5f);
        gtk_label_set_justify (GTK_LABEL (label), GTK_JUSTIFY_CENTER);
        gtk_widget_add_css_class (label, "dim-label");
        return label;
}

/* Below the question: the file's details, a warning, the assistant's reason. */
static GtkWidget *
extra_widget (CorralChatApproval *a)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
        const CorralChatApprovalFile *file = corral_chat_approval_get_file (a);
        const char *warning = corral_chat_approval_get_warning (a);
        GtkWidget *reason = reason_widget (a);

        if (file)
                gtk_box_append (GTK_BOX (box), file_details (file));
        if (warning)
                gtk_box_append (GTK_BOX (box), corral_ui_warning_new (warning));
        if (reason)
                gtk_box_append (GTK_BOX (box), reason);
        return box;
}

static void
show_next_approval (CorralChatView *self)
{
        g_autoptr (CorralChatApproval) a = NULL;
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
        GtkWidget *d;

        if (self->dialog || !(a = g_queue_pop_head (&self->approvals)))
                return;
        if (corral_chat_approval_get_kind (a) == CORRAL_CHAT_APPROVAL_DELETE)
                d = delete_dialog (a, GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL);
        else
                d = network_dialog (a, GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL);
        adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (d), extra_widget (a));
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (d), "deny");
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (d), "deny");
        g_object_set_data_full (G_OBJECT (d), "approval", g_steal_pointer (&a),
                                (GDestroyNotify) corral_chat_approval_unref);
        g_signal_connect (d, "response", G_CALLBACK (on_dialog_response), self);
        g_signal_connect (d, "destroy", G_CALLBACK (on_dialog_destroy), self);
        self->dialog = d;
        gtk_window_present (GTK_WINDOW (d));
}

static void
on_approval_requested (CorralChatSource *source, CorralChatApproval *a, CorralChatView *self)
{
        g_queue_push_tail (&self->approvals, corral_chat_approval_ref (a));
        show_next_approval (self);
}

/* The entry ------------------------------------------------------------------------------------ */

static void
add_user_message (CorralChatView *self, const char *text)
{
        GtkWidget *label = corral_ui_plain_label (text, TRUE);

        gtk_widget_add_css_class (label, "chat-user");
        gtk_widget_set_halign (label, GTK_ALIGN_END);
        gtk_widget_set_margin_start (label, 48);
        end_reply (self);
        append_row (self, label);
}

/* Restoring -------------------------------------------------------------------------------------- */

void
corral_chat_view_clear (CorralChatView *self)
{
        GtkWidget *child;

        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        end_reply (self);
        g_string_truncate (self->reply, 0);
        g_hash_table_remove_all (self->cards);
        self->n_cards = 0;
        while ((child = gtk_widget_get_first_child (self->transcript)))
                gtk_box_remove (GTK_BOX (self->transcript), child);
        gtk_stack_set_visible_child_name (GTK_STACK (self->content_stack),
                                          self->source ? "empty" : "disconnected");
}

void
corral_chat_view_add_restored_user_message (CorralChatView *self, const char *text)
{
        g_autofree char *copy = NULL;

        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        g_return_if_fail (text != NULL);
        copy = g_strstrip (g_strdup (text));
        if (*copy)
                add_user_message (self, copy);
}

void
corral_chat_view_add_restored_reply (CorralChatView *self, const char *text)
{
        g_autofree char *shown = NULL;
        GtkWidget *label;

        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        g_return_if_fail (text != NULL);
        /* As on_text_delta shows a reply: without the model's leading blank lines. */
        shown = g_strstrip (g_strdup (text));
        if (!*shown)
                return;
        label = reply_label_new ();
        reply_label_set (label, shown);
        end_reply (self);
        append_row (self, label);
}

void
corral_chat_view_add_restored_tool (CorralChatView *self, CorralChatTool *tool)
{
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        g_return_if_fail (tool != NULL && tool->id != NULL);
        on_tool_started (NULL, tool, self);
}

void
corral_chat_view_add_notice (CorralChatView *self, const char *text)
{
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        g_return_if_fail (text != NULL);
        add_notice (self, text, FALSE);
}

void
corral_chat_view_send (CorralChatView *self, const char *text)
{
        g_autofree char *copy = g_strstrip (g_strdup (text));

        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        if (!self->source || self->busy || !*copy)
                return;
        add_user_message (self, copy);
        set_busy (self, TRUE);
        corral_chat_source_send (self->source, copy);
}

void
corral_chat_view_stop (CorralChatView *self)
{
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        if (self->source && self->busy)
                corral_chat_source_stop (self->source);
}

static void
on_send (CorralChatView *self)
{
        g_autofree char *text = g_strdup (gtk_editable_get_text (GTK_EDITABLE (self->entry)));

        if (!self->source || self->busy || !*g_strstrip (text))
                return;
        gtk_editable_set_text (GTK_EDITABLE (self->entry), "");
        corral_chat_view_send (self, text);
}

static void
corral_chat_view_dispose (GObject *object)
{
        CorralChatView *self = CORRAL_CHAT_VIEW (object);
        CorralChatApproval *a;

        g_clear_handle_id (&self->render_id, g_source_remove);
        while ((a = g_queue_pop_head (&self->approvals)))
                corral_chat_approval_unref (a);
        if (self->dialog) {
                GtkWidget *d = g_steal_pointer (&self->dialog);
                gtk_window_destroy (GTK_WINDOW (d));
        }
        if (self->signals)
                g_signal_group_set_target (self->signals, NULL);
        g_clear_object (&self->signals);
        g_clear_object (&self->source);
        g_clear_pointer (&self->cards, g_hash_table_unref);
        gtk_widget_dispose_template (GTK_WIDGET (self), CORRAL_TYPE_CHAT_VIEW);
        G_OBJECT_CLASS (corral_chat_view_parent_class)->dispose (object);
}

static void
corral_chat_view_finalize (GObject *object)
{
        CorralChatView *self = CORRAL_CHAT_VIEW (object);

        g_string_free (self->reply, TRUE);
        G_OBJECT_CLASS (corral_chat_view_parent_class)->finalize (object);
}

enum { SIGNAL_KEY_REQUESTED, SIGNAL_RETRY_REQUESTED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
on_key_clicked (CorralChatView *self)
{
        g_signal_emit (self, signals[SIGNAL_KEY_REQUESTED], 0);
}

static void
on_retry_clicked (CorralChatView *self)
{
        corral_chat_view_set_disconnected (self, _ ("Connecting to the Assistant…"), NULL, FALSE,
                                           FALSE);
        g_signal_emit (self, signals[SIGNAL_RETRY_REQUESTED], 0);
}

void
corral_chat_view_set_disconnected (CorralChatView *self,
                                   const char *title,
                                   const char *description,
                                   gboolean offer_key,
                                   gboolean offer_retry)
{
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        adw_status_page_set_title (ADW_STATUS_PAGE (self->disconnected_page), title);
        adw_status_page_set_description (ADW_STATUS_PAGE (self->disconnected_page), description);
        gtk_widget_set_visible (self->key_button, offer_key);
        gtk_widget_set_visible (self->retry_button, offer_retry);
        if (!self->source)
                gtk_stack_set_visible_child_name (GTK_STACK (self->content_stack), "disconnected");
}

static void
corral_chat_view_class_init (CorralChatViewClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_chat_view_dispose;
        G_OBJECT_CLASS (klass)->finalize = corral_chat_view_finalize;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        gtk_widget_class_set_css_name (widget_class, "chatview");
        gtk_widget_class_set_template_from_resource (widget_class,
                                                     "/org/corral/Corral/ui/corral-chat-view.ui");
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, toolbar_box);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, content_stack);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, scroller);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, transcript);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, entry);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, busy_spinner);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, send_button);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, stop_button);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, disconnected_page);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, key_button);
        gtk_widget_class_bind_template_child (widget_class, CorralChatView, retry_button);
        gtk_widget_class_bind_template_callback (widget_class, on_key_clicked);
        gtk_widget_class_bind_template_callback (widget_class, on_retry_clicked);
        gtk_widget_class_bind_template_callback (widget_class, on_send);
        gtk_widget_class_bind_template_callback (widget_class, corral_chat_view_stop);

        /* The person asks to add a model key (Preferences), or to connect again. */
        signals[SIGNAL_KEY_REQUESTED] =
                g_signal_new ("key-requested", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_RETRY_REQUESTED] =
                g_signal_new ("retry-requested", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_chat_view_init (CorralChatView *self)
{
        GtkAdjustment *adj;

        self->reply = g_string_new (NULL);
        self->cards = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        g_queue_init (&self->approvals);
        gtk_widget_init_template (GTK_WIDGET (self));
        adj = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (self->scroller));
        g_signal_connect (adj, "changed", G_CALLBACK (on_scroll_range_changed), self);
        g_signal_connect (adj, "value-changed", G_CALLBACK (on_scrolled), self);
        /* Until a source is set (the template's stack would show its first page). */
        gtk_stack_set_visible_child_name (GTK_STACK (self->content_stack), "disconnected");
        set_busy (self, FALSE);

        self->signals = g_signal_group_new (CORRAL_TYPE_CHAT_SOURCE);
        g_signal_group_connect (self->signals, "text-delta", G_CALLBACK (on_text_delta), self);
        g_signal_group_connect (self->signals, "reply-restarted", G_CALLBACK (on_reply_restarted),
                                self);
        g_signal_group_connect (self->signals, "tool-started", G_CALLBACK (on_tool_started), self);
        g_signal_group_connect (self->signals, "tool-finished", G_CALLBACK (on_tool_finished),
                                self);
        g_signal_group_connect (self->signals, "approval-requested",
                                G_CALLBACK (on_approval_requested), self);
        g_signal_group_connect (self->signals, "notice", G_CALLBACK (on_notice), self);
        g_signal_group_connect (self->signals, "task-finished", G_CALLBACK (on_task_finished),
                                self);
}

GtkWidget *
corral_chat_view_new (void)
{
        return g_object_new (CORRAL_TYPE_CHAT_VIEW, NULL);
}

void
corral_chat_view_set_source (CorralChatView *self, CorralChatSource *source)
{
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (self));
        g_return_if_fail (!source || CORRAL_IS_CHAT_SOURCE (source));

        if (!g_set_object (&self->source, source))
                return;
        g_signal_group_set_target (self->signals, source);
        if (!gtk_widget_get_first_child (self->transcript))
                gtk_stack_set_visible_child_name (GTK_STACK (self->content_stack),
                                                  source ? "empty" : "disconnected");
        set_busy (self, FALSE);
}

CorralChatSource *
corral_chat_view_get_source (CorralChatView *self)
{
        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), NULL);
        return self->source;
}

gboolean
corral_chat_view_get_busy (CorralChatView *self)
{
        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), FALSE);
        return self->busy;
}

GtkWidget *
corral_chat_view_get_approval_dialog (CorralChatView *self)
{
        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), NULL);
        return self->dialog;
}

const char *
corral_chat_view_get_last_reply (CorralChatView *self)
{
        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), NULL);
        return self->reply->str;
}

guint
corral_chat_view_get_n_tool_cards (CorralChatView *self)
{
        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), 0);
        return self->n_cards;
}

guint
corral_chat_view_count_tool_cards (CorralChatView *self, const char *state)
{
        GHashTableIter iter;
        gpointer card;
        guint n = 0;

        g_return_val_if_fail (CORRAL_IS_CHAT_VIEW (self), 0);
        g_hash_table_iter_init (&iter, self->cards);
        while (g_hash_table_iter_next (&iter, NULL, &card))
                n += g_strcmp0 (corral_tool_card_get_state (card), state) == 0;
        return n;
}
