/* corral-shares-panel.c — shared folders of the running task.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-shares-panel.h"

#include <glib/gi18n.h>
#include <string.h>

#include "corral-shares.h"
#include "corral-ui-util.h"

struct _CorralSharesPanel {
        GtkWidget parent_instance;

        char *vm_dir;
        GPtrArray *shares; /* (element-type CorralShare) as last loaded */
        GCancellable *cancellable;
        GtkWidget *page;
        GtkWidget *group;
        GtkWidget *list;
        GtkWidget *error_label;
        GtkWidget *add_button;
        GtkFileChooserNative *chooser;
        char *error;
        gboolean updating; /* filling the rows: ignore their signals */
};

G_DEFINE_FINAL_TYPE (CorralSharesPanel, corral_shares_panel, GTK_TYPE_WIDGET)

enum { SIGNAL_LOADED, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef enum { OP_LIST, OP_ADD, OP_SET_MODE, OP_REMOVE } ShareOp;

typedef struct {
        ShareOp op;
        char *vm_dir;
        char *name;
        char *path;
        FsMode mode;
} ShareCall;

static void
share_call_free (ShareCall *call)
{
        g_free (call->vm_dir);
        g_free (call->name);
        g_free (call->path);
        g_free (call);
}

/* Worker thread: the change, then the list as it is now. */
static gpointer
share_call_run (gpointer data, GCancellable *cancellable, GError **error)
{
        ShareCall *call = data;
        gboolean ok = TRUE;

        switch (call->op) {
        case OP_ADD:
                ok = corral_shares_add (call->vm_dir, call->path, call->mode, NULL, NULL, NULL,
                                        error);
                break;
        case OP_SET_MODE:
                ok = corral_shares_set_mode (call->vm_dir, call->name, call->mode, error);
                break;
        case OP_REMOVE:
                ok = corral_shares_remove (call->vm_dir, call->name, error);
                break;
        case OP_LIST:
        default:
                break;
        }
        if (!ok)
                return NULL;
        return corral_shares_list (call->vm_dir, error);
}

static void
show_error (CorralSharesPanel *self, const char *message)
{
        g_free (self->error);
        self->error = g_strdup (message);
        gtk_label_set_text (GTK_LABEL (self->error_label), message ? message : "");
        gtk_widget_set_visible (self->error_label, message != NULL);
}

static void
on_mode_selected (AdwComboRow *combo, GParamSpec *pspec, CorralSharesPanel *self)
{
        const char *name = g_object_get_data (G_OBJECT (combo), "share-name");

        if (!self->updating)
                corral_shares_panel_set_mode (self, name, adw_combo_row_get_selected (combo));
}

static void
on_remove_clicked (GtkButton *button, CorralSharesPanel *self)
{
        corral_shares_panel_remove (self, g_object_get_data (G_OBJECT (button), "share-name"));
}

/* Sharing the home folder or the whole computer: what the assistant sees, in words. */
static GtkWidget *
warning_row (const char *warning)
{
        GtkWidget *row = gtk_list_box_row_new ();
        GtkWidget *box = corral_ui_warning_new (warning);

        gtk_widget_set_margin_top (box, 12);
        gtk_widget_set_margin_bottom (box, 12);
        gtk_widget_set_margin_start (box, 12);
        gtk_widget_set_margin_end (box, 12);
        gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
        gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
        return row;
}

/* One share: its name and mode at a glance; the mode to change, the path inside, and a warning
 * for a folder that holds far more than a task needs. */
static GtkWidget *
share_row (CorralSharesPanel *self, CorralShare *share)
{
        GtkWidget *row = adw_expander_row_new ();
        const char *modes[] = { fs_mode_describe (FS_MODE_RO), fs_mode_describe (FS_MODE_RW),
                                fs_mode_describe (FS_MODE_RW_NODELETE), NULL };
        g_autoptr (GtkStringList) model = gtk_string_list_new (modes);
        GtkWidget *combo = adw_combo_row_new ();
        GtkWidget *path_row = adw_action_row_new ();
        GtkWidget *remove = gtk_button_new_from_icon_name ("user-trash-symbolic");
        /* Translators: %s is a shared folder's name */
        g_autofree char *mode_a11y =
                g_strdup_printf (_ ("What the assistant may do in %s"), share->name);
        g_autofree char *remove_a11y = g_strdup_printf (_ ("Stop sharing %s"), share->name);
        g_autofree char *escaped_path = g_markup_escape_text (share->path, -1);
        g_autofree char *escaped_name = g_markup_escape_text (share->name, -1);
        const char *warning = corral_ui_folder_warning (share->path);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), escaped_name);
        adw_expander_row_set_subtitle (ADW_EXPANDER_ROW (row), fs_mode_describe (share->mode));
        adw_expander_row_set_icon_name (ADW_EXPANDER_ROW (row), "folder-symbolic");

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (combo), _ ("The Assistant"));
        adw_combo_row_set_model (ADW_COMBO_ROW (combo), G_LIST_MODEL (model));
        adw_combo_row_set_selected (ADW_COMBO_ROW (combo), share->mode);
        gtk_accessible_update_property (GTK_ACCESSIBLE (combo), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        mode_a11y, -1);
        g_object_set_data_full (G_OBJECT (combo), "share-name", g_strdup (share->name), g_free);
        g_signal_connect (combo, "notify::selected", G_CALLBACK (on_mode_selected), self);
        adw_expander_row_add_row (ADW_EXPANDER_ROW (row), combo);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (path_row), _ ("On This Computer"));
        adw_action_row_set_subtitle (ADW_ACTION_ROW (path_row), escaped_path);
        adw_expander_row_add_row (ADW_EXPANDER_ROW (row), path_row);
        if (warning)
                adw_expander_row_add_row (ADW_EXPANDER_ROW (row), warning_row (warning));

        gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
        gtk_widget_add_css_class (remove, "flat");
        corral_ui_set_accessible_label (remove, remove_a11y);
        g_object_set_data_full (G_OBJECT (remove), "share-name", g_strdup (share->name), g_free);
        g_signal_connect (remove, "clicked", G_CALLBACK (on_remove_clicked), self);
        adw_expander_row_add_action (ADW_EXPANDER_ROW (row), remove);
        /* The first folder is the task's own: shown open; so is one with a warning. */
        adw_expander_row_set_expanded (ADW_EXPANDER_ROW (row),
                                       warning ||
                                               (self->shares && self->shares->pdata[0] == share));
        return row;
}

