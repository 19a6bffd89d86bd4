/* corral-changes-panel.c — the task's changes, to review and undo (see the header).
 *
 * The list is the change journal's (app/task/corral-task-changes.h), read on a worker thread;
 * undo and keep go through the running file server or, once the VM is gone, straight to the
 * folders, also on a worker thread. Names are the guest's: shown escaped, never as markup.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-changes-panel.h"

#include <glib/gi18n.h>

#include "assistant-text.h"
#include "corral-shares.h"
#include "corral-ui-util.h"

struct _CorralChangesPanel {
        GtkWidget parent_instance;

        char *vm_dir;
        GCancellable *cancellable;
        GtkWidget *stack; /* "empty", "list" */
        GtkWidget *empty;
        GtkWidget *summary;
        GtkWidget *kept_space; /* "Originals kept for undo: 12 kB of 2.1 GB" */
        GtkWidget *full_warning;
        GtkWidget *result;
        GtkWidget *undo_all;
        GtkWidget *keep_all;
        GtkWidget *groups; /* box of AdwPreferencesGroup, one per kind */
        CorralTaskChanges *changes;
        char *signature; /* what the list showed last, to rebuild only when it changed */
        char *stamp; /* the journal's when it was read last (corral_task_changes_stamp) */
        guint timer;
        gboolean loading;
        gboolean working; /* an undo or keep runs */
        CorralChangeWindow *review; /* (weak) */
        AdwMessageDialog *dialog; /* (weak) */
};

G_DEFINE_FINAL_TYPE (CorralChangesPanel, corral_changes_panel, GTK_TYPE_WIDGET)

static void run_undo (CorralChangesPanel *self, GStrv keys, gboolean force);

static char *
escaped (const char *text)
{
        return assistant_text_escaped (text, 4096);
}

static const CorralTaskChange *
find_change (CorralChangesPanel *self, const char *key)
{
        for (guint i = 0; self->changes && i < self->changes->changes->len; i++) {
                const CorralTaskChange *c = self->changes->changes->pdata[i];
                if (g_str_equal (c->key, key))
                        return c;
        }
        return NULL;
}

static void
set_working (CorralChangesPanel *self, gboolean working)
{
        self->working = working;
        gtk_widget_set_sensitive (self->groups, !working);
        gtk_widget_set_sensitive (self->undo_all, !working);
        gtk_widget_set_sensitive (self->keep_all, !working);
}

static void
say (CorralChangesPanel *self, const char *text)
{
        gtk_label_set_text (GTK_LABEL (self->result), text ? text : "");
        gtk_widget_set_visible (self->result, text != NULL);
}

/* Questions ----------------------------------------------------------------------------------- */

typedef void (*Answered) (CorralChangesPanel *self, gpointer data);

typedef struct {
        CorralChangesPanel *self;
        Answered yes;
        gpointer data;
        GDestroyNotify data_free;
} Question;

static void
on_question_response (AdwMessageDialog *dialog, const char *response, Question *q)
{
        if (!g_str_equal (response, "cancel") && !g_str_equal (response, "close"))
                q->yes (q->self, q->data);
        if (q->data_free)
                q->data_free (q->data);
        g_object_unref (q->self);
        g_free (q);
}

static void
ask (CorralChangesPanel *self,
     const char *heading,
     const char *body,
     const char *yes_label,
     AdwResponseAppearance appearance,
     Answered yes,
     gpointer data,
     GDestroyNotify data_free)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
        GtkWidget *dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                    heading, NULL);
        Question *q = g_new0 (Question, 1);

        adw_message_dialog_set_body (ADW_MESSAGE_DIALOG (dialog), body);
        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _ ("_Cancel"),
                                          yes ? "yes" : NULL, yes_label, NULL);
        if (yes)
                adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "yes",
                                                            appearance);
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        q->self = g_object_ref (self);
        q->yes = yes;
        q->data = data;
        q->data_free = data_free;
        if (!yes) /* a message: one button */
                adw_message_dialog_set_response_label (ADW_MESSAGE_DIALOG (dialog), "cancel",
                                                       _ ("_Close"));
        g_signal_connect (dialog, "response", G_CALLBACK (on_question_response), q);
        g_set_weak_pointer (&self->dialog, ADW_MESSAGE_DIALOG (dialog));
        gtk_window_present (GTK_WINDOW (dialog));
}

