/* corral-preferences.c — the preferences window.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-preferences.h"

#include <glib/gi18n.h>

#include "corral-image.h"
#include "corral-mcp-config.h"
#include "corral-secret-store.h"
#include "corral-ui-util.h"
#include "egress-policy.h"

struct _CorralPreferences {
        AdwPreferencesWindow parent_instance;

        GSettings *settings;
        char *vm_dir;
        GCancellable *cancellable;
        CorralEgressPolicy *policy; /* the page's copy */
        GtkWidget *credentials_group;
        GtkWidget *credentials_rows; /* GtkListBox */
        GtkWidget *remove_dialog; /* the open "Remove the Key?" question (weak) */
        GtkWidget *cred_name;
        GtkWidget *cred_host;
        GtkWidget *cred_value;
        GtkWidget *allow_list;
        GtkWidget *allow_entry;
        GtkWidget *images_list;
        guint pending;
};

G_DEFINE_FINAL_TYPE (CorralPreferences, corral_preferences, ADW_TYPE_PREFERENCES_WINDOW)

/* Locks ---------------------------------------------------------------------------------------- */

/* A row the administrator locked: insensitive, with the reason next to it. */
static void
add_row (CorralPreferences *self, GtkWidget *group, GtkWidget *row, const char *key)
{
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), row);
        if (!key || g_settings_is_writable (self->settings, key))
                return;
        gtk_widget_set_sensitive (row, FALSE);
        {
                GtkWidget *lock = adw_action_row_new ();
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (lock),
                                               _ ("Set by your organization"));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (lock),
                                             _ ("Your administrator chose this setting; ask "
                                                "them to change it."));
                adw_action_row_add_prefix (
                        ADW_ACTION_ROW (lock),
                        gtk_image_new_from_icon_name ("system-lock-screen-symbolic"));
                gtk_widget_add_css_class (lock, "dim-label");
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), lock);
        }
}

static GtkWidget *
new_page (CorralPreferences *self, const char *name, const char *title, const char *icon)
{
        GtkWidget *page = adw_preferences_page_new ();

        adw_preferences_page_set_name (ADW_PREFERENCES_PAGE (page), name);
        adw_preferences_page_set_title (ADW_PREFERENCES_PAGE (page), title);
        adw_preferences_page_set_icon_name (ADW_PREFERENCES_PAGE (page), icon);
        adw_preferences_window_add (ADW_PREFERENCES_WINDOW (self), ADW_PREFERENCES_PAGE (page));
        return page;
}

static GtkWidget *
new_group (GtkWidget *page, const char *title, const char *description)
{
        GtkWidget *group = adw_preferences_group_new ();

        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (group), title);
        if (description)
                adw_preferences_group_set_description (ADW_PREFERENCES_GROUP (group), description);
        adw_preferences_page_add (ADW_PREFERENCES_PAGE (page), ADW_PREFERENCES_GROUP (group));
        return group;
}

/* A combo row bound to a string key with choices: ids[i] is shown as labels[i]. */
static gboolean
map_get (GValue *value, GVariant *variant, gpointer user_data)
{
        const char *const *ids = user_data;
        const char *s = g_variant_get_string (variant, NULL);

        for (guint i = 0; ids[i]; i++)
                if (g_str_equal (ids[i], s)) {
                        g_value_set_uint (value, i);
                        return TRUE;
                }
        return FALSE;
}

static GVariant *
map_set (const GValue *value, const GVariantType *type, gpointer user_data)
{
        const char *const *ids = user_data;
        guint i = g_value_get_uint (value);

        return i < g_strv_length ((char **) ids) ? g_variant_new_string (ids[i]) : NULL;
}

static GtkWidget *
combo_row (CorralPreferences *self,
           const char *title,
           const char *key,
           const char *const *ids,
           const char *const *labels)
{
        GtkWidget *row = adw_combo_row_new ();
        GtkStringList *model = gtk_string_list_new (labels);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        adw_combo_row_set_model (ADW_COMBO_ROW (row), G_LIST_MODEL (model));
        g_object_unref (model);
        g_settings_bind_with_mapping (self->settings, key, row, "selected", G_SETTINGS_BIND_DEFAULT,
                                      map_get, map_set, (gpointer) ids, NULL);
        return row;
}

