/* corral-tasks-page.c — see corral-tasks-page.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-tasks-page.h"

#include <glib/gi18n.h>

#include "corral-task-record.h"
#include "corral-ui-util.h"

struct _CorralTasksPage {
        GtkWidget parent_instance;

        CorralLauncher *launcher;
        GCancellable *cancellable; /* the listing in progress */
        char *current; /* the task open in the window, or NULL */
        GPtrArray *tasks; /* CorralTaskInfo, as last listed */
        GtkWidget *dialog; /* the rename or remove question shown, or NULL */
        gboolean loaded;

        GtkWidget *toasts;
        GtkWidget *list;
        GtkWidget *new_button;
};

G_DEFINE_FINAL_TYPE (CorralTasksPage, corral_tasks_page, GTK_TYPE_WIDGET)

enum { SIGNAL_OPEN, SIGNAL_NEW_TASK, SIGNAL_LOADED, N_SIGNALS };
static guint signals[N_SIGNALS];

static const CorralTaskInfo *
find_task (CorralTasksPage *self, const char *vm_name)
{
        for (guint i = 0; self->tasks && i < self->tasks->len; i++)
                if (g_str_equal (((CorralTaskInfo *) self->tasks->pdata[i])->vm_name, vm_name))
                        return self->tasks->pdata[i];
        return NULL;
}

static void
toast (CorralTasksPage *self, const char *text)
{
        adw_toast_overlay_add_toast (ADW_TOAST_OVERLAY (self->toasts), adw_toast_new (text));
}

/* Rows ----------------------------------------------------------------------------------------- */

static void
on_row_activated (AdwActionRow *row, CorralTasksPage *self)
{
        g_autofree char *vm_name = g_strdup (g_object_get_data (G_OBJECT (row), "vm-name"));

        g_signal_emit (self, signals[SIGNAL_OPEN], 0, vm_name);
}

static GMenuModel *
row_menu (const CorralTaskInfo *task, gboolean current)
{
        GMenu *menu = g_menu_new ();
        g_autoptr (GMenuItem) rename = g_menu_item_new (_ ("_Rename…"), NULL);

        g_menu_item_set_action_and_target_value (rename, "task.rename",
                                                 g_variant_new_string (task->vm_name));
        g_menu_append_item (menu, rename);
        /* The open task goes on running: it is removed from here once another one is open. */
        if (!current) {
                g_autoptr (GMenuItem) remove = g_menu_item_new (_ ("R_emove…"), NULL);

                g_menu_item_set_action_and_target_value (remove, "task.remove",
                                                         g_variant_new_string (task->vm_name));
                g_menu_append_item (menu, remove);
        }
        return G_MENU_MODEL (menu);
}

/* A task: what the person calls it; its folder (when the title is not the folder's name),
 * when it started and how its workspace is. */
static GtkWidget *
task_row (CorralTasksPage *self, const CorralTaskInfo *task)
{
        gboolean current = g_strcmp0 (task->vm_name, self->current) == 0;
        GtkWidget *row = adw_action_row_new ();
        GtkWidget *menu_button = gtk_menu_button_new ();
        g_autoptr (GMenuModel) menu = row_menu (task, current);
        g_autoptr (GPtrArray) parts = g_ptr_array_new_with_free_func (g_free);
        g_autofree char *subtitle = NULL;
        g_autofree char *menu_label = NULL;

        if (task->named)
                g_ptr_array_add (parts, g_path_get_basename (task->folder));
        g_ptr_array_add (parts, corral_ui_format_when (task->created, TRUE));
        g_ptr_array_add (parts, g_strdup (current ? _ ("Open now") : task->state));
        g_ptr_array_add (parts, NULL);
        subtitle = g_strjoinv (" · ", (char **) parts->pdata);
        /* The person's own words: never read as markup. */
        adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), task->title);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        adw_action_row_set_title_lines (ADW_ACTION_ROW (row), 2);
        gtk_widget_set_tooltip_text (row, task->folder);
        g_object_set_data_full (G_OBJECT (row), "vm-name", g_strdup (task->vm_name), g_free);
        gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);

        gtk_menu_button_set_icon_name (GTK_MENU_BUTTON (menu_button), "view-more-symbolic");
        gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (menu_button), menu);
        gtk_widget_set_valign (menu_button, GTK_ALIGN_CENTER);
        gtk_widget_add_css_class (menu_button, "flat");
        menu_label = g_strdup_printf (_ ("More for “%s”"), task->title);
        corral_ui_set_accessible_label (menu_button, menu_label);
        adw_action_row_add_suffix (ADW_ACTION_ROW (row), menu_button);
        adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                                   gtk_image_new_from_icon_name ("go-next-symbolic"));
        g_signal_connect_object (row, "activated", G_CALLBACK (on_row_activated), self, 0);
        return row;
}

