/* corral-application.c — the application.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-application.h"

#include <glib-unix.h>
#include <glib/gi18n.h>
#include <signal.h>

#include "corral-paths.h"
#include "corral-resources.h"
#include "corral-window.h"

struct _CorralApplication {
        AdwApplication parent_instance;

        CorralLauncher *launcher;
        GSettings *settings;
        guint signal_sources[3]; /* SIGTERM, SIGINT, SIGHUP */
};

G_DEFINE_FINAL_TYPE (CorralApplication, corral_application, ADW_TYPE_APPLICATION)

/* Whether GLib's default schema source would find schema id. Asking that source would fix its
 * folders for good: GLib builds it once, on first use, from the environment of that moment, so
 * GSETTINGS_SCHEMA_DIR set afterwards is ignored. This looks in the same folders, in sources of
 * its own. */
static gboolean
schema_installed (const char *id)
{
        g_autoptr (GPtrArray) dirs = g_ptr_array_new_with_free_func (g_free);
        const char *env = g_getenv ("GSETTINGS_SCHEMA_DIR");

        for (const char *const *d = g_get_system_data_dirs (); *d; d++)
                g_ptr_array_add (dirs, g_build_filename (*d, "glib-2.0", "schemas", NULL));
        g_ptr_array_add (dirs,
                         g_build_filename (g_get_user_data_dir (), "glib-2.0", "schemas", NULL));
        if (env) {
                g_auto (GStrv) parts = g_strsplit (env, G_SEARCHPATH_SEPARATOR_S, -1);

                for (char **p = parts; *p; p++)
                        if (**p)
                                g_ptr_array_add (dirs, g_strdup (*p));
        }
        for (guint i = 0; i < dirs->len; i++) {
                g_autoptr (GSettingsSchemaSource) source =
                        g_settings_schema_source_new_from_directory (dirs->pdata[i], NULL, FALSE,
                                                                     NULL);
                g_autoptr (GSettingsSchema) schema =
                        source ? g_settings_schema_source_lookup (source, id, FALSE) : NULL;

                if (schema)
                        return TRUE;
        }
        return FALSE;
}

void
corral_application_init_environment (void)
{
        const char *env = g_getenv ("GSETTINGS_SCHEMA_DIR");
        /* Uninstalled: the schema compiled in the build tree; installed into a prefix outside
         * the data folders (/opt/corral): the one in that prefix. Before the person's own. */
        const char *own = corral_paths_schema_dir ();
        g_autofree char *compiled = g_build_filename (own, "gschemas.compiled", NULL);
        g_autofree char *dirs = NULL;

        if (schema_installed (CORRAL_APP_ID) || !g_file_test (compiled, G_FILE_TEST_EXISTS))
                return;
        dirs = env && *env ? g_strjoin (G_SEARCHPATH_SEPARATOR_S, own, env, NULL) : g_strdup (own);
        g_setenv ("GSETTINGS_SCHEMA_DIR", dirs, TRUE);
}

static CorralWindow *
current_window (CorralApplication *self)
{
        GtkWindow *win = gtk_application_get_active_window (GTK_APPLICATION (self));

        return CORRAL_IS_WINDOW (win) ? CORRAL_WINDOW (win) : NULL;
}

static void
apply_color_scheme (CorralApplication *self)
{
        g_autofree char *s = g_settings_get_string (self->settings, "color-scheme");
        AdwColorScheme scheme = ADW_COLOR_SCHEME_DEFAULT;

        if (g_str_equal (s, "light"))
                scheme = ADW_COLOR_SCHEME_FORCE_LIGHT;
        else if (g_str_equal (s, "dark"))
                scheme = ADW_COLOR_SCHEME_FORCE_DARK;
        adw_style_manager_set_color_scheme (adw_style_manager_get_default (), scheme);
}

static void
on_quit (GSimpleAction *action, GVariant *param, gpointer user_data)
{
        CorralApplication *self = user_data;
        CorralWindow *win = current_window (self);

        /* Through close-request, so a running task is paused, not killed. */
        if (win)
                gtk_window_close (GTK_WINDOW (win));
        else
                g_application_quit (G_APPLICATION (self));
}

static void
on_preferences (GSimpleAction *action, GVariant *param, gpointer user_data)
{
        CorralWindow *win = current_window (user_data);

        if (win)
                corral_window_show_preferences (win);
}

static void
on_new_task (GSimpleAction *action, GVariant *param, gpointer user_data)
{
        CorralWindow *win = current_window (user_data);

        if (win)
                corral_window_new_task (win);
}

static void
on_sessions (GSimpleAction *action, GVariant *param, gpointer user_data)
{
        CorralWindow *win = current_window (user_data);

        if (win)
                corral_window_show_tasks (win);
}