static GtkWidget *
entry_row (CorralPreferences *self, const char *title, const char *key)
{
        GtkWidget *row = adw_entry_row_new ();

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        g_settings_bind (self->settings, key, row, "text", G_SETTINGS_BIND_DEFAULT);
        return row;
}

static GtkWidget *
spin_row (CorralPreferences *self,
          const char *title,
          const char *subtitle,
          const char *key,
          double min,
          double max,
          double step)
{
        GtkWidget *row = adw_action_row_new ();
        GtkWidget *spin = gtk_spin_button_new_with_range (min, max, step);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        gtk_widget_set_valign (spin, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (spin, title);
        g_settings_bind (self->settings, key, spin, "value", G_SETTINGS_BIND_DEFAULT);
        adw_action_row_add_suffix (ADW_ACTION_ROW (row), spin);
        adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), spin);
        return row;
}

/* An AdwActionRow with a GtkSwitch: AdwSwitchRow needs libadwaita 1.4. */
static GtkWidget *
switch_row (CorralPreferences *self, const char *title, const char *subtitle, const char *key)
{
        GtkWidget *row = adw_action_row_new ();
        GtkWidget *toggle = gtk_switch_new ();

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        gtk_widget_set_valign (toggle, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (toggle, title);
        g_settings_bind (self->settings, key, toggle, "active", G_SETTINGS_BIND_DEFAULT);
        adw_action_row_add_suffix (ADW_ACTION_ROW (row), toggle);
        adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), toggle);
        return row;
}

/* Assistant ------------------------------------------------------------------------------------ */

static const char *const provider_ids[] = { "anthropic", "openai", NULL };
static const char *const scheme_ids[] = { "default", "light", "dark", NULL };

static void
build_assistant (CorralPreferences *self)
{
        GtkWidget *page = new_page (self, "assistant", _ ("Assistant"), "user-available-symbolic");
        GtkWidget *group =
                new_group (page, _ ("Model"), _ ("Keys are managed on the Credentials page."));
        const char *provider_labels[] = { _ ("Anthropic"), _ ("OpenAI or compatible server"),
                                          NULL };
        const char *scheme_labels[] = { _ ("Follow system"), _ ("Light"), _ ("Dark"), NULL };
        GtkWidget *style;

        add_row (self, group,
                 combo_row (self, _ ("Provider"), "provider", provider_ids, provider_labels),
                 "provider");
        add_row (self, group, entry_row (self, _ ("Model (empty for the default)"), "model"),
                 "model");
        add_row (self, group, entry_row (self, _ ("Server Address"), "base-url"), "base-url");
        style = new_group (page, _ ("Appearance"), NULL);
        add_row (self, style,
                 combo_row (self, _ ("Style"), "color-scheme", scheme_ids, scheme_labels),
                 "color-scheme");
}

/* Credentials ---------------------------------------------------------------------------------- */

static void load_credentials (CorralPreferences *self);

static void
loaded_one (CorralPreferences *self)
{
        if (self->pending > 0)
                self->pending--;
}

static gpointer
credentials_list (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_secret_store_list_sync (cancellable, error);
}

static gpointer
credential_remove (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_secret_store_remove_sync (data, cancellable, error) ? GINT_TO_POINTER (1)
                                                                          : NULL;
}

static void
on_credential_changed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralPreferences) self = user_data;
        g_autoptr (GError) error = NULL;

        corral_run_in_thread_finish (res, &error);
        if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                  adw_toast_new (error->message));
        if (!g_cancellable_is_cancelled (self->cancellable))
                load_credentials (self);
}

static void
on_remove_answered (AdwMessageDialog *dialog, const char *response, CorralPreferences *self)
{
        const char *name = g_object_get_data (G_OBJECT (dialog), "name");

        if (g_strcmp0 (response, "remove") != 0 || g_cancellable_is_cancelled (self->cancellable))
                return;
        corral_run_in_thread (credential_remove, g_strdup (name), g_free, NULL, self->cancellable,
                              on_credential_changed, g_object_ref (self));
}

