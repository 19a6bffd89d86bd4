/* corral-first-run.c — welcome, provider, folder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-first-run.h"

#include <glib/gi18n.h>

#include "corral-secret-store.h"
#include "corral-ui-util.h"

struct _CorralFirstRun {
        GtkWidget parent_instance;

        GSettings *settings;
        GCancellable *cancellable;
        GtkWidget *stack;

        GtkWidget *anthropic_check;
        GtkWidget *openai_check;
        GtkWidget *base_url_row;
        GtkWidget *key_row;
        GtkWidget *provider_error;
        GtkWidget *provider_continue;
        GtkWidget *provider_spinner;

        char *folder;
        GtkWidget *folder_row;
        GtkWidget *folder_warning; /* a row: what sharing the home folder or "/" means */
        GtkWidget *mode_checks[3]; /* by FsMode */
        GtkWidget *start_button;
        GtkWidget *choose_button;
        GtkWidget *welcome_button;
        GtkFileChooserNative *chooser;
};

G_DEFINE_FINAL_TYPE (CorralFirstRun, corral_first_run, GTK_TYPE_WIDGET)

enum { SIGNAL_START, N_SIGNALS };
static guint signals[N_SIGNALS];

static GtkWidget *
pill_button (const char *label, gboolean suggested)
{
        GtkWidget *button = gtk_button_new_with_mnemonic (label);

        gtk_widget_add_css_class (button, "pill");
        if (suggested)
                gtk_widget_add_css_class (button, "suggested-action");
        gtk_widget_set_halign (button, GTK_ALIGN_CENTER);
        return button;
}

static GtkWidget *
step_page (const char *icon, const char *title, const char *description, GtkWidget *child)
{
        GtkWidget *page = adw_status_page_new ();
        GtkWidget *clamp = adw_clamp_new ();

        adw_status_page_set_icon_name (ADW_STATUS_PAGE (page), icon);
        adw_status_page_set_title (ADW_STATUS_PAGE (page), title);
        adw_status_page_set_description (ADW_STATUS_PAGE (page), description);
        adw_clamp_set_maximum_size (ADW_CLAMP (clamp), 520);
        adw_clamp_set_child (ADW_CLAMP (clamp), child);
        adw_status_page_set_child (ADW_STATUS_PAGE (page), clamp);
        return page;
}

/* Welcome ------------------------------------------------------------------------------------- */

static void
on_welcome_clicked (CorralFirstRun *self)
{
        corral_first_run_show_step (self, "provider");
}

static GtkWidget *
build_welcome (CorralFirstRun *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
        GtkWidget *button = pill_button (_ ("_Get Started"), TRUE);

        self->welcome_button = button;
        g_signal_connect_swapped (button, "clicked", G_CALLBACK (on_welcome_clicked), self);
        gtk_box_append (GTK_BOX (box), button);
        return step_page ("org.corral.Corral", _ ("Welcome to Corral"),
                          _ ("Corral lets an AI assistant work on one folder you choose, inside "
                             "a safe workspace that cannot reach the rest of your computer."),
                          box);
}

/* Provider ------------------------------------------------------------------------------------ */

static void
provider_set_busy (CorralFirstRun *self, gboolean busy)
{
        gtk_widget_set_sensitive (self->provider_continue, !busy);
        gtk_widget_set_visible (self->provider_spinner, busy);
        gtk_spinner_set_spinning (GTK_SPINNER (self->provider_spinner), busy);
}

static void
provider_error (CorralFirstRun *self, const char *message)
{
        gtk_label_set_text (GTK_LABEL (self->provider_error), message);
        gtk_widget_set_visible (self->provider_error, message != NULL);
}

static gboolean
is_openai (CorralFirstRun *self)
{
        return gtk_check_button_get_active (GTK_CHECK_BUTTON (self->openai_check));
}

static void
on_provider_toggled (CorralFirstRun *self)
{
        gtk_widget_set_visible (self->base_url_row, is_openai (self));
        /* What was wrong was about the other provider. */
        provider_error (self, NULL);
}

