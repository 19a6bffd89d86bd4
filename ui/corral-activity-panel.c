/* corral-activity-panel.c — the audit logs in plain words.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-activity-panel.h"

#include <glib/gi18n.h>
#include <string.h>

#include "corral-ui-util.h"
#include "corral-cjson.h"

#define MAX_ENTRIES 200

static const char *
str (const cJSON *obj, const char *key)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        return cJSON_IsString (item) ? item->valuestring : NULL;
}

/* A folded line ("count": N) stands for N repeats of the line before it of the same kind
 * (corral-audit-log.h); 0 for an ordinary line. */
static guint
repeats (const cJSON *obj)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, "count");

        if (!cJSON_IsNumber (item) || !(item->valuedouble >= 1))
                return 0;
        return item->valuedouble > G_MAXUINT ? G_MAXUINT : (guint) item->valuedouble;
}

static char *
describe_file (const cJSON *obj, gboolean *ret_problem)
{
        const char *op = str (obj, "op"), *path = str (obj, "path"), *result = str (obj, "result");
        const char *message = str (obj, "message");
        guint n = repeats (obj);

        if (!op || !path)
                return NULL;
        if (g_strcmp0 (result, "ok") != 0) {
                *ret_problem = TRUE;
                if (n)
                        /* Translators: first %s is a file operation, second a path */
                        return g_strdup_printf (ngettext ("Refused %u more time: %s of %s",
                                                          "Refused %u more times: %s of %s", n),
                                                n, op, path);
                if (message)
                        return g_strdup (message);
                /* Translators: first %s is a file operation, second a path */
                return g_strdup_printf (_ ("Refused: %s of %s"), op, path);
        }
        if (g_str_equal (op, "unlink") || g_str_equal (op, "rmdir") ||
            g_str_equal (op, "approved-delete"))
                return g_strdup_printf (_ ("Deleted %s"), path);
        if (g_str_equal (op, "rename"))
                return g_strdup_printf (_ ("Renamed %s"), path);
        if (g_str_equal (op, "mkdir"))
                return g_strdup_printf (_ ("Created the folder %s"), path);
        if (g_str_equal (op, "create"))
                return g_strdup_printf (_ ("Created %s"), path);
        return g_strdup_printf (_ ("Changed %s"), path);
}

static char *
describe_request (const cJSON *obj, gboolean *ret_problem)
{
        const char *host = str (obj, "host"), *decision = str (obj, "decision");
        const char *credential = str (obj, "credential");
        guint n = repeats (obj);

        if (!host || !decision)
                return NULL;
        if (!g_str_equal (decision, "allowed")) {
                *ret_problem = TRUE;
                if (n)
                        /* Translators: %s is a host name */
                        return g_strdup_printf (ngettext ("Blocked %u more connection to %s",
                                                          "Blocked %u more connections to %s", n),
                                                n, host);
                /* Translators: %s is a host name */
                return g_strdup_printf (_ ("Blocked a connection to %s"), host);
        }
        if (credential)
                /* Translators: first %s is a host name, second a credential's name */
                return g_strdup_printf (_ ("Connected to %s using “%s”"), host, credential);
        return g_strdup_printf (_ ("Connected to %s"), host);
}

/* The file server's first record: the organisation's policy it runs under (none: nothing). */
static char *
describe_policy (const cJSON *obj)
{
        const cJSON *sources = cJSON_GetObjectItemCaseSensitive (obj, "sources");
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) files = NULL;
        g_autofree char *list = NULL;
        const cJSON *s;

        cJSON_ArrayForEach (s, sources) {
                if (cJSON_IsString (s))
                        g_strv_builder_add (b, s->valuestring);
        }
        files = g_strv_builder_end (b);
        if (!files[0])
                return NULL;
        list = g_strjoinv (", ", files);
        /* Translators: %s is a list of files */
        return g_strdup_printf (_ ("Your organisation’s policy applies (%s)"), list);
}