/* A key cannot be seen again once stored: removing it asks first. */
static void
on_remove_credential (GtkButton *button, CorralPreferences *self)
{
        const char *name = g_object_get_data (G_OBJECT (button), "name");
        /* Translators: %s is a credential's name, such as anthropic or github */
        g_autofree char *heading = g_strdup_printf (_ ("Remove the Key “%s”?"), name);
        g_autofree char *body = g_strdup_printf (
                /* Translators: %s is a credential's name */
                _ ("Corral forgets it: what uses “%s” stops working until you add the key again. "
                   "Corral cannot show it to you, so keep a copy where you got it."),
                name);
        GtkWidget *d = adw_message_dialog_new (GTK_WINDOW (self), heading, body);

        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (d), "cancel", _ ("_Cancel"), "remove",
                                          _ ("_Remove"), NULL);
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (d), "remove",
                                                    ADW_RESPONSE_DESTRUCTIVE);
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (d), "cancel");
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (d), "cancel");
        g_object_set_data_full (G_OBJECT (d), "name", g_strdup (name), g_free);
        g_signal_connect_object (d, "response", G_CALLBACK (on_remove_answered), self, 0);
        self->remove_dialog = d;
        g_object_add_weak_pointer (G_OBJECT (d), (gpointer *) &self->remove_dialog);
        gtk_window_present (GTK_WINDOW (d));
}

GtkWidget *
corral_preferences_get_remove_dialog (CorralPreferences *self)
{
        g_return_val_if_fail (CORRAL_IS_PREFERENCES (self), NULL);
        return self->remove_dialog;
}

static GtkWidget *
credential_row (CorralPreferences *self, CorralSecretInfo *info)
{
        GtkWidget *row = adw_action_row_new ();
        GtkWidget *remove = gtk_button_new_from_icon_name ("user-trash-symbolic");
        g_autofree char *hosts = g_strjoinv (", ", info->hosts);
        g_autofree char *name = g_markup_escape_text (info->name, -1);
        g_autofree char *escaped_hosts = g_markup_escape_text (hosts, -1);
        /* Translators: %s is a credential's name */
        g_autofree char *a11y = g_strdup_printf (_ ("Remove %s"), info->name);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), name);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), escaped_hosts);
        adw_action_row_add_prefix (ADW_ACTION_ROW (row),
                                   gtk_image_new_from_icon_name ("dialog-password-symbolic"));
        gtk_widget_add_css_class (remove, "flat");
        gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (remove, a11y);
        g_object_set_data_full (G_OBJECT (remove), "name", g_strdup (info->name), g_free);
        g_signal_connect (remove, "clicked", G_CALLBACK (on_remove_credential), self);
        adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);
        return row;
}

static void
on_credentials_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralPreferences) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = corral_run_in_thread_finish (res, &error);
        GtkWidget *child;

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        while ((child = gtk_widget_get_first_child (self->credentials_rows)))
                gtk_list_box_remove (GTK_LIST_BOX (self->credentials_rows), child);
        if (error) {
                GtkWidget *row = adw_action_row_new ();
                g_autofree char *escaped = g_markup_escape_text (error->message, -1);

                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                               _ ("The keychain is not available"));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), escaped);
                gtk_list_box_append (GTK_LIST_BOX (self->credentials_rows), row);
        }
        for (guint i = 0; list && i < list->len; i++)
                gtk_list_box_append (GTK_LIST_BOX (self->credentials_rows),
                                     credential_row (self, list->pdata[i]));
        if (!error && (!list || list->len == 0)) {
                GtkWidget *row = adw_action_row_new ();
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), _ ("No credentials yet"));
                gtk_widget_add_css_class (row, "dim-label");
                gtk_list_box_append (GTK_LIST_BOX (self->credentials_rows), row);
        }
        loaded_one (self);
}

static void
load_credentials (CorralPreferences *self)
{
        corral_run_in_thread (credentials_list, NULL, NULL, (GDestroyNotify) g_ptr_array_unref,
                              self->cancellable, on_credentials_listed, g_object_ref (self));
}

static void
on_key_set (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralPreferences) self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_secret_store_set_finish (res, &error)) {
                if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                          adw_toast_new (error->message));
                return;
        }
        load_credentials (self);
}

