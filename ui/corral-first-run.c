/* corral-first-run.c — welcome, provider, folder.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-first-run.h"

#include <glib/gi18n.h>
#include <stdlib.h>

#include "corral-llm.h"
#include "corral-policy.h"
#include "corral-secret-store.h"
#include "corral-task-start.h"
#include "corral-thread.h"
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
        GtkWidget *policy_warning; /* a row: the policy that stops every start */
        char *rules_for; /* the folder the organisation's rules were last read for */
        gboolean folder_refused; /* the organisation does not let it be shared */
        GtkWidget *mode_group;
        GtkWidget *mode_checks[3]; /* by FsMode */
        GtkWidget *computer_row; /* computer use for this task: off until turned on */
        GtkWidget *computer_switch;
        GtkWidget *start_button;
        GtkWidget *choose_button;
        GtkWidget *welcome_button;
        GtkFileChooserNative *chooser;
};

G_DEFINE_FINAL_TYPE (CorralFirstRun, corral_first_run, GTK_TYPE_WIDGET)

enum { SIGNAL_START, SIGNAL_STEP_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* Welcome ------------------------------------------------------------------------------------- */

static void
on_welcome_clicked (CorralFirstRun *self)
{
        corral_first_run_show_step (self, "provider");
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

/* A key entered, on its way to the keychain. */
typedef struct {
        CorralFirstRun *self; /* unowned: the check is cancelled with self->cancellable */
        CorralSecretInfo *info;
        char *key;
} KeyCheck;

static void
key_check_free (KeyCheck *k)
{
        corral_secret_info_free (k->info);
        corral_llm_api_key_free (k->key);
        g_free (k);
}

static void
on_key_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        KeyCheck *k = user_data;
        CorralFirstRun *self = k->self;
        g_autoptr (GError) error = NULL;

        if (!corral_llm_provider_check_key_finish (CORRAL_LLM_PROVIDER (source), res, &error)) {
                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                        key_check_free (k);
                        return;
                }
                if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH)) {
                        provider_set_busy (self, FALSE);
                        provider_error (self, corral_ui_key_refused_text ());
                        gtk_widget_grab_focus (self->key_row);
                        key_check_free (k);
                        return;
                }
                /* Not a refused key: the provider could not be asked (offline, a server error).
                 * The key is kept; the chat says so if the provider refuses it later. */
                g_message ("The key could not be checked now: %s", error->message);
        }
        corral_secret_store_set_async (k->info, k->key, self->cancellable, on_key_stored, self);
        key_check_free (k);
}

/* The key is checked with one cheap request (the provider's list of models) before it is
 * stored: a mistyped key is said here, not in the first task. Takes info. */
static void
check_then_store (CorralFirstRun *self, CorralSecretInfo *info, const char *key)
{
        CorralLlmProviderKind kind =
                is_openai (self) ? CORRAL_LLM_PROVIDER_OPENAI : CORRAL_LLM_PROVIDER_ANTHROPIC;
        const char *url = gtk_editable_get_text (GTK_EDITABLE (self->base_url_row));
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmProvider) provider = corral_ui_key_checker_new (kind, url, key, &error);
        KeyCheck *k;

        if (!provider) {
                corral_secret_info_free (info);
                provider_error (self, error->message);
                return;
        }
        k = g_new0 (KeyCheck, 1);
        k->self = self;
        k->info = info;
        k->key = g_strdup (key);
        provider_set_busy (self, TRUE);
        corral_llm_provider_check_key_async (provider, self->cancellable, on_key_checked, k);
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
        check_then_store (self, g_steal_pointer (&info), key);
}

static void
on_provider_activated (CorralFirstRun *self)
{
        /* Not while a key is being saved (the button is insensitive then). */
        if (gtk_widget_is_sensitive (self->provider_continue))
                on_provider_continue (self);
}

/* Folder -------------------------------------------------------------------------------------- */