char *
corral_activity_describe (const char *json_line, gboolean *ret_problem, char **ret_time)
{
        g_autoptr (cJSON) obj = NULL;
        char *text;

        *ret_problem = FALSE;
        if (ret_time)
                *ret_time = NULL;
        if (!json_line || !(obj = cJSON_Parse (json_line)) || !cJSON_IsObject (obj))
                return NULL;
        if (g_strcmp0 (str (obj, "source"), "files") == 0)
                text = describe_file (obj, ret_problem);
        else if (g_strcmp0 (str (obj, "source"), "policy") == 0)
                text = describe_policy (obj);
        else
                text = describe_request (obj, ret_problem);
        if (text && !g_utf8_validate (text, -1, NULL)) {
                g_free (text);
                return NULL;
        }
        if (text && ret_time && str (obj, "time"))
                *ret_time = g_strdup (str (obj, "time"));
        return text;
}

/* The panel ----------------------------------------------------------------------------------- */

typedef struct {
        char *time;
        char *text;
        gboolean problem;
} Entry;

static void
entry_free (Entry *e)
{
        g_free (e->time);
        g_free (e->text);
        g_free (e);
}

static int
entry_cmp_newest_first (gconstpointer a, gconstpointer b)
{
        const Entry *ea = *(Entry **) a, *eb = *(Entry **) b;

        return -g_strcmp0 (ea->time, eb->time);
}

/* The entries in the last max bytes of path (a cut first line fails to parse and is
 * skipped); returns the bytes read. */
static gsize
read_tail_of (const char *path, gsize max, GPtrArray *out)
{
        g_autoptr (GFile) file = g_file_new_for_path (path);
        g_autoptr (GFileInputStream) in = g_file_read (file, NULL, NULL);
        g_autofree char *buf = g_malloc (max + 1);
        g_auto (GStrv) lines = NULL;
        gsize n = 0;
        goffset size;

        if (!in)
                return 0;
        g_seekable_seek (G_SEEKABLE (in), 0, G_SEEK_END, NULL, NULL);
        size = g_seekable_tell (G_SEEKABLE (in));
        g_seekable_seek (G_SEEKABLE (in), MAX (0, size - (goffset) max), G_SEEK_SET, NULL, NULL);
        if (!g_input_stream_read_all (G_INPUT_STREAM (in), buf, max, &n, NULL, NULL))
                return 0;
        buf[n] = '\0';
        lines = g_strsplit (buf, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                Entry *e = g_new0 (Entry, 1);

                e->text = corral_activity_describe (lines[i], &e->problem, &e->time);
                if (e->text)
                        g_ptr_array_add (out, e);
                else
                        entry_free (e);
        }
        return n;
}

/* The tail of a log; right after it rotated (corral-audit-log.h) the rest of the tail is the
 * end of the previous file, so the panel does not go blank. */
static void
read_tail (const char *path, GPtrArray *out)
{
        gsize n = read_tail_of (path, CORRAL_ACTIVITY_TAIL_BYTES, out);

        if (n < CORRAL_ACTIVITY_TAIL_BYTES) {
                g_autofree char *older = g_strconcat (path, ".1", NULL);

                read_tail_of (older, CORRAL_ACTIVITY_TAIL_BYTES - n, out);
        }
}

static gpointer
read_logs (gpointer data, GCancellable *cancellable, GError **error)
{
        const char *vm_dir = data;
        GPtrArray *entries = g_ptr_array_new_with_free_func ((GDestroyNotify) entry_free);
        g_autofree char *audit = g_build_filename (vm_dir, "audit.jsonl", NULL);
        g_autofree char *egress = g_build_filename (vm_dir, "egress.jsonl", NULL);

        read_tail (audit, entries);
        read_tail (egress, entries);
        g_ptr_array_sort (entries, entry_cmp_newest_first);
        if (entries->len > MAX_ENTRIES)
                g_ptr_array_set_size (entries, MAX_ENTRIES);
        return entries;
}

struct _CorralActivityPanel {
        GtkWidget parent_instance;

        char *vm_dir;
        GCancellable *cancellable;
        GtkWidget *stack;
        GtkWidget *list;
        guint n_entries;
        guint timer;
        gboolean loading;
};

G_DEFINE_FINAL_TYPE (CorralActivityPanel, corral_activity_panel, GTK_TYPE_WIDGET)