static void
clear_rows (CorralTasksPage *self)
{
        GtkWidget *child;

        while ((child = gtk_widget_get_first_child (self->list)))
                gtk_list_box_remove (GTK_LIST_BOX (self->list), child);
}

static void
show_tasks (CorralTasksPage *self)
{
        clear_rows (self);
        for (guint i = 0; self->tasks && i < self->tasks->len; i++)
                gtk_list_box_append (GTK_LIST_BOX (self->list),
                                     task_row (self, self->tasks->pdata[i]));
}

static void
on_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralTasksPage) self = user_data;
        g_autoptr (GError) error = NULL;
        GPtrArray *tasks =
                corral_launcher_list_tasks_finish (CORRAL_LAUNCHER (source), res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        g_clear_object (&self->cancellable);
        g_clear_pointer (&self->tasks, g_ptr_array_unref);
        self->tasks = tasks;
        self->loaded = TRUE;
        show_tasks (self);
        if (error) {
                GtkWidget *row = adw_action_row_new ();

                adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                               _ ("Your tasks could not be listed"));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), error->message);
                gtk_list_box_append (GTK_LIST_BOX (self->list), row);
        }
        g_signal_emit (self, signals[SIGNAL_LOADED], 0, corral_tasks_page_get_n_tasks (self));
}

void
corral_tasks_page_refresh (CorralTasksPage *self)
{
        g_return_if_fail (CORRAL_IS_TASKS_PAGE (self));
        if (!self->launcher)
                return;
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        self->cancellable = g_cancellable_new ();
        corral_launcher_list_tasks_async (self->launcher, self->cancellable, on_listed,
                                          g_object_ref (self));
}

void
corral_tasks_page_set_launcher (CorralTasksPage *self, CorralLauncher *launcher)
{
        g_return_if_fail (CORRAL_IS_TASKS_PAGE (self));
        g_set_object (&self->launcher, launcher);
        corral_tasks_page_refresh (self);
}

void
corral_tasks_page_set_current (CorralTasksPage *self, const char *vm_name)
{
        g_return_if_fail (CORRAL_IS_TASKS_PAGE (self));
        if (g_strcmp0 (self->current, vm_name) == 0)
                return;
        g_free (self->current);
        self->current = g_strdup (vm_name);
        show_tasks (self);
}

guint
corral_tasks_page_get_n_tasks (CorralTasksPage *self)
{
        g_return_val_if_fail (CORRAL_IS_TASKS_PAGE (self), 0);
        return self->tasks ? self->tasks->len : 0;
}

gboolean
corral_tasks_page_get_loaded (CorralTasksPage *self)
{
        g_return_val_if_fail (CORRAL_IS_TASKS_PAGE (self), FALSE);
        return self->loaded;
}

GtkWidget *
corral_tasks_page_get_row (CorralTasksPage *self, const char *vm_name)
{
        g_return_val_if_fail (CORRAL_IS_TASKS_PAGE (self), NULL);
        for (GtkWidget *row = gtk_widget_get_first_child (self->list); row;
             row = gtk_widget_get_next_sibling (row))
                if (g_strcmp0 (g_object_get_data (G_OBJECT (row), "vm-name"), vm_name) == 0)
                        return row;
        return NULL;
}