static void
on_about (GSimpleAction *action, GVariant *param, gpointer user_data)
{
        CorralWindow *win = current_window (user_data);
        GtkWidget *about = adw_about_window_new ();

        g_object_set (about, "transient-for", win, "application-name", _ ("Corral"),
                      "application-icon", CORRAL_APP_ID, "version", CORRAL_VERSION,
                      "developer-name", _ ("The Corral developers"), "license-type",
                      GTK_LICENSE_GPL_3_0, "comments",
                      _ ("Hand a folder to an AI assistant, not your computer."), NULL);
        gtk_window_present (GTK_WINDOW (about));
}

static const GActionEntry app_actions[] = {
        { "quit", on_quit, NULL, NULL, NULL, { 0 } },
        { "preferences", on_preferences, NULL, NULL, NULL, { 0 } },
        { "new-task", on_new_task, NULL, NULL, NULL, { 0 } },
        { "sessions", on_sessions, NULL, NULL, NULL, { 0 } },
        { "about", on_about, NULL, NULL, NULL, { 0 } },
};

/* SIGTERM (the session ends), SIGINT, SIGHUP: the windows close as if the person had quit and
 * answered "Pause", so that no workspace (a task's, or one made ready ahead) is left running
 * without the app. */
static gboolean
on_stop_signal (gpointer user_data)
{
        corral_application_close_all (user_data);
        return G_SOURCE_CONTINUE;
}

void
corral_application_close_all (CorralApplication *self)
{
        GList *windows = gtk_application_get_windows (GTK_APPLICATION (self));
        g_autoptr (GPtrArray) mine = g_ptr_array_new_with_free_func (g_object_unref);

        for (GList *l = windows; l; l = l->next)
                if (CORRAL_IS_WINDOW (l->data))
                        g_ptr_array_add (mine, g_object_ref (l->data));
        for (guint i = 0; i < mine->len; i++)
                corral_window_close_now (mine->pdata[i]);
        if (mine->len == 0)
                g_application_quit (G_APPLICATION (self));
}

static void
corral_application_startup (GApplication *app)
{
        CorralApplication *self = CORRAL_APPLICATION (app);
        static const char *const quit[] = { "<Control>q", NULL };
        static const char *const prefs[] = { "<Control>comma", NULL };
        static const char *const new_task[] = { "<Control>n", NULL };
        static const char *const panel[] = { "F9", NULL };

        G_APPLICATION_CLASS (corral_application_parent_class)->startup (app);
        g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions,
                                         G_N_ELEMENTS (app_actions), app);
        gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.quit", quit);
        gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.preferences", prefs);
        gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.new-task", new_task);
        gtk_application_set_accels_for_action (GTK_APPLICATION (app), "win.toggle-panel", panel);
        apply_color_scheme (self);
        g_signal_connect_swapped (self->settings, "changed::color-scheme",
                                  G_CALLBACK (apply_color_scheme), self);
        self->signal_sources[0] = g_unix_signal_add (SIGTERM, on_stop_signal, self);
        self->signal_sources[1] = g_unix_signal_add (SIGINT, on_stop_signal, self);
        self->signal_sources[2] = g_unix_signal_add (SIGHUP, on_stop_signal, self);
}

static void
corral_application_activate (GApplication *app)
{
        CorralApplication *self = CORRAL_APPLICATION (app);
        CorralWindow *win = current_window (self);

        if (!win)
                win = corral_window_new (GTK_APPLICATION (app), self->launcher, self->settings);
        gtk_window_present (GTK_WINDOW (win));
}

static void
corral_application_dispose (GObject *object)
{
        CorralApplication *self = CORRAL_APPLICATION (object);

        for (guint i = 0; i < G_N_ELEMENTS (self->signal_sources); i++)
                g_clear_handle_id (&self->signal_sources[i], g_source_remove);
        g_clear_object (&self->launcher);
        g_clear_object (&self->settings);
        G_OBJECT_CLASS (corral_application_parent_class)->dispose (object);
}

static void
corral_application_class_init (CorralApplicationClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_application_dispose;
        G_APPLICATION_CLASS (klass)->startup = corral_application_startup;
        G_APPLICATION_CLASS (klass)->activate = corral_application_activate;
}

static void
corral_application_init (CorralApplication *self)
{
}

CorralApplication *
corral_application_new (CorralLauncher *launcher, GSettings *settings)
{
        CorralApplication *self = g_object_new (CORRAL_TYPE_APPLICATION, "application-id",
                                                CORRAL_APP_ID, "flags", G_APPLICATION_DEFAULT_FLAGS,
                                                "resource-base-path", "/org/corral/Corral", NULL);

        /* Links the resource object in (it registers itself): style.css, shortcuts, icon. */
        g_assert (corral_get_resource () != NULL);
        self->launcher = g_object_ref (launcher);
        self->settings = g_object_ref (settings);
        return self;
}