static void
on_add_credential (CorralPreferences *self)
{
        const char *name = gtk_editable_get_text (GTK_EDITABLE (self->cred_name));
        const char *host = gtk_editable_get_text (GTK_EDITABLE (self->cred_host));
        const char *value = gtk_editable_get_text (GTK_EDITABLE (self->cred_value));
        const char *hosts[] = { host, NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralSecretInfo) info = NULL;

        info = corral_secret_info_new (name, hosts, "authorization", "Bearer {}", &error);
        if (!info || !*value) {
                adw_preferences_window_add_toast (
                        ADW_PREFERENCES_WINDOW (self),
                        adw_toast_new (error ? error->message : _ ("Enter the secret value.")));
                return;
        }
        corral_secret_store_set_async (info, value, self->cancellable, on_key_set,
                                       g_object_ref (self));
        /* The value is in the keychain's hands now; never shown again. */
        gtk_editable_set_text (GTK_EDITABLE (self->cred_value), "");
}

static void
build_credentials (CorralPreferences *self)
{
        GtkWidget *page =
                new_page (self, "credentials", _ ("Credentials"), "dialog-password-symbolic");
        GtkWidget *add = new_group (page, _ ("Add a Credential"),
                                    _ ("Programs in the workspace see only a stand-in; Corral "
                                       "puts the real value into requests to its host."));
        GtkWidget *button = gtk_button_new_with_mnemonic (_ ("_Add"));

        self->credentials_group = new_group (page, _ ("Credentials"),
                                             _ ("Names and the hosts each may be sent to. "
                                                "Values stay in your keychain."));
        self->credentials_rows = gtk_list_box_new ();
        gtk_list_box_set_selection_mode (GTK_LIST_BOX (self->credentials_rows), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (self->credentials_rows, "boxed-list");
        gtk_accessible_update_property (GTK_ACCESSIBLE (self->credentials_rows),
                                        GTK_ACCESSIBLE_PROPERTY_LABEL, _ ("Credentials"), -1);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->credentials_group),
                                   self->credentials_rows);
        self->cred_name = adw_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->cred_name), _ ("Name"));
        self->cred_host = adw_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->cred_host), _ ("Host"));
        self->cred_value = adw_password_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->cred_value), _ ("Secret"));
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (add), self->cred_name);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (add), self->cred_host);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (add), self->cred_value);
        gtk_widget_add_css_class (button, "suggested-action");
        gtk_widget_set_halign (button, GTK_ALIGN_END);
        gtk_widget_set_margin_top (button, 12);
        corral_ui_set_accessible_label (button, _ ("Add the credential"));
        g_signal_connect_swapped (button, "clicked", G_CALLBACK (on_add_credential), self);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (add), button);
        self->pending++;
        load_credentials (self);
}

/* Network -------------------------------------------------------------------------------------- */

static gboolean
save_policy (CorralPreferences *self, GError **error)
{
        const GPtrArray *allow = corral_egress_policy_get_rules (self->policy, TRUE);
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) rules = NULL;
        g_autofree char *path = NULL;

        for (guint i = 0; i < allow->len; i++)
                g_strv_builder_add (b, allow->pdata[i]);
        rules = g_strv_builder_end (b);
        if (g_settings_is_writable (self->settings, "network-allow"))
                g_settings_set_strv (self->settings, "network-allow", (const char *const *) rules);
        if (!self->vm_dir)
                return TRUE;
        path = g_build_filename (self->vm_dir, "egress-policy.json", NULL);
        /* The running daemon follows the file. */
        return corral_egress_policy_save_file (self->policy, path, error);
}

static void fill_allow_list (CorralPreferences *self);

static void
on_remove_site (GtkButton *button, CorralPreferences *self)
{
        const char *pattern = g_object_get_data (G_OBJECT (button), "pattern");
        g_autoptr (CorralEgressPolicy) next =
                corral_egress_policy_new (corral_egress_policy_get_preset (self->policy));
        const GPtrArray *allow = corral_egress_policy_get_rules (self->policy, TRUE);
        const GPtrArray *deny = corral_egress_policy_get_rules (self->policy, FALSE);
        g_autoptr (GError) error = NULL;

        for (guint i = 0; i < allow->len; i++)
                if (!g_str_equal (allow->pdata[i], pattern))
                        corral_egress_policy_add_rule (next, TRUE, allow->pdata[i], NULL);
        for (guint i = 0; i < deny->len; i++)
                corral_egress_policy_add_rule (next, FALSE, deny->pdata[i], NULL);
        corral_egress_policy_unref (self->policy);
        self->policy = g_steal_pointer (&next);
        if (!save_policy (self, &error))
                adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                  adw_toast_new (error->message));
        fill_allow_list (self);
}