GtkWidget *
corral_tasks_page_get_dialog (CorralTasksPage *self)
{
        g_return_val_if_fail (CORRAL_IS_TASKS_PAGE (self), NULL);
        return self->dialog;
}

/* Renaming ------------------------------------------------------------------------------------- */

typedef struct {
        CorralTasksPage *self;
        char *vm_name;
        char *title;
} Rename;

static void
rename_free (Rename *r)
{
        g_object_unref (r->self);
        g_free (r->vm_name);
        g_free (r->title);
        g_free (r);
}

static gpointer
save_title (gpointer data, GCancellable *cancellable, GError **error)
{
        Rename *r = data;

        return corral_task_record_set_title (r->vm_name, r->title, FALSE, error)
                       ? GINT_TO_POINTER (TRUE)
                       : NULL;
}

static void
on_title_saved (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralTasksPage) self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_run_in_thread_finish (res, &error))
                toast (self, error->message);
        corral_tasks_page_refresh (self);
}

static void
forget_dialog (CorralTasksPage *self, GtkWidget *dialog)
{
        if (self->dialog == dialog)
                self->dialog = NULL;
}

static GtkWidget *
new_dialog (CorralTasksPage *self, const char *heading, const char *body)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
        GtkWidget *dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                    heading, body);

        if (self->dialog)
                gtk_window_destroy (GTK_WINDOW (self->dialog));
        self->dialog = dialog;
        g_signal_connect_object (dialog, "destroy", G_CALLBACK (forget_dialog), self,
                                 G_CONNECT_SWAPPED);
        adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "cancel", _ ("_Cancel"));
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        return dialog;
}

static void
on_rename_response (AdwMessageDialog *dialog, const char *response, CorralTasksPage *self)
{
        GtkWidget *entry = adw_message_dialog_get_extra_child (dialog);
        Rename *r;

        if (!g_str_equal (response, "rename"))
                return;
        r = g_new0 (Rename, 1);
        r->self = g_object_ref (self);
        r->vm_name = g_strdup (g_object_get_data (G_OBJECT (dialog), "vm-name"));
        r->title = g_strdup (gtk_editable_get_text (GTK_EDITABLE (entry)));
        corral_run_in_thread (save_title, r, (GDestroyNotify) rename_free, NULL, NULL,
                              on_title_saved, g_object_ref (self));
}

void
corral_tasks_page_ask_rename (CorralTasksPage *self, const char *vm_name)
{
        const CorralTaskInfo *task = find_task (self, vm_name);
        GtkWidget *dialog, *entry;

        g_return_if_fail (CORRAL_IS_TASKS_PAGE (self));
        if (!task)
                return;
        dialog = new_dialog (self, _ ("Rename Task"),
                             _ ("The name is only for you; the assistant does not see it."));
        entry = gtk_entry_new ();
        gtk_editable_set_text (GTK_EDITABLE (entry), task->named ? task->title : "");
        gtk_entry_set_placeholder_text (GTK_ENTRY (entry), task->title);
        gtk_entry_set_max_length (GTK_ENTRY (entry), CORRAL_TASK_RECORD_MAX_TITLE);
        gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
        corral_ui_set_accessible_label (entry, _ ("Task name"));
        adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), entry);
        adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "rename", _ ("_Rename"));
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "rename",
                                                    ADW_RESPONSE_SUGGESTED);
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "rename");
        g_object_set_data_full (G_OBJECT (dialog), "vm-name", g_strdup (vm_name), g_free);
        g_signal_connect_object (dialog, "response", G_CALLBACK (on_rename_response), self, 0);
        gtk_window_present (GTK_WINDOW (dialog));
        gtk_widget_grab_focus (entry);
}

/* Removing ------------------------------------------------------------------------------------- */

static void
on_removed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralTasksPage) self = user_data;
        g_autoptr (GError) error = NULL;

        if (corral_launcher_remove_task_finish (CORRAL_LAUNCHER (source), res, &error))
                toast (self, _ ("The task was removed; its folder is as it was"));
        else
                toast (self, error->message);
        corral_tasks_page_refresh (self);
}