/* A few names for a sentence: "a.txt, b.txt and 3 more". */
static char *
some_names (GPtrArray *keys)
{
        GString *s = g_string_new (NULL);
        guint shown = MIN (keys->len, 4);

        for (guint i = 0; i < shown; i++) {
                g_autofree char *name = escaped (keys->pdata[i]);
                if (i)
                        g_string_append (s,
                                         i + 1 == shown && keys->len == shown ? _ (" and ") : ", ");
                g_string_append_printf (s, "“%s”", name);
        }
        if (keys->len > shown)
                g_string_append_printf (s,
                                        g_dngettext (GETTEXT_PACKAGE, " and %u more",
                                                     " and %u more", keys->len - shown),
                                        keys->len - shown);
        return g_string_free (s, FALSE);
}

/* Undo ---------------------------------------------------------------------------------------- */

typedef struct {
        char *vm_dir;
        GStrv keys; /* NULL: all */
        gboolean force;
} UndoJob;

static void
undo_job_free (UndoJob *j)
{
        g_free (j->vm_dir);
        g_strfreev (j->keys);
        g_free (j);
}

static gpointer
undo_in_thread (gpointer data, GCancellable *cancellable, GError **error)
{
        UndoJob *j = data;

        return corral_task_changes_undo (j->vm_dir, (const char *const *) j->keys, j->force, error);
}

static void
undo_anyway (CorralChangesPanel *self, gpointer data)
{
        GPtrArray *keys = data;
        GStrvBuilder *b = g_strv_builder_new ();

        for (guint i = 0; i < keys->len; i++)
                g_strv_builder_add (b, keys->pdata[i]);
        run_undo (self, g_strv_builder_end (b), TRUE);
        g_strv_builder_unref (b);
}

static void
on_undone (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralChangesPanel) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) outcomes = corral_run_in_thread_finish (res, &error);
        g_autoptr (GPtrArray) changed = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GString) problems = g_string_new (NULL);
        guint undone = 0;

        if (g_cancellable_is_cancelled (self->cancellable))
                return;
        set_working (self, FALSE);
        corral_changes_panel_reload (self);
        if (!outcomes) {
                ask (self, _ ("Nothing Was Undone"), error->message, NULL, 0, NULL, NULL, NULL);
                return;
        }
        for (guint i = 0; i < outcomes->len; i++) {
                const CorralTaskUndoOutcome *o = outcomes->pdata[i];

                if (!o->problem)
                        undone++;
                else if (o->changed_since)
                        g_ptr_array_add (changed, g_strdup (o->key));
                else {
                        g_autofree char *name = escaped (o->key);
                        g_autofree char *why = escaped (o->problem);
                        g_string_append_printf (problems, "%s%s: %s", problems->len ? "\n" : "",
                                                name, why);
                }
        }
        if (undone) {
                g_autofree char *text =
                        g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "%u change undone.",
                                                      "%u changes undone.", undone),
                                         undone);
                say (self, text);
        }
        if (problems->len)
                ask (self, _ ("Some Changes Could Not Be Undone"), problems->str, NULL, 0, NULL,
                     NULL, NULL);
        else if (changed->len) {
                g_autofree char *names = some_names (changed);
                g_autofree char *body = g_strdup_printf (
                        g_dngettext (GETTEXT_PACKAGE,
                                     "%s was changed on this computer after the assistant "
                                     "changed it. Undoing puts it back as it was before the "
                                     "task, and what was changed on this computer is lost.",
                                     "%s were changed on this computer after the assistant "
                                     "changed them. Undoing puts them back as they were before "
                                     "the task, and what was changed on this computer is lost.",
                                     changed->len),
                        names);
                ask (self, _ ("Undo Changes Made on This Computer Too?"), body, _ ("_Undo Anyway"),
                     ADW_RESPONSE_DESTRUCTIVE, undo_anyway, g_steal_pointer (&changed),
                     (GDestroyNotify) g_ptr_array_unref);
        }
}