static void
fill_allow_list (CorralPreferences *self)
{
        const GPtrArray *allow = corral_egress_policy_get_rules (self->policy, TRUE);
        GtkWidget *child;

        while ((child = gtk_widget_get_first_child (self->allow_list)))
                gtk_list_box_remove (GTK_LIST_BOX (self->allow_list), child);
        for (guint i = 0; i < allow->len; i++) {
                GtkWidget *row = adw_action_row_new ();
                GtkWidget *remove = gtk_button_new_from_icon_name ("user-trash-symbolic");
                g_autofree char *escaped = g_markup_escape_text (allow->pdata[i], -1);
                /* Translators: %s is a site such as pypi.org */
                g_autofree char *a11y =
                        g_strdup_printf (_ ("Stop allowing %s"), (char *) allow->pdata[i]);

                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), escaped);
                gtk_widget_add_css_class (remove, "flat");
                gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
                corral_ui_set_accessible_label (remove, a11y);
                g_object_set_data_full (G_OBJECT (remove), "pattern", g_strdup (allow->pdata[i]),
                                        g_free);
                g_signal_connect (remove, "clicked", G_CALLBACK (on_remove_site), self);
                adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);
                gtk_list_box_append (GTK_LIST_BOX (self->allow_list), row);
        }
        gtk_widget_set_visible (self->allow_list, allow->len > 0);
}

gboolean
corral_preferences_allow_site (CorralPreferences *self, const char *pattern, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_PREFERENCES (self), FALSE);

        if (!corral_egress_policy_add_rule (self->policy, TRUE, pattern, error) ||
            !save_policy (self, error))
                return FALSE;
        fill_allow_list (self);
        return TRUE;
}

static void
on_allow_apply (CorralPreferences *self)
{
        g_autofree char *pattern =
                g_strstrip (g_strdup (gtk_editable_get_text (GTK_EDITABLE (self->allow_entry))));
        g_autoptr (GError) error = NULL;

        if (!*pattern)
                return;
        if (!corral_preferences_allow_site (self, pattern, &error)) {
                adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                  adw_toast_new (error->message));
                return;
        }
        gtk_editable_set_text (GTK_EDITABLE (self->allow_entry), "");
}

static void
on_preset_changed (GSettings *settings, const char *key, CorralPreferences *self)
{
        g_autofree char *s = g_settings_get_string (settings, "network-preset");
        CorralEgressPreset preset;
        g_autoptr (GError) error = NULL;

        if (!corral_egress_preset_from_string (s, &preset))
                return;
        corral_egress_policy_set_preset (self->policy, preset);
        if (!save_policy (self, &error))
                adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                  adw_toast_new (error->message));
}

static void
load_policy (CorralPreferences *self)
{
        g_autofree char *path =
                self->vm_dir ? g_build_filename (self->vm_dir, "egress-policy.json", NULL) : NULL;
        g_autofree char *preset_s = g_settings_get_string (self->settings, "network-preset");
        g_auto (GStrv) allow = g_settings_get_strv (self->settings, "network-allow");
        CorralEgressPreset preset = CORRAL_EGRESS_PRESET_NONE;

        if (path && g_file_test (path, G_FILE_TEST_EXISTS) &&
            (self->policy = corral_egress_policy_load_file (path, NULL))) {
                /* The running task's policy is what the page shows. */
                g_settings_set_string (self->settings, "network-preset",
                                       corral_egress_preset_to_string (
                                               corral_egress_policy_get_preset (self->policy)));
                return;
        }
        corral_egress_preset_from_string (preset_s, &preset);
        self->policy = corral_egress_policy_new (preset);
        for (guint i = 0; allow[i]; i++)
                corral_egress_policy_add_rule (self->policy, TRUE, allow[i], NULL);
}

static const char *const preset_ids[] = { "none", "package-managers", "allowlist", "open-web",
                                          NULL };