static void
on_remove_response (AdwMessageDialog *dialog, const char *response, CorralTasksPage *self)
{
        if (!g_str_equal (response, "remove") || !self->launcher)
                return;
        corral_launcher_remove_task_async (self->launcher,
                                           g_object_get_data (G_OBJECT (dialog), "vm-name"), NULL,
                                           on_removed, g_object_ref (self));
}

void
corral_tasks_page_ask_remove (CorralTasksPage *self, const char *vm_name)
{
        const CorralTaskInfo *task = find_task (self, vm_name);
        g_autofree char *heading = NULL, *body = NULL, *folder = NULL;
        GtkWidget *dialog;

        g_return_if_fail (CORRAL_IS_TASKS_PAGE (self));
        if (!task || g_strcmp0 (vm_name, self->current) == 0)
                return;
        folder = g_filename_display_name (task->folder);
        heading = g_strdup_printf (_ ("Remove “%s”?"), task->title);
        body = g_strdup_printf (_ ("Its workspace and the conversation with the assistant are "
                                   "removed. The files in %s stay as they are."),
                                folder);
        dialog = new_dialog (self, heading, body);
        adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "remove", _ ("_Remove"));
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "remove",
                                                    ADW_RESPONSE_DESTRUCTIVE);
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        g_object_set_data_full (G_OBJECT (dialog), "vm-name", g_strdup (vm_name), g_free);
        g_signal_connect_object (dialog, "response", G_CALLBACK (on_remove_response), self, 0);
        gtk_window_present (GTK_WINDOW (dialog));
}

/* The page ------------------------------------------------------------------------------------- */

static void
rename_action (GtkWidget *widget, const char *action, GVariant *param)
{
        corral_tasks_page_ask_rename (CORRAL_TASKS_PAGE (widget),
                                      g_variant_get_string (param, NULL));
}

static void
remove_action (GtkWidget *widget, const char *action, GVariant *param)
{
        corral_tasks_page_ask_remove (CORRAL_TASKS_PAGE (widget),
                                      g_variant_get_string (param, NULL));
}

static void
on_new_clicked (CorralTasksPage *self)
{
        g_signal_emit (self, signals[SIGNAL_NEW_TASK], 0);
}

static void
corral_tasks_page_dispose (GObject *object)
{
        CorralTasksPage *self = CORRAL_TASKS_PAGE (object);

        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        g_clear_object (&self->launcher);
        g_clear_pointer (&self->current, g_free);
        g_clear_pointer (&self->tasks, g_ptr_array_unref);
        if (self->dialog)
                gtk_window_destroy (GTK_WINDOW (g_steal_pointer (&self->dialog)));
        gtk_widget_dispose_template (GTK_WIDGET (object), CORRAL_TYPE_TASKS_PAGE);
        G_OBJECT_CLASS (corral_tasks_page_parent_class)->dispose (object);
}

static void
corral_tasks_page_class_init (CorralTasksPageClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_tasks_page_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        gtk_widget_class_set_template_from_resource (widget_class,
                                                     "/org/corral/Corral/ui/corral-tasks-page.ui");
        gtk_widget_class_bind_template_child (widget_class, CorralTasksPage, toasts);
        gtk_widget_class_bind_template_child (widget_class, CorralTasksPage, list);
        gtk_widget_class_bind_template_child (widget_class, CorralTasksPage, new_button);
        gtk_widget_class_bind_template_callback (widget_class, on_new_clicked);
        gtk_widget_class_install_action (widget_class, "task.rename", "s", rename_action);
        gtk_widget_class_install_action (widget_class, "task.remove", "s", remove_action);

        signals[SIGNAL_OPEN] = g_signal_new ("open", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                             0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_NEW_TASK] =
                g_signal_new ("new-task", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_LOADED] =
                g_signal_new ("loaded", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 1, G_TYPE_UINT);
}

static void
corral_tasks_page_init (CorralTasksPage *self)
{
        gtk_widget_init_template (GTK_WIDGET (self));
}