/* keys: (transfer full) NULL for all */
static void
run_undo (CorralChangesPanel *self, GStrv keys, gboolean force)
{
        UndoJob *j = g_new0 (UndoJob, 1);

        if (!self->vm_dir) {
                g_strfreev (keys);
                g_free (j);
                return;
        }
        j->vm_dir = g_strdup (self->vm_dir);
        j->keys = keys;
        j->force = force;
        set_working (self, TRUE);
        say (self, NULL);
        corral_run_in_thread (undo_in_thread, j, (GDestroyNotify) undo_job_free,
                              (GDestroyNotify) g_ptr_array_unref, self->cancellable, on_undone,
                              g_object_ref (self));
}

static void
undo_one (CorralChangesPanel *self, const char *key)
{
        GStrv keys = g_new0 (char *, 2);

        keys[0] = g_strdup (key);
        if (self->review)
                gtk_window_destroy (GTK_WINDOW (self->review));
        run_undo (self, keys, FALSE);
}

static void
on_row_undo (GtkButton *button, CorralChangesPanel *self)
{
        undo_one (self, g_object_get_data (G_OBJECT (button), "key"));
}

static void
on_review_undo (CorralChangeWindow *window, const char *key, CorralChangesPanel *self)
{
        undo_one (self, key);
}

static void
undo_all_yes (CorralChangesPanel *self, gpointer data)
{
        run_undo (self, NULL, FALSE);
}

static void
on_undo_all (GtkButton *button, CorralChangesPanel *self)
{
        guint n = self->changes ? self->changes->changes->len : 0;
        g_autofree char *body = g_strdup_printf (
                g_dngettext (GETTEXT_PACKAGE,
                             "The change the assistant made in this task is undone: the file "
                             "goes back to how it was.",
                             "The %u changes the assistant made in this task are undone: files "
                             "go back to how they were, and what it made is removed.",
                             n),
                n);

        ask (self, _ ("Undo All Changes?"), body, _ ("_Undo All"), ADW_RESPONSE_DESTRUCTIVE,
             undo_all_yes, NULL, NULL);
}

/* Keep ---------------------------------------------------------------------------------------- */

static gpointer
keep_in_thread (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_task_changes_keep_all (data, error) ? GINT_TO_POINTER (1) : NULL;
}

static void
on_kept (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralChangesPanel) self = user_data;
        g_autoptr (GError) error = NULL;
        gboolean ok = corral_run_in_thread_finish (res, &error) != NULL;

        if (g_cancellable_is_cancelled (self->cancellable))
                return;
        set_working (self, FALSE);
        corral_changes_panel_reload (self);
        if (!ok)
                ask (self, _ ("The Changes Were Not Kept"), error->message, NULL, 0, NULL, NULL,
                     NULL);
        else
                say (self, _ ("The changes were kept; their originals are removed."));
}

static void
keep_all_yes (CorralChangesPanel *self, gpointer data)
{
        if (!self->vm_dir)
                return;
        if (self->review)
                gtk_window_destroy (GTK_WINDOW (self->review));
        set_working (self, TRUE);
        corral_run_in_thread (keep_in_thread, g_strdup (self->vm_dir), g_free, NULL,
                              self->cancellable, on_kept, g_object_ref (self));
}

static void
on_keep_all (GtkButton *button, CorralChangesPanel *self)
{
        ask (self, _ ("Keep All Changes?"),
             _ ("The originals Corral kept of the files the assistant changed are removed. These "
                "changes can no longer be undone."),
             _ ("_Keep All"), ADW_RESPONSE_SUGGESTED, keep_all_yes, NULL, NULL);
}

/* Review -------------------------------------------------------------------------------------- */

