/* corral-preferences.c — the preferences window.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-preferences.h"

#include <glib/gi18n.h>

#include "corral-image.h"
#include "corral-mcp-config.h"
#include "corral-policy-page.h"
#include "corral-secret-store.h"
#include "corral-ui-util.h"
#include "egress-policy.h"

struct _CorralPreferences {
        AdwPreferencesWindow parent_instance;

        GSettings *settings;
        char *vm_dir;
        GCancellable *cancellable;
        CorralEgressPolicy *policy; /* the page's copy */
        GtkWidget *remove_dialog; /* the open "Remove the Key?" question (weak) */
        guint pending;

        /* Assistant */
        GtkWidget *provider_row;
        GtkWidget *model_row;
        GtkWidget *base_url_row;
        GtkWidget *style_row;
        /* Credentials */
        GtkWidget *credentials_rows; /* GtkListBox */
        GtkWidget *cred_name;
        GtkWidget *cred_host;
        GtkWidget *cred_value;
        /* Network */
        GtkWidget *network_group;
        GtkWidget *preset_row;
        GtkWidget *allow_list;
        GtkWidget *allow_entry;
        /* Tools */
        GtkWidget *tools_group;
        /* Workspace */
        GtkWidget *memory_row;
        GtkWidget *memory_spin;
        GtkWidget *vcpus_row;
        GtkWidget *vcpus_spin;
        GtkWidget *image_row;
        GtkWidget *unconfined_row;
        GtkWidget *unconfined_switch;
        GtkWidget *kept_space_row;
        GtkWidget *kept_space_spin;
        GtkWidget *images_list;
};

G_DEFINE_FINAL_TYPE (CorralPreferences, corral_preferences, ADW_TYPE_PREFERENCES_WINDOW)

/* Locks ---------------------------------------------------------------------------------------- */

/* A row the administrator locked: insensitive, with the reason right below it. */
static void
lock_row (GtkWidget *row, const char *subtitle)
{
        if (!gtk_widget_get_sensitive (row))
                return; /* already locked (dconf and the policy may both lock it) */
        gtk_widget_set_sensitive (row, FALSE);
        corral_policy_note_below (row, _ ("Set by your organisation"), subtitle);
}

/* A GSettings key the administrator locked the way GNOME locks other apps' (dconf). */
static void
show_lock (CorralPreferences *self, GtkWidget *row, const char *key)
{
        if (g_settings_is_writable (self->settings, key))
                return;
        lock_row (row, _ ("Your administrator chose this setting; ask them to change it."));
}

/* A combo row bound to a string key with choices: ids[i] is the row's item i. */
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

static void
bind_combo (CorralPreferences *self, GtkWidget *row, const char *key, const char *const *ids)
{
        g_settings_bind_with_mapping (self->settings, key, row, "selected", G_SETTINGS_BIND_DEFAULT,
                                      map_get, map_set, (gpointer) ids, NULL);
        show_lock (self, row, key);
}

/* widget (the row itself, or the spin button or switch in it) shows key as property. */
static void
bind_row (CorralPreferences *self,
          GtkWidget *row,
          GtkWidget *widget,
          const char *property,
          const char *key)
{
        g_settings_bind (self->settings, key, widget, property, G_SETTINGS_BIND_DEFAULT);
        show_lock (self, row, key);
}

/* Assistant ------------------------------------------------------------------------------------ */

static const char *const provider_ids[] = { "anthropic", "openai", NULL };
static const char *const scheme_ids[] = { "default", "light", "dark", NULL };

static void
bind_assistant (CorralPreferences *self)
{
        bind_combo (self, self->provider_row, "provider", provider_ids);
        bind_row (self, self->model_row, self->model_row, "text", "model");
        bind_row (self, self->base_url_row, self->base_url_row, "text", "base-url");
        bind_combo (self, self->style_row, "color-scheme", scheme_ids);
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

/* A model key, on its way to the keychain once the provider accepts it. */
typedef struct {
        CorralPreferences *self; /* a reference */
        CorralSecretInfo *info;
        char *value;
} KeyCheck;

static void
key_check_free (KeyCheck *k)
{
        g_object_unref (k->self);
        corral_secret_info_free (k->info);
        corral_llm_api_key_free (k->value);
        g_free (k);
}

static void
on_key_checked (GObject *source, GAsyncResult *res, gpointer user_data)
{
        KeyCheck *k = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_llm_provider_check_key_finish (CORRAL_LLM_PROVIDER (source), res, &error)) {
                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                        key_check_free (k);
                        return;
                }
                if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH)) {
                        adw_preferences_window_add_toast (
                                ADW_PREFERENCES_WINDOW (k->self),
                                adw_toast_new (corral_ui_key_refused_text ()));
                        key_check_free (k);
                        return;
                }
                /* Could not ask (offline): kept; the chat says so if it is refused later. */
                g_message ("The key could not be checked now: %s", error->message);
        }
        corral_secret_store_set_async (k->info, k->value, k->self->cancellable, on_key_set,
                                       g_object_ref (k->self));
        key_check_free (k);
}