static void
build_network (CorralPreferences *self)
{
        GtkWidget *page = new_page (self, "network", _ ("Network"), "network-wired-symbolic");
        GtkWidget *group = new_group (page, _ ("Internet Access"),
                                      self->vm_dir ? _ ("For this task, and tasks started later.")
                                                   : _ ("For tasks started from now on."));
        GtkWidget *sites = new_group (page, _ ("Allowed Sites"),
                                      _ ("For example pypi.org or *.github.com. Everything else "
                                         "stays blocked unless the access above allows it."));
        const char *labels[] = { _ ("No internet"), _ ("Package managers only"),
                                 _ ("Only the allowed sites"), _ ("Any public website"), NULL };

        load_policy (self);
        add_row (self, group, combo_row (self, _ ("Access"), "network-preset", preset_ids, labels),
                 "network-preset");
        g_signal_connect_object (self->settings, "changed::network-preset",
                                 G_CALLBACK (on_preset_changed), self, 0);
        self->allow_entry = adw_entry_row_new ();
        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->allow_entry), _ ("Allow a Site"));
        adw_entry_row_set_show_apply_button (ADW_ENTRY_ROW (self->allow_entry), TRUE);
        g_signal_connect_swapped (self->allow_entry, "apply", G_CALLBACK (on_allow_apply), self);
        add_row (self, sites, self->allow_entry, "network-allow");
        self->allow_list = gtk_list_box_new ();
        gtk_list_box_set_selection_mode (GTK_LIST_BOX (self->allow_list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (self->allow_list, "boxed-list");
        gtk_widget_set_margin_top (self->allow_list, 12);
        gtk_accessible_update_property (GTK_ACCESSIBLE (self->allow_list),
                                        GTK_ACCESSIBLE_PROPERTY_LABEL, _ ("Allowed sites"), -1);
        adw_preferences_group_add (ADW_PREFERENCES_GROUP (sites), self->allow_list);
        fill_allow_list (self);
}

/* Tools (MCP) ---------------------------------------------------------------------------------- */

static void
build_tools (CorralPreferences *self)
{
        GtkWidget *page = new_page (self, "tools", _ ("Tools"), "application-x-addon-symbolic");
        g_autofree char *path = corral_mcp_config_default_path ();
        g_autofree char *description =
                /* Translators: %s is a file path */
                g_strdup_printf (_ ("MCP servers from %s. They run on this computer, not in the "
                                    "workspace."),
                                 path);
        g_autofree char *escaped = g_markup_escape_text (description, -1);
        GtkWidget *group = new_group (page, _ ("MCP Servers"), escaped);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpConfig) config = corral_mcp_config_new_from_file (path, TRUE, &error);

        if (!config) {
                GtkWidget *row = adw_action_row_new ();
                g_autofree char *msg = g_markup_escape_text (error->message, -1);
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                               _ ("The file could not be read"));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), msg);
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), row);
                return;
        }
        for (guint i = 0; i < config->servers->len; i++) {
                CorralMcpServerConfig *server = config->servers->pdata[i];
                GtkWidget *row = adw_action_row_new ();
                g_autofree char *args = g_strjoinv (" ", server->args);
                g_autofree char *cmd = g_strdup_printf ("%s %s", server->command, args);
                g_autofree char *name = g_markup_escape_text (server->name, -1);
                g_autofree char *cmd_escaped = g_markup_escape_text (cmd, -1);

                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), name);
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), cmd_escaped);
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), row);
        }
        if (config->servers->len == 0) {
                GtkWidget *row = adw_action_row_new ();
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), _ ("No MCP servers"));
                gtk_widget_add_css_class (row, "dim-label");
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), row);
        }
}

/* Workspace ------------------------------------------------------------------------------------ */

static gpointer
images_list (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_image_list (error);
}

static void
on_images_listed (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralPreferences) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = corral_run_in_thread_finish (res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        for (guint i = 0; list && i < list->len; i++) {
                CorralImageInfo *info = list->pdata[i];
                GtkWidget *row = adw_action_row_new ();
                g_autofree char *size = g_format_size (info->size);
                g_autofree char *built = corral_ui_format_when (info->built, FALSE);
                /* Translators: a size, then a date */
                g_autofree char *subtitle =
                        info->verified ? g_strdup_printf (_ ("%s, built %s"), size, built)
                                       : g_strdup_printf (_ ("%s, does not verify: %s"), size,
                                                          info->problem ? info->problem : "?");
                g_autofree char *escaped = g_markup_escape_text (subtitle, -1);
                g_autofree char *name = g_markup_escape_text (info->name, -1);

                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), name);
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), escaped);
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->images_list), row);
        }
        if (!list || list->len == 0) {
                GtkWidget *row = adw_action_row_new ();
                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                               _ ("None yet: the first task builds one"));
                gtk_widget_add_css_class (row, "dim-label");
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (self->images_list), row);
        }
        loaded_one (self);
}