static GtkWidget *
entry_row (Entry *e)
{
        GtkWidget *row = adw_action_row_new ();
        g_autofree char *escaped = g_markup_escape_text (e->text, -1);
        g_autofree char *when = NULL;
        g_autoptr (GDateTime) dt = e->time ? g_date_time_new_from_iso8601 (e->time, NULL) : NULL;

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), escaped);
        adw_action_row_set_title_lines (ADW_ACTION_ROW (row), 3);
        if (dt) {
                g_autoptr (GDateTime) local = g_date_time_to_local (dt);
                when = g_date_time_format (local, "%X");
                adw_action_row_set_subtitle (ADW_ACTION_ROW (row), when);
        }
        adw_action_row_add_prefix (
                ADW_ACTION_ROW (row),
                gtk_image_new_from_icon_name (e->problem ? "action-unavailable-symbolic"
                                                         : "emblem-ok-symbolic"));
        return row;
}

static void
on_logs_read (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralActivityPanel) self = user_data;
        g_autoptr (GPtrArray) entries = corral_run_in_thread_finish (res, NULL);
        GtkWidget *child;

        self->loading = FALSE;
        if (!entries || !self->list)
                return;
        while ((child = gtk_widget_get_first_child (self->list)))
                gtk_list_box_remove (GTK_LIST_BOX (self->list), child);
        for (guint i = 0; i < entries->len; i++)
                gtk_list_box_append (GTK_LIST_BOX (self->list), entry_row (entries->pdata[i]));
        self->n_entries = entries->len;
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), entries->len ? "list" : "empty");
}

void
corral_activity_panel_reload (CorralActivityPanel *self)
{
        g_return_if_fail (CORRAL_IS_ACTIVITY_PANEL (self));
        if (!self->vm_dir || self->loading)
                return;
        self->loading = TRUE;
        corral_run_in_thread (read_logs, g_strdup (self->vm_dir), g_free,
                              (GDestroyNotify) g_ptr_array_unref, self->cancellable, on_logs_read,
                              g_object_ref (self));
}

static gboolean
on_timer (gpointer user_data)
{
        corral_activity_panel_reload (user_data);
        return G_SOURCE_CONTINUE;
}

static void
corral_activity_panel_map (GtkWidget *widget)
{
        CorralActivityPanel *self = CORRAL_ACTIVITY_PANEL (widget);

        GTK_WIDGET_CLASS (corral_activity_panel_parent_class)->map (widget);
        corral_activity_panel_reload (self);
        if (!self->timer)
                self->timer = g_timeout_add_seconds (2, on_timer, self);
}

static void
corral_activity_panel_unmap (GtkWidget *widget)
{
        g_clear_handle_id (&CORRAL_ACTIVITY_PANEL (widget)->timer, g_source_remove);
        GTK_WIDGET_CLASS (corral_activity_panel_parent_class)->unmap (widget);
}

static void
corral_activity_panel_dispose (GObject *object)
{
        CorralActivityPanel *self = CORRAL_ACTIVITY_PANEL (object);

        g_clear_handle_id (&self->timer, g_source_remove);
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        g_clear_pointer (&self->stack, gtk_widget_unparent);
        self->list = NULL;
        g_clear_pointer (&self->vm_dir, g_free);
        G_OBJECT_CLASS (corral_activity_panel_parent_class)->dispose (object);
}

static void
corral_activity_panel_class_init (CorralActivityPanelClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_activity_panel_dispose;
        widget_class->map = corral_activity_panel_map;
        widget_class->unmap = corral_activity_panel_unmap;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
corral_activity_panel_init (CorralActivityPanel *self)
{
        self->cancellable = g_cancellable_new ();
        self->stack = corral_ui_list_stack_new (
                "document-open-recent-symbolic", _ ("Nothing Happened Yet"),
                _ ("Changes to your files and connections to the internet are listed here."),
                _ ("Activity"), &self->list);
        gtk_widget_add_css_class (self->list, "activity-log");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
}

GtkWidget *
corral_activity_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_ACTIVITY_PANEL, NULL);
}

void
corral_activity_panel_set_vm_dir (CorralActivityPanel *self, const char *vm_dir)
{
        g_return_if_fail (CORRAL_IS_ACTIVITY_PANEL (self));
        g_free (self->vm_dir);
        self->vm_dir = g_strdup (vm_dir);
        corral_activity_panel_reload (self);
}

guint
corral_activity_panel_get_n_entries (CorralActivityPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_ACTIVITY_PANEL (self), 0);
        return self->n_entries;
}
