/* corral-files-panel.c — files changed in this task.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-files-panel.h"

#include <glib/gi18n.h>

#include "corral-ui-util.h"

struct _CorralFilesPanel {
        GtkWidget parent_instance;

        GtkWidget *stack; /* "empty", "list" */
        GtkWidget *list;
        GHashTable *rows; /* vm path -> row (transfer none) */
};

G_DEFINE_FINAL_TYPE (CorralFilesPanel, corral_files_panel, GTK_TYPE_WIDGET)

static void
launch_uri (GtkWidget *widget, const char *path)
{
        g_autoptr (GFile) file = g_file_new_for_path (path);
        g_autofree char *uri = g_file_get_uri (file);
        GtkRoot *root = gtk_widget_get_root (widget);

        gtk_show_uri (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, uri, GDK_CURRENT_TIME);
}

static void
on_open (GtkButton *button, gpointer user_data)
{
        launch_uri (GTK_WIDGET (button), g_object_get_data (G_OBJECT (button), "host-path"));
}

static void
on_show_in_folder (GtkButton *button, gpointer user_data)
{
        g_autofree char *dir =
                g_path_get_dirname (g_object_get_data (G_OBJECT (button), "host-path"));

        launch_uri (GTK_WIDGET (button), dir);
}

static GtkWidget *
row_button (const char *icon, const char *a11y, const char *host_path, GCallback cb)
{
        GtkWidget *button = gtk_button_new_from_icon_name (icon);

        gtk_widget_add_css_class (button, "flat");
        gtk_widget_set_valign (button, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (button, a11y);
        g_object_set_data_full (G_OBJECT (button), "host-path", g_strdup (host_path), g_free);
        gtk_widget_set_sensitive (button, host_path != NULL);
        g_signal_connect (button, "clicked", cb, NULL);
        return button;
}

void
corral_files_panel_add (CorralFilesPanel *self, const char *vm_path, const char *host_path)
{
        GtkWidget *row = g_hash_table_lookup (self->rows, vm_path);
        g_autofree char *base = g_path_get_basename (vm_path);
        g_autofree char *escaped_base = g_markup_escape_text (base, -1);
        g_autofree char *escaped_path = g_markup_escape_text (vm_path, -1);
        /* Translators: %s is a file name */
        g_autofree char *open_a11y = g_strdup_printf (_ ("Open %s"), base);
        g_autofree char *show_a11y = g_strdup_printf (_ ("Show %s in its folder"), base);

        g_return_if_fail (CORRAL_IS_FILES_PANEL (self));
        if (row)
                gtk_list_box_remove (GTK_LIST_BOX (self->list), row);
        row = adw_action_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), escaped_base);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), escaped_path);
        adw_action_row_add_prefix (ADW_ACTION_ROW (row),
                                   gtk_image_new_from_icon_name ("document-edit-symbolic"));
        adw_action_row_add_suffix (
                ADW_ACTION_ROW (row),
                row_button ("document-open-symbolic", open_a11y, host_path, G_CALLBACK (on_open)));
        adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                                   row_button ("folder-open-symbolic", show_a11y, host_path,
                                               G_CALLBACK (on_show_in_folder)));
        gtk_list_box_prepend (GTK_LIST_BOX (self->list), row);
        g_hash_table_replace (self->rows, g_strdup (vm_path), row);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "list");
}

void
corral_files_panel_clear (CorralFilesPanel *self)
{
        GtkWidget *child;

        g_return_if_fail (CORRAL_IS_FILES_PANEL (self));
        while ((child = gtk_widget_get_first_child (self->list)))
                gtk_list_box_remove (GTK_LIST_BOX (self->list), child);
        g_hash_table_remove_all (self->rows);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "empty");
}

guint
corral_files_panel_get_n_files (CorralFilesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_FILES_PANEL (self), 0);
        return g_hash_table_size (self->rows);
}

static void
corral_files_panel_dispose (GObject *object)
{
        CorralFilesPanel *self = CORRAL_FILES_PANEL (object);

        g_clear_pointer (&self->stack, gtk_widget_unparent);
        g_clear_pointer (&self->rows, g_hash_table_unref);
        G_OBJECT_CLASS (corral_files_panel_parent_class)->dispose (object);
}

static void
corral_files_panel_class_init (CorralFilesPanelClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_files_panel_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
corral_files_panel_init (CorralFilesPanel *self)
{
        self->rows = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        self->stack = corral_ui_list_stack_new (
                "document-edit-symbolic", _ ("No Changes Yet"),
                _ ("Files the assistant changes in this task appear here."), _ ("Changed files"),
                &self->list);
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
}

GtkWidget *
corral_files_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_FILES_PANEL, NULL);
}