static void
update_start (CorralFirstRun *self)
{
        gtk_widget_set_sensitive (self->start_button,
                                  self->folder != NULL && !self->folder_refused);
}

/* A damaged managed policy stops every start (SECURITY.md M1): said on the folder step before
 * the person chooses anything, with the file, the line and who can fix it. Read again each
 * time the step is shown, so that a fixed policy clears it. */
static gpointer
policy_check (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_task_check_managed_policy (error) ? GINT_TO_POINTER (TRUE) : NULL;
}

static void
on_policy_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralFirstRun) self = user_data;
        g_autoptr (GError) error = NULL;
        GtkWidget *box = NULL;

        if ((!corral_run_in_thread_finish (res, &error) &&
             g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) ||
            !self->policy_warning)
                return; /* the window went away meanwhile */
        if (error) {
                g_autofree char *text = g_strdup_printf (
                        _ ("No task can start until your organisation’s policy is fixed. %s"),
                        error->message);

                box = corral_ui_warning_new (text);
                gtk_widget_set_margin_top (box, 12);
                gtk_widget_set_margin_bottom (box, 12);
                gtk_widget_set_margin_start (box, 12);
                gtk_widget_set_margin_end (box, 12);
        }
        gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (self->policy_warning), box);
        gtk_widget_set_visible (self->policy_warning, error != NULL);
}

static void
check_policy (CorralFirstRun *self)
{
        corral_run_in_thread (policy_check, NULL, NULL, NULL, self->cancellable, on_policy_checked,
                              g_object_ref (self));
}

/* What the organisation allows for the chosen folder (SECURITY.md M2), said on the step: the
 * modes beyond its widest are greyed out, with the reason; a folder it does not let be shared
 * at all says so. The task service decides again at Start. */
static void update_folder_warning (CorralFirstRun *self, const char *refused);

typedef struct {
        gboolean shareable;
        FsMode max_mode;
        char *why; /* why it cannot be shared */
        char *computer_refused; /* why computer use cannot be turned on */
} FolderRules;

static void
folder_rules_free (FolderRules *r)
{
        g_free (r->why);
        g_free (r->computer_refused);
        g_free (r);
}

static gpointer
folder_rules_read (gpointer data, GCancellable *cancellable, GError **error)
{
        FolderRules *r = g_new0 (FolderRules, 1);
        g_autoptr (CorralPolicy) policy = corral_policy_load_default (NULL);
        g_autoptr (GError) local = NULL;
        g_autofree char *real = realpath (data, NULL);
        g_autoptr (GError) computer = NULL;

        r->shareable = TRUE;
        r->max_mode = FS_MODE_RW;
        if (!corral_task_check_computer_use (&computer))
                r->computer_refused = g_strdup (computer->message);
        /* A damaged policy is said by its own banner; a folder that is gone, at Start. */
        if (!policy || !real)
                return r;
        if (!corral_policy_check_share (policy, real, FS_MODE_RO, &r->max_mode, &local)) {
                r->shareable = FALSE;
                r->why = g_strdup (local->message);
        }
        return r;
}

/* Whether mode gives no more than max (RO < RW_NODELETE < RW). */
static gboolean
mode_within (FsMode mode, FsMode max)
{
        static const int rank[] = { [FS_MODE_RO] = 0, [FS_MODE_RW_NODELETE] = 1, [FS_MODE_RW] = 2 };

        return rank[mode] <= rank[max];
}