static void
on_key_stored (GObject *source, GAsyncResult *res, gpointer user_data)
{
        CorralFirstRun *self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_secret_store_set_finish (res, &error)) {
                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        return;
                provider_set_busy (self, FALSE);
                provider_error (self, error->message);
                return;
        }
        provider_set_busy (self, FALSE);
        /* The key is in the keychain now; it is never shown again. */
        gtk_editable_set_text (GTK_EDITABLE (self->key_row), "");
        corral_first_run_show_step (self, "folder");
}

/* The host the key may be sent to: the provider's API host, or the base URL's host. */
static char *
key_host (CorralFirstRun *self, GError **error)
{
        const char *url = gtk_editable_get_text (GTK_EDITABLE (self->base_url_row));
        g_autoptr (GUri) uri = NULL;

        if (!is_openai (self))
                return g_strdup ("api.anthropic.com");
        if (!*url)
                return g_strdup ("api.openai.com");
        if (!(uri = g_uri_parse (url, G_URI_FLAGS_NONE, error)) || !g_uri_get_host (uri)) {
                g_clear_error (error);
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("The server address must look like https://host:port/v1"));
                return NULL;
        }
        return g_strdup (g_uri_get_host (uri));
}

static void
on_provider_continue (CorralFirstRun *self)
{
        const char *key = gtk_editable_get_text (GTK_EDITABLE (self->key_row));
        const char *url = gtk_editable_get_text (GTK_EDITABLE (self->base_url_row));
        g_autoptr (GError) error = NULL;
        g_autofree char *host = key_host (self, &error);
        g_autoptr (CorralSecretInfo) info = NULL;
        const char *hosts[2] = { host, NULL };

        provider_error (self, NULL);
        if (!host) {
                provider_error (self, error->message);
                return;
        }
        g_settings_set_string (self->settings, "provider",
                               is_openai (self) ? "openai" : "anthropic");
        g_settings_set_string (self->settings, "base-url", is_openai (self) ? url : "");
        if (!*key) {
                /* Local OpenAI-compatible servers need no key. */
                if (is_openai (self) && *url) {
                        corral_first_run_show_step (self, "folder");
                        return;
                }
                provider_error (self, _ ("Enter the API key from your provider’s website."));
                return;
        }
        info = corral_secret_info_new (is_openai (self) ? "openai" : "anthropic", hosts,
                                       is_openai (self) ? "authorization" : "x-api-key",
                                       is_openai (self) ? "Bearer {}" : "{}", &error);
        if (!info) {
                provider_error (self, error->message);
                return;
        }
        provider_set_busy (self, TRUE);
        corral_secret_store_set_async (info, key, self->cancellable, on_key_stored, self);
}

static void
on_provider_activated (CorralFirstRun *self)
{
        /* Not while a key is being saved (the button is insensitive then). */
        if (gtk_widget_is_sensitive (self->provider_continue))
                on_provider_continue (self);
}

static GtkWidget *
radio_row (const char *title, const char *subtitle, GtkWidget **ret_check, GtkWidget *group)
{
        GtkWidget *row = adw_action_row_new ();
        GtkWidget *check = gtk_check_button_new ();

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        if (subtitle)
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        if (group)
                gtk_check_button_set_group (GTK_CHECK_BUTTON (check), GTK_CHECK_BUTTON (group));
        gtk_widget_set_valign (check, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (check, title);
        adw_action_row_add_prefix (ADW_ACTION_ROW (row), check);
        adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), check);
        *ret_check = check;
        return row;
}