gboolean
corral_changes_panel_review (CorralChangesPanel *self, const char *key)
{
        const CorralTaskChange *c = find_change (self, key);
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
        CorralChangeWindow *window;

        if (!c)
                return FALSE;
        if (self->review)
                gtk_window_destroy (GTK_WINDOW (self->review));
        window = corral_change_window_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, c);
        g_signal_connect_object (window, "undo", G_CALLBACK (on_review_undo), self, 0);
        g_set_weak_pointer (&self->review, window);
        gtk_window_present (GTK_WINDOW (window));
        return TRUE;
}

static void
on_row_activated (AdwActionRow *row, CorralChangesPanel *self)
{
        corral_changes_panel_review (self, g_object_get_data (G_OBJECT (row), "key"));
}

/* The list ------------------------------------------------------------------------------------ */

static char *
size_text (gint64 size)
{
        return size < 0 ? NULL : g_format_size (size);
}

/* The row's second line: where it is, what happened to its size. */
static char *
row_subtitle (const CorralTaskChange *c)
{
        g_autofree char *dir = g_path_get_dirname (c->path);
        g_autofree char *where_raw = g_str_equal (dir, ".")
                                             ? g_strdup (c->share)
                                             : g_build_filename (c->share, dir, NULL);
        g_autofree char *where = escaped (where_raw);
        g_autofree char *before = size_text (c->size_before);
        g_autofree char *now = size_text (c->size_now);
        g_autofree char *from = NULL;
        g_autofree char *sizes = NULL;

        if (c->origin) {
                g_autofree char *raw = g_build_filename (c->share, c->origin, NULL);
                from = escaped (raw);
        }
        if (c->type == 'd')
                sizes = g_strdup (_ ("folder"));
        else if (c->type == 'l')
                sizes = g_strdup (_ ("link"));
        else if (c->kind == CORRAL_TASK_CHANGE_DELETED)
                sizes = g_strdup (before);
        else if (before && now && c->content_changed)
                /* Translators: a file's size before and after: "1.2 kB → 1.4 kB" */
                sizes = g_strdup_printf (_ ("%s → %s"), before, now);
        else
                sizes = g_strdup (now);
        if (from)
                /* Translators: where a moved file came from, then its size */
                return g_strdup_printf (_ ("from %s%s%s"), from, sizes ? " · " : "",
                                        sizes ? sizes : "");
        return g_strdup_printf ("%s%s%s", where, sizes ? " · " : "", sizes ? sizes : "");
}

static GtkWidget *
change_row (CorralChangesPanel *self, const CorralTaskChange *c)
{
        GtkWidget *row = adw_action_row_new ();
        g_autofree char *base = g_path_get_basename (c->path);
        g_autofree char *name = escaped (base);
        g_autofree char *title = g_markup_escape_text (name, -1);
        g_autofree char *subtitle_raw = row_subtitle (c);
        g_autofree char *subtitle = g_markup_escape_text (subtitle_raw, -1);
        /* Translators: %s is a file name */
        g_autofree char *undo_label = g_strdup_printf (_ ("Undo change to %s"), name);
        const char *icon = c->type == 'd'                          ? "folder-symbolic"
                           : c->kind == CORRAL_TASK_CHANGE_ADDED   ? "document-new-symbolic"
                           : c->kind == CORRAL_TASK_CHANGE_DELETED ? "user-trash-symbolic"
                                                                   : "document-edit-symbolic";

        adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), title);
        adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
        adw_action_row_set_subtitle_lines (ADW_ACTION_ROW (row), 2);
        adw_action_row_add_prefix (ADW_ACTION_ROW (row), gtk_image_new_from_icon_name (icon));
        if (c->lost) {
                /* Nothing to go back to: said, and no button that cannot work. */
                GtkWidget *lost = gtk_image_new_from_icon_name ("dialog-warning-symbolic");
                corral_ui_set_accessible_label (lost, c->lost);
                adw_action_row_add_suffix (ADW_ACTION_ROW (row), lost);
        } else {
                GtkWidget *undo = gtk_button_new_from_icon_name ("edit-undo-symbolic");

                gtk_widget_add_css_class (undo, "flat");
                gtk_widget_set_valign (undo, GTK_ALIGN_CENTER);
                corral_ui_set_accessible_label (undo, undo_label);
                g_object_set_data_full (G_OBJECT (undo), "key", g_strdup (c->key), g_free);
                g_signal_connect (undo, "clicked", G_CALLBACK (on_row_undo), self);
                adw_action_row_add_suffix (ADW_ACTION_ROW (row), undo);
        }
        adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                                   gtk_image_new_from_icon_name ("go-next-symbolic"));
        gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
        g_object_set_data_full (G_OBJECT (row), "key", g_strdup (c->key), g_free);
        g_signal_connect (row, "activated", G_CALLBACK (on_row_activated), self);
        return row;
}