static void
apply_folder_rules (CorralFirstRun *self, const FolderRules *r)
{
        FsMode chosen = corral_first_run_get_mode (self);
        FsMode max = r && r->shareable ? r->max_mode : FS_MODE_RW;

        for (FsMode m = FS_MODE_RO; m <= FS_MODE_RW_NODELETE; m++) {
                GtkWidget *row =
                        gtk_widget_get_ancestor (self->mode_checks[m], ADW_TYPE_ACTION_ROW);
                gboolean ok = mode_within (m, max);
                g_autofree char *why = NULL;

                gtk_widget_set_sensitive (row, ok);
                if (!ok)
                        why = g_strdup_printf (_ ("%s Not for this folder: your organisation "
                                                  "allows at most “%s”."),
                                               fs_mode_explain (m), fs_mode_describe (max));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), ok ? fs_mode_explain (m) : why);
        }
        /* The widest the organisation allows, when the choice went beyond it. */
        if (!mode_within (chosen, max))
                corral_first_run_set_mode (self, max);
        self->folder_refused = r && !r->shareable;
        update_folder_warning (self, r && !r->shareable ? r->why : NULL);
        /* Turned off by the organisation: the switch says so and stays off (the task service
         * refuses it again at Start). */
        if (r && r->computer_refused)
                gtk_switch_set_active (GTK_SWITCH (self->computer_switch), FALSE);
        gtk_widget_set_sensitive (self->computer_row, !(r && r->computer_refused));
        adw_action_row_set_subtitle (
                ADW_ACTION_ROW (self->computer_row),
                r && r->computer_refused
                        ? r->computer_refused
                        : _ ("It sees and works a desktop inside the workspace, never this "
                             "computer’s. You can watch it and take over at any time."));
        update_start (self);
}

static void
on_folder_rules (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralFirstRun) self = user_data;
        g_autoptr (GError) error = NULL;
        FolderRules *r = corral_run_in_thread_finish (res, &error);

        if (!r)
                return;
        /* Still the folder it was read for (the person may have chosen another meanwhile). */
        if (self->policy_warning && g_strcmp0 (self->folder, self->rules_for) == 0)
                apply_folder_rules (self, r);
        folder_rules_free (r);
}

static void
read_folder_rules (CorralFirstRun *self)
{
        g_free (self->rules_for);
        self->rules_for = g_strdup (self->folder);
        apply_folder_rules (self, NULL);
        if (!self->folder)
                return;
        corral_run_in_thread (folder_rules_read, g_strdup (self->folder), g_free,
                              (GDestroyNotify) folder_rules_free, self->cancellable,
                              on_folder_rules, g_object_ref (self));
}

/* Sharing the home folder or the whole computer is allowed; the person is told plainly what
 * the assistant will see. */
static void
update_folder_warning (CorralFirstRun *self, const char *refused)
{
        const char *warning = refused        ? refused
                              : self->folder ? corral_ui_folder_warning (self->folder)
                                             : NULL;
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

/* One answer to "What may the assistant do?", as fs_mode_describe () says it. */
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
        /* Each task's own choice: the next one starts without it again. */
        gtk_switch_set_active (GTK_SWITCH (self->computer_switch), FALSE);
}

static void
add_mode_rows (CorralFirstRun *self)
{
        static const FsMode modes[] = { FS_MODE_RO, FS_MODE_RW, FS_MODE_RW_NODELETE };

        for (guint i = 0; i < G_N_ELEMENTS (modes); i++)
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->mode_group),
                                           radio_row (fs_mode_describe (modes[i]),
                                                      fs_mode_explain (modes[i]),
                                                      &self->mode_checks[modes[i]],
                                                      i ? self->mode_checks[modes[0]] : NULL));
}