static GtkWidget *
build_provider (CorralFirstRun *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 18);
        GtkWidget *list = gtk_list_box_new ();
        GtkWidget *buttons = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);

        gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (list, "boxed-list");
        gtk_list_box_append (GTK_LIST_BOX (list),
                             radio_row (_ ("Anthropic"), _ ("Claude models, with an API key"),
                                        &self->anthropic_check, NULL));
        gtk_list_box_append (GTK_LIST_BOX (list),
                             radio_row (_ ("OpenAI or Compatible Server"),
                                        _ ("OpenAI, or a local server such as Ollama"),
                                        &self->openai_check, self->anthropic_check));
        self->base_url_row = adw_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->base_url_row),
                                       _ ("Server Address (optional)"));
        gtk_list_box_append (GTK_LIST_BOX (list), self->base_url_row);
        self->key_row = adw_password_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->key_row), _ ("API Key"));
        gtk_list_box_append (GTK_LIST_BOX (list), self->key_row);
        g_signal_connect_swapped (self->openai_check, "toggled", G_CALLBACK (on_provider_toggled),
                                  self);
        /* Enter in either field does what Continue does. */
        g_signal_connect_swapped (self->key_row, "entry-activated",
                                  G_CALLBACK (on_provider_activated), self);
        g_signal_connect_swapped (self->base_url_row, "entry-activated",
                                  G_CALLBACK (on_provider_activated), self);

        self->provider_error = gtk_label_new (NULL);
        gtk_label_set_wrap (GTK_LABEL (self->provider_error), TRUE);
        gtk_widget_add_css_class (self->provider_error, "error");
        gtk_widget_set_visible (self->provider_error, FALSE);

        self->provider_continue = pill_button (_ ("_Continue"), TRUE);
        g_signal_connect_swapped (self->provider_continue, "clicked",
                                  G_CALLBACK (on_provider_continue), self);
        self->provider_spinner = gtk_spinner_new ();
        corral_ui_set_accessible_label (self->provider_spinner, _ ("Saving the key"));
        gtk_widget_set_visible (self->provider_spinner, FALSE);
        gtk_widget_set_halign (buttons, GTK_ALIGN_CENTER);
        gtk_box_append (GTK_BOX (buttons), self->provider_continue);
        gtk_box_append (GTK_BOX (buttons), self->provider_spinner);

        gtk_box_append (GTK_BOX (box), list);
        gtk_box_append (GTK_BOX (box), self->provider_error);
        gtk_box_append (GTK_BOX (box), buttons);
        return step_page ("dialog-password-symbolic", _ ("Connect a Model"),
                          _ ("The key is kept in your keychain. Corral never shows it again and "
                             "the workspace never sees it."),
                          box);
}

/* Folder -------------------------------------------------------------------------------------- */

static void
update_start (CorralFirstRun *self)
{
        gtk_widget_set_sensitive (self->start_button, self->folder != NULL);
}

/* Sharing the home folder or the whole computer is allowed; the person is told plainly what
 * the assistant will see. */
static void
update_folder_warning (CorralFirstRun *self)
{
        const char *warning = self->folder ? corral_ui_folder_warning (self->folder) : NULL;
        GtkWidget *box = warning ? corral_ui_warning_new (warning) : NULL;

        if (box) {
                gtk_widget_set_margin_top (box, 12);
                gtk_widget_set_margin_bottom (box, 12);
                gtk_widget_set_margin_start (box, 12);
                gtk_widget_set_margin_end (box, 12);
        }
        gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (self->folder_warning), box);
        gtk_widget_set_visible (self->folder_warning, warning != NULL);
}

static void
on_chooser_response (GtkNativeDialog *dialog, int response, CorralFirstRun *self)
{
        g_autoptr (GFile) file = NULL;
        g_autofree char *path = NULL;

        if (response == GTK_RESPONSE_ACCEPT &&
            (file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog))) &&
            (path = g_file_get_path (file)))
                corral_first_run_set_folder (self, path);
        g_clear_object (&self->chooser);
}

static void
on_choose_folder (CorralFirstRun *self)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));

        if (self->chooser)
                return;
        self->chooser = gtk_file_chooser_native_new (
                _ ("Choose a Folder to Share"), GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, _ ("_Share"), _ ("_Cancel"));
        gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
        g_signal_connect (self->chooser, "response", G_CALLBACK (on_chooser_response), self);
        gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