static void
fill_rows (CorralSharesPanel *self)
{
        GtkWidget *child;

        self->updating = TRUE;
        while ((child = gtk_widget_get_first_child (self->list)))
                gtk_list_box_remove (GTK_LIST_BOX (self->list), child);
        for (guint i = 0; self->shares && i < self->shares->len; i++)
                gtk_list_box_append (GTK_LIST_BOX (self->list),
                                     share_row (self, self->shares->pdata[i]));
        self->updating = FALSE;
}

static void
on_call_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralSharesPanel) self = user_data;
        g_autoptr (GError) error = NULL;
        GPtrArray *shares = corral_run_in_thread_finish (res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        show_error (self, error ? error->message : NULL);
        if (shares) {
                g_clear_pointer (&self->shares, g_ptr_array_unref);
                self->shares = shares;
        }
        fill_rows (self);
        g_signal_emit (self, signals[SIGNAL_LOADED], 0);
}

static void
run_call (CorralSharesPanel *self, ShareOp op, const char *name, const char *path, FsMode mode)
{
        ShareCall *call;

        if (!self->vm_dir)
                return;
        call = g_new0 (ShareCall, 1);
        call->op = op;
        call->vm_dir = g_strdup (self->vm_dir);
        call->name = g_strdup (name);
        call->path = g_strdup (path);
        call->mode = mode;
        corral_run_in_thread (share_call_run, call, (GDestroyNotify) share_call_free,
                              (GDestroyNotify) g_ptr_array_unref, self->cancellable, on_call_done,
                              g_object_ref (self));
}

void
corral_shares_panel_reload (CorralSharesPanel *self)
{
        g_return_if_fail (CORRAL_IS_SHARES_PANEL (self));
        run_call (self, OP_LIST, NULL, NULL, FS_MODE_RO);
}

void
corral_shares_panel_add (CorralSharesPanel *self, const char *path, FsMode mode)
{
        g_return_if_fail (CORRAL_IS_SHARES_PANEL (self));
        run_call (self, OP_ADD, NULL, path, mode);
}

void
corral_shares_panel_set_mode (CorralSharesPanel *self, const char *name, FsMode mode)
{
        g_return_if_fail (CORRAL_IS_SHARES_PANEL (self));
        run_call (self, OP_SET_MODE, name, NULL, mode);
}

void
corral_shares_panel_remove (CorralSharesPanel *self, const char *name)
{
        g_return_if_fail (CORRAL_IS_SHARES_PANEL (self));
        run_call (self, OP_REMOVE, name, NULL, FS_MODE_RO);
}

static void
on_chooser_response (GtkNativeDialog *dialog, int response, CorralSharesPanel *self)
{
        g_autoptr (GFile) file = NULL;
        g_autofree char *path = NULL;

        if (response == GTK_RESPONSE_ACCEPT &&
            (file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog))) &&
            (path = g_file_get_path (file)))
                /* A new folder starts read-only; the person opens it up from the row. */
                corral_shares_panel_add (self, path, FS_MODE_RO);
        g_clear_object (&self->chooser);
}