/* Computer use, under the modes: a group of its own, off. */
static void
add_computer_row (CorralFirstRun *self)
{
        GtkWidget *group = adw_preferences_group_new ();
        GtkWidget *box = gtk_widget_get_parent (self->mode_group);

        self->computer_row = adw_action_row_new ();
        self->computer_switch = gtk_switch_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->computer_row),
                                       _ ("Let the Assistant Use a Screen"));
        gtk_widget_set_valign (self->computer_switch, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (self->computer_switch,
                                        _ ("Let the assistant use a screen"));
        adw_action_row_add_suffix (ADW_ACTION_ROW (self->computer_row), self->computer_switch);
        adw_action_row_set_activatable_widget (ADW_ACTION_ROW (self->computer_row),
                                               self->computer_switch);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), self->computer_row);
        gtk_box_insert_child_after (GTK_BOX (box), group, self->mode_group);
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
        g_clear_object (&self->settings);
        g_clear_pointer (&self->folder, g_free);
        g_clear_pointer (&self->rules_for, g_free);
        gtk_widget_dispose_template (GTK_WIDGET (object), CORRAL_TYPE_FIRST_RUN);
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
        /* Another step is shown (the window's Back follows it). */
        signals[SIGNAL_STEP_CHANGED] =
                g_signal_new ("step-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 0);

        gtk_widget_class_set_template_from_resource (widget_class,
                                                     "/org/corral/Corral/ui/corral-first-run.ui");
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, stack);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, welcome_button);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, anthropic_check);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, openai_check);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, base_url_row);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, key_row);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, provider_error);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, provider_continue);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, provider_spinner);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, folder_row);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, choose_button);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, folder_warning);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, policy_warning);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, mode_group);
        gtk_widget_class_bind_template_child (widget_class, CorralFirstRun, start_button);
        gtk_widget_class_bind_template_callback (widget_class, on_welcome_clicked);
        gtk_widget_class_bind_template_callback (widget_class, on_provider_toggled);
        gtk_widget_class_bind_template_callback (widget_class, on_provider_activated);
        gtk_widget_class_bind_template_callback (widget_class, on_provider_continue);
        gtk_widget_class_bind_template_callback (widget_class, on_choose_folder);
        gtk_widget_class_bind_template_callback (widget_class, on_start);
}

static void
corral_first_run_init (CorralFirstRun *self)
{
        self->cancellable = g_cancellable_new ();
        gtk_widget_init_template (GTK_WIDGET (self));
        add_mode_rows (self);
        add_computer_row (self);
        g_signal_connect (self, "map", G_CALLBACK (focus_step), NULL);
}

GtkWidget *
corral_first_run_new (GSettings *settings)
{
        CorralFirstRun *self = g_object_new (CORRAL_TYPE_FIRST_RUN, NULL);

        corral_first_run_set_settings (self, settings);
        return GTK_WIDGET (self);
}

void
corral_first_run_set_settings (CorralFirstRun *self, GSettings *settings)
{
        g_autofree char *last = NULL;
        FsMode mode = FS_MODE_RW_NODELETE;
        g_autofree char *mode_s = NULL;
        g_autofree char *provider = NULL;

        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));
        g_return_if_fail (G_IS_SETTINGS (settings));
        g_return_if_fail (self->settings == NULL);

        self->settings = g_object_ref (settings);
        provider = g_settings_get_string (settings, "provider");

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
}

void
corral_first_run_show_step (CorralFirstRun *self, const char *step)
{
        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), step);
        if (g_str_equal (step, "folder")) {
                check_policy (self);
                read_folder_rules (self);
        }
        focus_step (self);
        g_signal_emit (self, signals[SIGNAL_STEP_CHANGED], 0);
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
        update_folder_warning (self, NULL);
        update_start (self);
        read_folder_rules (self);
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

gboolean
corral_first_run_get_computer_use (CorralFirstRun *self)
{
        g_return_val_if_fail (CORRAL_IS_FIRST_RUN (self), FALSE);
        return gtk_widget_get_sensitive (self->computer_row) &&
               gtk_switch_get_active (GTK_SWITCH (self->computer_switch));
}

void
corral_first_run_set_computer_use (CorralFirstRun *self, gboolean on)
{
        g_return_if_fail (CORRAL_IS_FIRST_RUN (self));
        gtk_switch_set_active (GTK_SWITCH (self->computer_switch), on);
}

FsMode
corral_first_run_get_mode (CorralFirstRun *self)
{
        for (FsMode m = FS_MODE_RO; m <= FS_MODE_RW_NODELETE; m++)
                if (gtk_check_button_get_active (GTK_CHECK_BUTTON (self->mode_checks[m])))
                        return m;
        return FS_MODE_RW_NODELETE;
}