static void
on_start (CorralFirstRun *self)
{
        if (!self->folder)
                return;
        g_settings_set_string (self->settings, "last-folder", self->folder);
        g_settings_set_string (self->settings, "last-mode",
                               fs_mode_to_string (corral_first_run_get_mode (self)));
        g_settings_set_boolean (self->settings, "first-run-done", TRUE);
        g_signal_emit (self, signals[SIGNAL_START], 0);
}

static GtkWidget *
build_folder (CorralFirstRun *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 18);
        GtkWidget *folder_list = gtk_list_box_new ();
        GtkWidget *mode_group = adw_preferences_group_new ();
        GtkWidget *choose = gtk_button_new_with_mnemonic (_ ("_Choose…"));
        static const FsMode modes[] = { FS_MODE_RO, FS_MODE_RW, FS_MODE_RW_NODELETE };

        self->choose_button = choose;

        gtk_list_box_set_selection_mode (GTK_LIST_BOX (folder_list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (folder_list, "boxed-list");
        self->folder_row = adw_action_row_new ();
        /* The subtitle is a folder's path: plain text, never markup. */
        adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (self->folder_row), FALSE);
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->folder_row), _ ("Folder"));
        adw_action_row_set_subtitle (ADW_ACTION_ROW (self->folder_row), _ ("None chosen yet"));
        adw_action_row_add_prefix (ADW_ACTION_ROW (self->folder_row),
                                   gtk_image_new_from_icon_name ("folder-symbolic"));
        gtk_widget_set_valign (choose, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (choose, _ ("Choose a folder to share"));
        g_signal_connect_swapped (choose, "clicked", G_CALLBACK (on_choose_folder), self);
        adw_action_row_add_suffix (ADW_ACTION_ROW (self->folder_row), choose);
        adw_action_row_set_activatable_widget (ADW_ACTION_ROW (self->folder_row), choose);
        gtk_list_box_append (GTK_LIST_BOX (folder_list), self->folder_row);

        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (mode_group),
                                         _ ("What May the Assistant Do?"));
        for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (mode_group),
                                           radio_row (fs_mode_describe (modes[i]),
                                                      fs_mode_explain (modes[i]),
                                                      &self->mode_checks[modes[i]],
                                                      i ? self->mode_checks[modes[0]] : NULL));

        self->start_button = pill_button (_ ("_Start"), TRUE);
        corral_ui_set_accessible_label (self->start_button, _ ("Start the task"));
        g_signal_connect_swapped (self->start_button, "clicked", G_CALLBACK (on_start), self);

        /* Below the folder, in the same list: what sharing it means, when it is a lot. */
        self->folder_warning = gtk_list_box_row_new ();
        gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (self->folder_warning), FALSE);
        gtk_widget_set_visible (self->folder_warning, FALSE);
        gtk_list_box_append (GTK_LIST_BOX (folder_list), self->folder_warning);
        gtk_box_append (GTK_BOX (box), folder_list);
        gtk_box_append (GTK_BOX (box), mode_group);
        gtk_box_append (GTK_BOX (box), self->start_button);
        return step_page ("folder-symbolic", _ ("Choose a Folder"),
                          _ ("The assistant sees only this folder, and only in the way you "
                             "allow."),
                          box);
}

/* The widget ---------------------------------------------------------------------------------- */

/* Each step starts with the keyboard where the person goes next: Get Started, the key, the
 * folder (or Start once one is chosen). */
static void
focus_step (CorralFirstRun *self)
{
        const char *step = gtk_stack_get_visible_child_name (GTK_STACK (self->stack));
        GtkWidget *target = NULL;

        if (g_strcmp0 (step, "welcome") == 0)
                target = self->welcome_button;
        else if (g_strcmp0 (step, "provider") == 0)
                target = self->key_row;
        else if (g_strcmp0 (step, "folder") == 0)
                target = self->folder ? self->start_button : self->choose_button;
        if (target && gtk_widget_get_mapped (GTK_WIDGET (self)))
                gtk_widget_grab_focus (target);
}