static char *
signature (const CorralTaskChanges *changes)
{
        GString *s = g_string_new (changes->complete ? "c" : "f");

        for (guint i = 0; i < changes->changes->len; i++) {
                const CorralTaskChange *c = changes->changes->pdata[i];
                g_string_append_printf (s, "\n%d %s %s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT,
                                        c->kind, c->key, c->origin ? c->origin : "", c->size_before,
                                        c->size_now);
        }
        return g_string_free (s, FALSE);
}

static void
rebuild (CorralChangesPanel *self)
{
        static const struct {
                CorralTaskChangeKind kind;
                const char *title;
        } kinds[] = { { CORRAL_TASK_CHANGE_ADDED, N_ ("Added") },
                      { CORRAL_TASK_CHANGE_MODIFIED, N_ ("Modified") },
                      { CORRAL_TASK_CHANGE_RENAMED, N_ ("Renamed") },
                      { CORRAL_TASK_CHANGE_DELETED, N_ ("Deleted") } };
        GPtrArray *list = self->changes->changes;
        GtkWidget *child;
        g_autofree char *summary = NULL;

        while ((child = gtk_widget_get_first_child (self->groups)))
                gtk_box_remove (GTK_BOX (self->groups), child);
        for (guint k = 0; k < G_N_ELEMENTS (kinds); k++) {
                GtkWidget *group = NULL;
                guint n = 0;

                for (guint i = 0; i < list->len; i++) {
                        const CorralTaskChange *c = list->pdata[i];

                        if (c->kind != kinds[k].kind)
                                continue;
                        if (!group) {
                                group = adw_preferences_group_new ();
                                gtk_box_append (GTK_BOX (self->groups), group);
                        }
                        adw_preferences_group_add (ADW_PREFERENCES_GROUP (group),
                                                   change_row (self, c));
                        n++;
                }
                if (group) {
                        /* Translators: a group of changes and how many: "Modified (3)" */
                        g_autofree char *title =
                                g_strdup_printf (_ ("%s (%u)"), _ (kinds[k].title), n);
                        adw_preferences_group_set_title (ADW_PREFERENCES_GROUP (group), title);
                }
        }
        summary = g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "%u change in this task",
                                                "%u changes in this task", list->len),
                                   list->len);
        gtk_label_set_text (GTK_LABEL (self->summary), summary);
        gtk_widget_set_visible (self->full_warning, !self->changes->complete);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack),
                                          list->len || !self->changes->complete ? "list" : "empty");
}

typedef struct {
        char *vm_dir;
        char *stamp; /* (nullable) the journal's when the list was read last */
} LoadJob;

typedef struct {
        char *stamp;
        CorralTaskChanges *changes; /* NULL: the journal did not change */
        guint64 kept_used, kept_space; /* corral_shares_kept_space(); space 0: not known */
} Loaded;

static void
load_job_free (LoadJob *j)
{
        g_free (j->vm_dir);
        g_free (j->stamp);
        g_free (j);
}

static void
loaded_free (Loaded *l)
{
        g_free (l->stamp);
        corral_task_changes_free (l->changes);
        g_free (l);
}

/* The journal is read again only when it changed (it may hold 64 MiB; the panel asks every
 * 2 s while it is shown). */