static void
on_add_clicked (CorralSharesPanel *self)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));

        if (self->chooser)
                return;
        self->chooser = gtk_file_chooser_native_new (
                _ ("Share Another Folder"), GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, _ ("_Share"), _ ("_Cancel"));
        gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
        g_signal_connect (self->chooser, "response", G_CALLBACK (on_chooser_response), self);
        gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

static void
corral_shares_panel_dispose (GObject *object)
{
        CorralSharesPanel *self = CORRAL_SHARES_PANEL (object);

        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        if (self->chooser)
                gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
        g_clear_object (&self->chooser);
        g_clear_pointer (&self->page, gtk_widget_unparent);
        g_clear_pointer (&self->shares, g_ptr_array_unref);
        g_clear_pointer (&self->vm_dir, g_free);
        g_clear_pointer (&self->error, g_free);
        G_OBJECT_CLASS (corral_shares_panel_parent_class)->dispose (object);
}

static void
corral_shares_panel_class_init (CorralSharesPanelClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_shares_panel_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        signals[SIGNAL_LOADED] =
                g_signal_new ("loaded", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 0);
}

static void
corral_shares_panel_init (CorralSharesPanel *self)
{
        self->cancellable = g_cancellable_new ();
        self->page = adw_preferences_page_new ();
        self->group = adw_preferences_group_new ();
        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (self->group), _ ("Shared Folders"));
        adw_preferences_group_set_description (
                ADW_PREFERENCES_GROUP (self->group),
                _ ("Changes apply at once, also while the assistant works."));
        self->add_button = gtk_button_new_from_icon_name ("list-add-symbolic");
        gtk_widget_add_css_class (self->add_button, "flat");
        corral_ui_set_accessible_label (self->add_button, _ ("Share another folder"));
        g_signal_connect_swapped (self->add_button, "clicked", G_CALLBACK (on_add_clicked), self);
        adw_preferences_group_set_header_suffix (ADW_PREFERENCES_GROUP (self->group),
                                                 self->add_button);
        self->list = gtk_list_box_new ();
        gtk_list_box_set_selection_mode (GTK_LIST_BOX (self->list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (self->list, "boxed-list");
        gtk_accessible_update_property (GTK_ACCESSIBLE (self->list), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        _ ("Shared folders"), -1);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->group), self->list);
        self->error_label = gtk_label_new (NULL);
        gtk_label_set_wrap (GTK_LABEL (self->error_label), TRUE);
        gtk_label_set_xalign (GTK_LABEL (self->error_label), 0.0f);
        gtk_widget_add_css_class (self->error_label, "error");
        gtk_widget_set_visible (self->error_label, FALSE);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->group), self->error_label);
        adw_preferences_page_add (ADW_PREFERENCES_PAGE (self->page),
                                  ADW_PREFERENCES_GROUP (self->group));
        gtk_widget_set_parent (self->page, GTK_WIDGET (self));
}

GtkWidget *
corral_shares_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_SHARES_PANEL, NULL);
}

void
corral_shares_panel_set_vm_dir (CorralSharesPanel *self, const char *vm_dir)
{
        g_return_if_fail (CORRAL_IS_SHARES_PANEL (self));
        g_free (self->vm_dir);
        self->vm_dir = g_strdup (vm_dir);
        g_clear_pointer (&self->shares, g_ptr_array_unref);
        fill_rows (self);
        gtk_widget_set_sensitive (self->add_button, vm_dir != NULL);
        corral_shares_panel_reload (self);
}

guint
corral_shares_panel_get_n_shares (CorralSharesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_SHARES_PANEL (self), 0);
        return self->shares ? self->shares->len : 0;
}

char *
corral_shares_panel_host_path (CorralSharesPanel *self, const char *vm_path)
{
        const char *rest;

        g_return_val_if_fail (CORRAL_IS_SHARES_PANEL (self), NULL);
        if (!vm_path || !g_str_has_prefix (vm_path, "/workspace/") || !self->shares)
                return NULL;
        rest = vm_path + strlen ("/workspace/");
        for (guint i = 0; i < self->shares->len; i++) {
                CorralShare *share = self->shares->pdata[i];
                gsize n = strlen (share->name);

                if (strncmp (rest, share->name, n) != 0 || (rest[n] != '/' && rest[n] != '\0'))
                        continue;
                /* Paths from the guest: no way out of the share. */
                if (strstr (rest + n, "/../") || g_str_has_suffix (rest + n, "/.."))
                        return NULL;
                return g_build_filename (share->path, rest + n, NULL);
        }
        return NULL;
}

const char *
corral_shares_panel_get_error (CorralSharesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_SHARES_PANEL (self), NULL);
        return self->error;
}