/* Takes info. A model provider's key (named as corralctl and the assistant look it up) is
 * checked with one cheap request first; any other credential is stored as it is. */
static void
store_credential (CorralPreferences *self, CorralSecretInfo *info, const char *value)
{
        gboolean anthropic =
                g_str_equal (info->name, corral_llm_secret_name (CORRAL_LLM_PROVIDER_ANTHROPIC));
        gboolean openai =
                g_str_equal (info->name, corral_llm_secret_name (CORRAL_LLM_PROVIDER_OPENAI));
        g_autofree char *base = g_settings_get_string (self->settings, "base-url");
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLlmProvider) provider = NULL;
        KeyCheck *k;

        if (anthropic || openai)
                provider = corral_ui_key_checker_new (anthropic ? CORRAL_LLM_PROVIDER_ANTHROPIC
                                                                : CORRAL_LLM_PROVIDER_OPENAI,
                                                      openai ? base : NULL, value, &error);
        if (!provider) {
                if (error)
                        adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self),
                                                          adw_toast_new (error->message));
                else
                        corral_secret_store_set_async (info, value, self->cancellable, on_key_set,
                                                       g_object_ref (self));
                corral_secret_info_free (info);
                return;
        }
        k = g_new0 (KeyCheck, 1);
        k->self = g_object_ref (self);
        k->info = info;
        k->value = g_strdup (value);
        corral_llm_provider_check_key_async (provider, self->cancellable, on_key_checked, k);
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
        store_credential (self, g_steal_pointer (&info), value);
        /* The value is in the keychain's hands now; never shown again. */
        gtk_editable_set_text (GTK_EDITABLE (self->cred_value), "");
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
setup_network (CorralPreferences *self)
{
        adw_preferences_group_set_description (
                ADW_PREFERENCES_GROUP (self->network_group),
                self->vm_dir ? _ ("For this task, and tasks started later.")
                             : _ ("For tasks started from now on."));
        /* First: the running task's policy may change the preset the row shows. */
        load_policy (self);
        bind_combo (self, self->preset_row, "network-preset", preset_ids);
        g_signal_connect_object (self->settings, "changed::network-preset",
                                 G_CALLBACK (on_preset_changed), self, 0);
        show_lock (self, self->allow_entry, "network-allow");
        fill_allow_list (self);
}

/* Tools (MCP) ---------------------------------------------------------------------------------- */

static void
fill_tools (CorralPreferences *self)
{
        GtkWidget *group = self->tools_group;
        g_autofree char *path = corral_mcp_config_default_path ();
        g_autofree char *description =
                /* Translators: %s is a file path */
                g_strdup_printf (_ ("MCP servers from %s. They run on this computer, not in the "
                                    "workspace."),
                                 path);
        g_autofree char *escaped = g_markup_escape_text (description, -1);
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpConfig) config = corral_mcp_config_new_from_file (path, TRUE, &error);

        adw_preferences_group_set_description (ADW_PREFERENCES_GROUP (group), escaped);

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
setup_workspace (CorralPreferences *self)
{
        bind_row (self, self->memory_row, self->memory_spin, "value", "memory-mib");
        bind_row (self, self->vcpus_row, self->vcpus_spin, "value", "vcpus");
        bind_combo (self, self->image_row, "image", image_ids);
        bind_row (self, self->unconfined_row, self->unconfined_switch, "active",
                  "unconfined-commands");
        bind_row (self, self->kept_space_row, self->kept_space_spin, "value", "kept-space-mib");
        self->pending++;
        corral_run_in_thread (images_list, NULL, NULL, (GDestroyNotify) g_ptr_array_unref,
                              self->cancellable, on_images_listed, g_object_ref (self));
}

/* The organisation's policy ------------------------------------------------------------------ */

static gpointer
policy_load (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_policy_load_default (error);
}

/* A locked maximum: the spin button goes no higher, and says why. */
static void
cap_spin (GtkWidget *row, GtkWidget *spin, gint64 max, const char *text)
{
        double lower, upper;

        gtk_spin_button_get_range (GTK_SPIN_BUTTON (spin), &lower, &upper);
        if (max < upper)
                gtk_spin_button_set_range (GTK_SPIN_BUTTON (spin), lower, MAX (lower, max));
        corral_policy_note_below (row, text, NULL);
}