static gpointer
load_in_thread (gpointer data, GCancellable *cancellable, GError **error)
{
        LoadJob *j = data;
        Loaded *l = g_new0 (Loaded, 1);

        l->stamp = corral_task_changes_stamp (j->vm_dir);
        if (g_strcmp0 (l->stamp, j->stamp) == 0)
                return l;
        if (!(l->changes = corral_task_changes_load (j->vm_dir, error))) {
                loaded_free (l);
                return NULL;
        }
        /* A copy is kept only with a record of it, and both go together: counted again only
         * when the journal changed. A damaged shares.json is the file server's to say. */
        corral_shares_kept_space (j->vm_dir, &l->kept_used, &l->kept_space, NULL);
        return l;
}

static void
show_kept_space (CorralChangesPanel *self, guint64 used, guint64 space)
{
        g_autofree char *used_text = g_format_size (used);
        g_autofree char *space_text = space ? g_format_size (space) : NULL;
        g_autofree char *text =
                /* Translators: sizes, "12 kB of 2.1 GB" */
                space ? g_strdup_printf (_ ("Originals kept for undo: %s of %s"), used_text,
                                         space_text)
                      : g_strdup_printf (_ ("Originals kept for undo: %s"), used_text);

        gtk_label_set_text (GTK_LABEL (self->kept_space), text);
        /* Nearly full: the next large change may not be undoable (or, in a folder shared as
         * "Can edit, but not delete", is refused). */
        if (space && used >= space / 10 * 9)
                gtk_widget_add_css_class (self->kept_space, "warning");
        else
                gtk_widget_remove_css_class (self->kept_space, "warning");
}

static void
on_loaded (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralChangesPanel) self = user_data;
        g_autoptr (GError) error = NULL;
        Loaded *loaded = corral_run_in_thread_finish (res, &error);
        CorralTaskChanges *changes = NULL;
        g_autofree char *sig = NULL;

        self->loading = FALSE;
        if (g_cancellable_is_cancelled (self->cancellable)) {
                if (loaded)
                        loaded_free (loaded);
                return;
        }
        if (loaded && !loaded->changes) { /* unchanged */
                loaded_free (loaded);
                return;
        }
        if (loaded) {
                show_kept_space (self, loaded->kept_used, loaded->kept_space);
                changes = g_steal_pointer (&loaded->changes);
                g_free (self->stamp);
                self->stamp = g_steal_pointer (&loaded->stamp);
                loaded_free (loaded);
        }
        if (!changes) {
                /* A damaged journal: said where the list would be, nothing removed. */
                adw_status_page_set_title (ADW_STATUS_PAGE (self->empty),
                                           _ ("The List of Changes Cannot Be Read"));
                adw_status_page_set_description (ADW_STATUS_PAGE (self->empty), error->message);
                gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "empty");
                g_clear_pointer (&self->signature, g_free);
                return;
        }
        sig = signature (changes);
        g_clear_pointer (&self->changes, corral_task_changes_free);
        self->changes = changes;
        if (g_strcmp0 (sig, self->signature) == 0)
                return;
        g_free (self->signature);
        self->signature = g_steal_pointer (&sig);
        rebuild (self);
}

void
corral_changes_panel_reload (CorralChangesPanel *self)
{
        LoadJob *job;

        g_return_if_fail (CORRAL_IS_CHANGES_PANEL (self));
        if (!self->vm_dir || self->loading || self->working)
                return;
        job = g_new0 (LoadJob, 1);
        job->vm_dir = g_strdup (self->vm_dir);
        job->stamp = g_strdup (self->stamp);
        self->loading = TRUE;
        corral_run_in_thread (load_in_thread, job, (GDestroyNotify) load_job_free,
                              (GDestroyNotify) loaded_free, self->cancellable, on_loaded,
                              g_object_ref (self));
}

static gboolean
on_timer (gpointer user_data)
{
        corral_changes_panel_reload (user_data);
        return G_SOURCE_CONTINUE;
}