static const char *const image_ids[] = { "minimal", "standard", NULL };

static void
build_workspace (CorralPreferences *self)
{
        GtkWidget *page = new_page (self, "workspace", _ ("Workspace"), "computer-symbolic");
        GtkWidget *group = new_group (
                page, _ ("New Tasks"),
                _ ("Used when a task’s workspace starts. Minimal programs start in seconds; "
                   "Standard adds Python, Git, Node.js and a C compiler."));
        const char *labels[] = { _ ("Minimal"), _ ("Standard"), NULL };
        GtkWidget *image = combo_row (self, _ ("Programs"), "image", image_ids, labels);

        /* Short choices, explained in the group's description: a long one was cut off. */
        add_row (self, group,
                 spin_row (self, _ ("Memory"),
                           _ ("How much of this computer’s memory a workspace may use, in "
                              "megabytes"),
                           "memory-mib", 256, 65536, 256),
                 "memory-mib");
        add_row (self, group,
                 spin_row (self, _ ("Processors"),
                           _ ("How many of this computer’s processors a workspace may use"),
                           "vcpus", 1, 64, 1),
                 "vcpus");
        add_row (self, group, image, "image");
        add_row (self, group,
                 switch_row (self, _ ("Let Programs Use Blocked System Calls"),
                             _ ("Turns off the extra protection around each program in new "
                                "tasks’ workspaces; the workspace still keeps them away from "
                                "this computer. Only for a program that needs it."),
                             "unconfined-commands"),
                 "unconfined-commands");
        self->images_list = new_group (page, _ ("Images on This Computer"), NULL);
        self->pending++;
        corral_run_in_thread (images_list, NULL, NULL, (GDestroyNotify) g_ptr_array_unref,
                              self->cancellable, on_images_listed, g_object_ref (self));
}

/* The window ----------------------------------------------------------------------------------- */

static void
corral_preferences_dispose (GObject *object)
{
        CorralPreferences *self = CORRAL_PREFERENCES (object);

        if (self->remove_dialog) {
                GtkWidget *d = self->remove_dialog;

                g_object_remove_weak_pointer (G_OBJECT (d), (gpointer *) &self->remove_dialog);
                self->remove_dialog = NULL;
                g_signal_handlers_disconnect_by_data (d, self);
                gtk_window_destroy (GTK_WINDOW (d));
        }
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        g_clear_object (&self->settings);
        g_clear_pointer (&self->policy, corral_egress_policy_unref);
        g_clear_pointer (&self->vm_dir, g_free);
        G_OBJECT_CLASS (corral_preferences_parent_class)->dispose (object);
}

static void
corral_preferences_class_init (CorralPreferencesClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_preferences_dispose;
}

static void
corral_preferences_init (CorralPreferences *self)
{
        self->cancellable = g_cancellable_new ();
}

CorralPreferences *
corral_preferences_new (GtkWindow *parent, GSettings *settings, const char *vm_dir)
{
        CorralPreferences *self = g_object_new (CORRAL_TYPE_PREFERENCES, "modal", TRUE,
                                                "transient-for", parent, "search-enabled", FALSE,
                                                "default-width", 640, "default-height", 640, NULL);

        self->settings = g_object_ref (settings);
        self->vm_dir = g_strdup (vm_dir);
        build_assistant (self);
        build_credentials (self);
        build_network (self);
        build_tools (self);
        build_workspace (self);
        return self;
}

void
corral_preferences_show_page (CorralPreferences *self, const char *name)
{
        g_return_if_fail (CORRAL_IS_PREFERENCES (self));
        adw_preferences_window_set_visible_page_name (ADW_PREFERENCES_WINDOW (self), name);
}

gboolean
corral_preferences_get_loaded (CorralPreferences *self)
{
        g_return_val_if_fail (CORRAL_IS_PREFERENCES (self), FALSE);
        return self->pending == 0;
}
