/* corral-policy-page.c — the organisation's managed policy in Preferences (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-policy-page.h"

#include <glib/gi18n.h>

#include "corral-cjson.h"

/* The key's group as the person reads it. */
static const char *
group_title (const char *key)
{
        static const struct {
                const char *prefix;
                const char *title;
        } groups[] = {
                { "sharedFolders.", N_ ("Shared Folders") },
                { "network.", N_ ("Network") },
                { "credentials.", N_ ("Credentials") },
                { "providers.", N_ ("Model Providers") },
                { "mcp.", N_ ("MCP Servers") },
                { "computerUse.", N_ ("Computer Use") },
                { "images.", N_ ("Workspace Images") },
                { "vm.", N_ ("Workspace Resources") },
                { "audit.", N_ ("Audit") },
        };

        for (guint i = 0; i < G_N_ELEMENTS (groups); i++)
                if (g_str_has_prefix (key, groups[i].prefix))
                        return _ (groups[i].title);
        return _ ("General");
}

/* A value in one line: texts as they are, lists joined, anything else as JSON. */
static void
append_value (GString *out, const cJSON *value)
{
        const cJSON *item;
        gboolean first = TRUE;

        if (cJSON_IsString (value)) {
                g_string_append (out, value->valuestring);
                return;
        }
        if (cJSON_IsArray (value) && !cJSON_IsObject (cJSON_GetArrayItem (value, 0))) {
                cJSON_ArrayForEach (item, value) {
                        if (!first)
                                g_string_append (out, ", ");
                        first = FALSE;
                        append_value (out, item);
                }
                if (first)
                        g_string_append (out, _ ("(none)"));
                return;
        }
        {
                g_autofree char *json = cJSON_PrintUnformatted (value);
                g_string_append (out, json);
        }
}

static char *
value_text (const char *key, const cJSON *setting)
{
        const CorralPolicyKey *k = corral_policy_key_lookup (key);
        const cJSON *value = cJSON_GetObjectItemCaseSensitive (setting, "value");
        GString *out = g_string_new (NULL);
        const cJSON *list;

        /* An allow list applies per file: "FILE: a, b; FILE: c". */
        if (k && k->kind == CORRAL_POLICY_KIND_ALLOW_LIST) {
                cJSON_ArrayForEach (list, value) {
                        if (out->len)
                                g_string_append (out, "; ");
                        g_string_append_printf (
                                out, "%s: ",
                                cJSON_GetStringValue (
                                        cJSON_GetObjectItemCaseSensitive (list, "source")));
                        append_value (out, cJSON_GetObjectItemCaseSensitive (list, "allowed"));
                }
                return g_string_free (out, FALSE);
        }
        append_value (out, value);
        return g_string_free (out, FALSE);
}

static char *
sources_text (const cJSON *setting)
{
        const cJSON *sources = cJSON_GetObjectItemCaseSensitive (setting, "sources");
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) files = NULL;
        const cJSON *s;

        cJSON_ArrayForEach (s, sources) {
                if (cJSON_IsString (s))
                        g_strv_builder_add (b, s->valuestring);
        }
        files = g_strv_builder_end (b);
        return g_strjoinv (", ", files);
}

static GtkWidget *
setting_row (const CorralPolicyKey *key, const cJSON *setting)
{
        GtkWidget *row = adw_action_row_new ();
        g_autofree char *title = g_markup_escape_text (key->name, -1);
        g_autofree char *subtitle = NULL;

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        gtk_widget_set_tooltip_text (row, _ (key->description));
        if (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (setting, "set"))) {
                g_autofree char *value = value_text (key->name, setting);
                g_autofree char *from = sources_text (setting);
                gboolean locked =
                        cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (setting, "locked"));
                g_autofree char *line = g_strdup_printf (
                        /* Translators: a value, then "Locked" or "Default you may change",
                         * then files */
                        _ ("%s · %s · from %s"), value,
                        locked ? _ ("Locked") : _ ("Default you may change"), from);

                subtitle = g_markup_escape_text (line, -1);
                adw_action_row_add_prefix (
                        ADW_ACTION_ROW (row),
                        gtk_image_new_from_icon_name (locked ? "system-lock-screen-symbolic"
                                                             : "document-edit-symbolic"));
        } else {
                subtitle = g_markup_escape_text (_ ("Not set"), -1);
                gtk_widget_add_css_class (row, "dim-label");
        }
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        adw_action_row_set_subtitle_lines (ADW_ACTION_ROW (row), 4);
        return row;
}