static void
corral_changes_panel_map (GtkWidget *widget)
{
        CorralChangesPanel *self = CORRAL_CHANGES_PANEL (widget);

        GTK_WIDGET_CLASS (corral_changes_panel_parent_class)->map (widget);
        /* Shown again: sizes afresh too (files may have changed on this computer). */
        g_clear_pointer (&self->stamp, g_free);
        corral_changes_panel_reload (self);
        if (!self->timer)
                self->timer = g_timeout_add_seconds (2, on_timer, self);
}

static void
corral_changes_panel_unmap (GtkWidget *widget)
{
        g_clear_handle_id (&CORRAL_CHANGES_PANEL (widget)->timer, g_source_remove);
        GTK_WIDGET_CLASS (corral_changes_panel_parent_class)->unmap (widget);
}

static void
empty_page (CorralChangesPanel *self)
{
        adw_status_page_set_title (ADW_STATUS_PAGE (self->empty), _ ("No Changes Yet"));
        adw_status_page_set_description (
                ADW_STATUS_PAGE (self->empty),
                _ ("Files the assistant adds, changes, moves or deletes in this task appear "
                   "here, and you can undo each."));
}

static void
corral_changes_panel_dispose (GObject *object)
{
        CorralChangesPanel *self = CORRAL_CHANGES_PANEL (object);

        g_clear_handle_id (&self->timer, g_source_remove);
        g_cancellable_cancel (self->cancellable);
        if (self->review)
                gtk_window_destroy (GTK_WINDOW (self->review));
        g_clear_weak_pointer (&self->review);
        g_clear_weak_pointer (&self->dialog);
        g_clear_pointer (&self->stack, gtk_widget_unparent);
        G_OBJECT_CLASS (corral_changes_panel_parent_class)->dispose (object);
}

static void
corral_changes_panel_finalize (GObject *object)
{
        CorralChangesPanel *self = CORRAL_CHANGES_PANEL (object);

        g_clear_object (&self->cancellable);
        g_clear_pointer (&self->changes, corral_task_changes_free);
        g_free (self->signature);
        g_free (self->stamp);
        g_free (self->vm_dir);
        G_OBJECT_CLASS (corral_changes_panel_parent_class)->finalize (object);
}