/* What the policy locks, on the rows that set it (the decisions are made elsewhere: the task
 * service, the egress proxy, the model provider; this says so before the person tries). */
static void
show_policy_locks (CorralPreferences *self, CorralPolicy *policy)
{
        const char *text = NULL;
        gboolean may = TRUE;
        gint64 max = 0;
        CorralPolicySetting how;

        if (corral_policy_get_string (policy, "providers.baseUrl", &text, &how) && how.locked) {
                g_autofree char *s = g_strdup_printf (_ ("The model server is %s."), text);
                lock_row (self->base_url_row, s);
        }
        if (corral_policy_get_string (policy, "images.required", &text, &how) && how.locked) {
                g_autofree char *s = g_strdup_printf (_ ("Every task uses the image “%s”."), text);
                lock_row (self->image_row, s);
        }
        if (corral_policy_get_bool (policy, "network.personMayApproveHosts", &may, &how) &&
            how.locked && !may)
                lock_row (self->allow_entry, _ ("Only the sites your organisation allows can be "
                                                "reached."));
        if (corral_policy_get_string (policy, "network.preset", &text, &how) && how.locked) {
                g_autofree char *s = g_strdup_printf (
                        _ ("At most “%s”, set by your organisation; a wider choice is narrowed "
                           "to it."),
                        text);
                corral_policy_note_below (self->preset_row, s, NULL);
        }
        if (corral_policy_get_int (policy, "vm.maxMemoryMib", &max, &how) && how.locked) {
                g_autofree char *s = g_strdup_printf (
                        _ ("At most %u MiB, set by your organisation"), (guint) max);
                cap_spin (self->memory_row, self->memory_spin, max, s);
        }
        if (corral_policy_get_int (policy, "vm.maxVcpus", &max, &how) && how.locked) {
                g_autofree char *s =
                        g_strdup_printf (_ ("At most %u, set by your organisation"), (guint) max);
                cap_spin (self->vcpus_row, self->vcpus_spin, max, s);
        }
}

static void
on_policy_loaded (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralPreferences) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralPolicy) policy = corral_run_in_thread_finish (res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        if (policy)
                show_policy_locks (self, policy);
        /* The page only where there is a policy to show, or one that stops Corral. */
        if (!policy || corral_policy_get_sources (policy)[0])
                adw_preferences_window_add (
                        ADW_PREFERENCES_WINDOW (self),
                        ADW_PREFERENCES_PAGE (corral_policy_page_new (policy, error)));
        loaded_one (self);
}

static void
setup_policy (CorralPreferences *self)
{
        self->pending++;
        corral_run_in_thread (policy_load, NULL, NULL, (GDestroyNotify) corral_policy_unref,
                              self->cancellable, on_policy_loaded, g_object_ref (self));
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
        gtk_widget_dispose_template (GTK_WIDGET (self), CORRAL_TYPE_PREFERENCES);
        G_OBJECT_CLASS (corral_preferences_parent_class)->dispose (object);
}

static void
corral_preferences_class_init (CorralPreferencesClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_preferences_dispose;
        gtk_widget_class_set_template_from_resource (widget_class,
                                                     "/org/corral/Corral/ui/corral-preferences.ui");
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, provider_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, model_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, base_url_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, style_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, credentials_rows);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, cred_name);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, cred_host);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, cred_value);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, network_group);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, preset_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, allow_list);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, allow_entry);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, tools_group);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, memory_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, memory_spin);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, vcpus_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, vcpus_spin);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, image_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, unconfined_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, unconfined_switch);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, kept_space_row);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, kept_space_spin);
        gtk_widget_class_bind_template_child (widget_class, CorralPreferences, images_list);
        gtk_widget_class_bind_template_callback (widget_class, on_add_credential);
        gtk_widget_class_bind_template_callback (widget_class, on_allow_apply);
}

static void
corral_preferences_init (CorralPreferences *self)
{
        self->cancellable = g_cancellable_new ();
        gtk_widget_init_template (GTK_WIDGET (self));
}

CorralPreferences *
corral_preferences_new (GtkWindow *parent, GSettings *settings, const char *vm_dir)
{
        CorralPreferences *self =
                g_object_new (CORRAL_TYPE_PREFERENCES, "transient-for", parent, NULL);

        self->settings = g_object_ref (settings);
        self->vm_dir = g_strdup (vm_dir);
        bind_assistant (self);
        self->pending++;
        load_credentials (self);
        setup_network (self);
        fill_tools (self);
        setup_workspace (self);
        setup_policy (self);
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