static void
corral_first_run_dispose (GObject *object)
{
        CorralFirstRun *self = CORRAL_FIRST_RUN (object);

        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        if (self->chooser)
                gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
        g_clear_object (&self->chooser);
        g_clear_pointer (&self->stack, gtk_widget_unparent);
        g_clear_object (&self->settings);
        g_clear_pointer (&self->folder, g_free);
        G_OBJECT_CLASS (corral_first_run_parent_class)->dispose (object);
}

static void
corral_first_run_class_init (CorralFirstRunClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_first_run_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        signals[SIGNAL_START] = g_signal_new ("start", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                              0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_first_run_init (CorralFirstRun *self)
{
        self->cancellable = g_cancellable_new ();
        self->stack = gtk_stack_new ();
        gtk_stack_set_transition_type (GTK_STACK (self->stack),
                                       GTK_STACK_TRANSITION_TYPE_SLIDE_LEFT_RIGHT);
        gtk_stack_add_named (GTK_STACK (self->stack), build_welcome (self), "welcome");
        gtk_stack_add_named (GTK_STACK (self->stack), build_provider (self), "provider");
        gtk_stack_add_named (GTK_STACK (self->stack), build_folder (self), "folder");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
        g_signal_connect (self, "map", G_CALLBACK (focus_step), NULL);
}

GtkWidget *
corral_first_run_new (GSettings *settings)
{
        CorralFirstRun *self = g_object_new (CORRAL_TYPE_FIRST_RUN, NULL);
        g_autofree char *last = NULL;
        FsMode mode = FS_MODE_RW_NODELETE;
        g_autofree char *mode_s = NULL;
        g_autofree char *provider = g_settings_get_string (settings, "provider");

        self->settings = g_object_ref (settings);

        gtk_check_button_set_active (GTK_CHECK_BUTTON (g_str_equal (provider, "openai")
                                                               ? self->openai_check
                                                               : self->anthropic_check),
                                     TRUE);
        on_provider_toggled (self);
        mode_s = g_settings_get_string (settings, "last-mode");
        fs_mode_parse (mode_s, &mode);
        corral_first_run_set_mode (self, mode);
        last = g_settings_get_string (settings, "last-folder");
        if (*last && g_file_test (last, G_FILE_TEST_IS_DIR))
                corral_first_run_set_folder (self, last);
        update_start (self);
        return GTK_WIDGET (self);
}

void
corral_first_run_show_step (CorralFirstRun *self, const char *step)
{
        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), step);
        focus_step (self);
}

const char *
corral_first_run_get_step (CorralFirstRun *self)
{
        g_return_val_if_fail (CORRAL_IS_FIRST_RUN (self), NULL);
        return gtk_stack_get_visible_child_name (GTK_STACK (self->stack));
}

void
corral_first_run_set_folder (CorralFirstRun *self, const char *path)
{
        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));

        g_free (self->folder);
        self->folder = g_strdup (path);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (self->folder_row),
                                     path ? path : _ ("None chosen yet"));
        update_folder_warning (self);
        update_start (self);
}

const char *
corral_first_run_get_folder (CorralFirstRun *self)
{
        g_return_val_if_fail (CORRAL_IS_FIRST_RUN (self), NULL);
        return self->folder;
}

void
corral_first_run_set_mode (CorralFirstRun *self, FsMode mode)
{
        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));
        g_return_if_fail (mode <= FS_MODE_RW_NODELETE);
        gtk_check_button_set_active (GTK_CHECK_BUTTON (self->mode_checks[mode]), TRUE);
}

FsMode
corral_first_run_get_mode (CorralFirstRun *self)
{
        for (FsMode m = FS_MODE_RO; m <= FS_MODE_RW_NODELETE; m++)
                if (gtk_check_button_get_active (GTK_CHECK_BUTTON (self->mode_checks[m])))
                        return m;
        return FS_MODE_RW_NODELETE;
}