static void
corral_changes_panel_class_init (CorralChangesPanelClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_changes_panel_dispose;
        G_OBJECT_CLASS (klass)->finalize = corral_changes_panel_finalize;
        widget_class->map = corral_changes_panel_map;
        widget_class->unmap = corral_changes_panel_unmap;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void
corral_changes_panel_init (CorralChangesPanel *self)
{
        GtkWidget *page = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *buttons = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
        GtkWidget *scroller = gtk_scrolled_window_new ();

        self->cancellable = g_cancellable_new ();
        self->stack = gtk_stack_new ();
        self->empty = adw_status_page_new ();
        adw_status_page_set_icon_name (ADW_STATUS_PAGE (self->empty), "document-edit-symbolic");
        gtk_widget_add_css_class (self->empty, "compact");
        empty_page (self);

        gtk_widget_set_margin_start (bar, 12);
        gtk_widget_set_margin_end (bar, 12);
        gtk_widget_set_margin_top (bar, 12);
        self->summary = gtk_label_new (NULL);
        gtk_label_set_xalign (GTK_LABEL (self->summary), 0);
        gtk_widget_add_css_class (self->summary, "heading");
        gtk_box_append (GTK_BOX (bar), self->summary);
        self->kept_space = gtk_label_new (NULL);
        gtk_label_set_xalign (GTK_LABEL (self->kept_space), 0);
        gtk_label_set_wrap (GTK_LABEL (self->kept_space), TRUE);
        gtk_widget_add_css_class (self->kept_space, "dim-label");
        gtk_widget_add_css_class (self->kept_space, "caption");
        gtk_widget_set_tooltip_text (
                self->kept_space,
                _ ("The space for undo is set in Preferences, Workspace, for new tasks"));
        gtk_box_append (GTK_BOX (bar), self->kept_space);
        self->full_warning = corral_ui_warning_new (
                _ ("The list filled up: what the assistant changed after that is not listed and "
                   "cannot be undone. Keep or undo these changes to start a new list."));
        gtk_widget_set_visible (self->full_warning, FALSE);
        gtk_box_append (GTK_BOX (bar), self->full_warning);
        self->undo_all = gtk_button_new_with_mnemonic (_ ("_Undo All"));
        self->keep_all = gtk_button_new_with_mnemonic (_ ("_Keep All"));
        gtk_widget_set_hexpand (self->undo_all, TRUE);
        gtk_widget_set_hexpand (self->keep_all, TRUE);
        g_signal_connect (self->undo_all, "clicked", G_CALLBACK (on_undo_all), self);
        g_signal_connect (self->keep_all, "clicked", G_CALLBACK (on_keep_all), self);
        gtk_box_set_homogeneous (GTK_BOX (buttons), TRUE);
        gtk_box_append (GTK_BOX (buttons), self->undo_all);
        gtk_box_append (GTK_BOX (buttons), self->keep_all);
        gtk_box_append (GTK_BOX (bar), buttons);
        self->result = gtk_label_new (NULL);
        gtk_label_set_xalign (GTK_LABEL (self->result), 0);
        gtk_label_set_wrap (GTK_LABEL (self->result), TRUE);
        gtk_widget_add_css_class (self->result, "dim-label");
        gtk_widget_set_visible (self->result, FALSE);
        gtk_box_append (GTK_BOX (bar), self->result);
        gtk_box_append (GTK_BOX (page), bar);

        self->groups = gtk_box_new (GTK_ORIENTATION_VERTICAL, 18);
        gtk_widget_set_margin_start (self->groups, 12);
        gtk_widget_set_margin_end (self->groups, 12);
        gtk_widget_set_margin_top (self->groups, 12);
        gtk_widget_set_margin_bottom (self->groups, 12);
        gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), self->groups);
        gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER,
                                        GTK_POLICY_AUTOMATIC);
        gtk_widget_set_vexpand (scroller, TRUE);
        gtk_box_append (GTK_BOX (page), scroller);
        corral_ui_set_accessible_label (self->groups, _ ("Changed files"));

        gtk_stack_add_named (GTK_STACK (self->stack), self->empty, "empty");
        gtk_stack_add_named (GTK_STACK (self->stack), page, "list");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
}

GtkWidget *
corral_changes_panel_new (void)
{
        return g_object_new (CORRAL_TYPE_CHANGES_PANEL, NULL);
}

void
corral_changes_panel_set_vm_dir (CorralChangesPanel *self, const char *vm_dir)
{
        g_return_if_fail (CORRAL_IS_CHANGES_PANEL (self));
        if (g_strcmp0 (self->vm_dir, vm_dir) == 0)
                return;
        /* Another task: what runs for the previous one is not shown here. */
        g_cancellable_cancel (self->cancellable);
        g_object_unref (self->cancellable);
        self->cancellable = g_cancellable_new ();
        self->loading = FALSE;
        set_working (self, FALSE);
        say (self, NULL);
        if (self->review)
                gtk_window_destroy (GTK_WINDOW (self->review));
        g_free (self->vm_dir);
        self->vm_dir = g_strdup (vm_dir);
        g_clear_pointer (&self->changes, corral_task_changes_free);
        g_clear_pointer (&self->signature, g_free);
        g_clear_pointer (&self->stamp, g_free);
        empty_page (self);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "empty");
        corral_changes_panel_reload (self);
}

guint
corral_changes_panel_get_n_changes (CorralChangesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_CHANGES_PANEL (self), 0);
        return self->changes ? self->changes->changes->len : 0;
}

gboolean
corral_changes_panel_get_busy (CorralChangesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_CHANGES_PANEL (self), FALSE);
        return self->loading || self->working;
}

CorralChangeWindow *
corral_changes_panel_get_review (CorralChangesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_CHANGES_PANEL (self), NULL);
        return self->review;
}

AdwMessageDialog *
corral_changes_panel_get_dialog (CorralChangesPanel *self)
{
        g_return_val_if_fail (CORRAL_IS_CHANGES_PANEL (self), NULL);
        return self->dialog;
}