/* The first group: where the policy comes from, or what is wrong with it. */
static GtkWidget *
summary_group (CorralPolicy *policy, const GError *error)
{
        GtkWidget *group = adw_preferences_group_new ();
        g_autofree char *description = NULL;

        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (group),
                                         _ ("Your Organisation’s Policy"));
        if (!policy) {
                GtkWidget *row = adw_action_row_new ();
                g_autofree char *message = g_markup_escape_text (error ? error->message : "", -1);

                adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                               _ ("No task can start until it is fixed"));
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), message);
                adw_action_row_add_prefix (ADW_ACTION_ROW (row),
                                           gtk_image_new_from_icon_name ("dialog-error-symbolic"));
                gtk_widget_add_css_class (row, "error");
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group), row);
                return group;
        }
        {
                g_autofree char *files =
                        g_strjoinv (", ", (char **) corral_policy_get_sources (policy));

                description = g_strdup_printf (
                        _ ("Your administrator set these in %s. Locked settings cannot be changed "
                           "here; the others are defaults you may change. Digest: %s"),
                        files, corral_policy_get_digest (policy));
        }
        adw_preferences_group_set_description (ADW_PREFERENCES_GROUP (group), description);
        return group;
}

GtkWidget *
corral_policy_page_new (CorralPolicy *policy, const GError *error)
{
        GtkWidget *page = adw_preferences_page_new ();
        g_autoptr (cJSON) json = NULL;
        const cJSON *settings;
        const CorralPolicyKey *keys;
        GtkWidget *group = NULL;
        const char *group_name = NULL;
        guint n_keys = 0;

        g_return_val_if_fail (policy != NULL || error != NULL, NULL);

        adw_preferences_page_set_name (ADW_PREFERENCES_PAGE (page), "organisation");
        adw_preferences_page_set_title (ADW_PREFERENCES_PAGE (page), _ ("Organisation"));
        adw_preferences_page_set_icon_name (ADW_PREFERENCES_PAGE (page),
                                            "system-lock-screen-symbolic");
        adw_preferences_page_add (ADW_PREFERENCES_PAGE (page),
                                  ADW_PREFERENCES_GROUP (summary_group (policy, error)));
        if (!policy)
                return page;
        {
                g_autofree char *text = corral_policy_to_json (policy);
                json = cJSON_Parse (text);
        }
        settings = cJSON_GetObjectItemCaseSensitive (json, "settings");
        keys = corral_policy_keys (&n_keys);
        for (guint i = 0; i < n_keys; i++) {
                const char *title = group_title (keys[i].name);

                if (!group || g_strcmp0 (title, group_name) != 0) {
                        group = adw_preferences_group_new ();
                        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (group), title);
                        adw_preferences_page_add (ADW_PREFERENCES_PAGE (page),
                                                  ADW_PREFERENCES_GROUP (group));
                        group_name = title;
                }
                adw_preferences_group_add (ADW_PREFERENCES_GROUP (group),
                                           setting_row (&keys[i], cJSON_GetObjectItemCaseSensitive (
                                                                          settings, keys[i].name)));
        }
        return page;
}

void
corral_policy_note_below (GtkWidget *row, const char *title, const char *subtitle)
{
        GtkWidget *note = adw_action_row_new ();
        g_autofree char *escaped = g_markup_escape_text (title, -1);

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (note), escaped);
        if (subtitle) {
                g_autofree char *sub = g_markup_escape_text (subtitle, -1);
                adw_action_row_set_subtitle (ADW_ACTION_ROW (note), sub);
        }
        adw_action_row_add_prefix (ADW_ACTION_ROW (note),
                                   gtk_image_new_from_icon_name ("system-lock-screen-symbolic"));
        gtk_widget_add_css_class (note, "dim-label");
        /* The group keeps its rows in a GtkListBox; adw_preferences_group_add can only append. */
        gtk_list_box_insert (GTK_LIST_BOX (gtk_widget_get_parent (row)), note,
                             gtk_list_box_row_get_index (GTK_LIST_BOX_ROW (row)) + 1);
}
