/* corral-change-window.c — one change, reviewed (see the header).
 *
 * What is shown came from the guest: names are shown as plain text with their control
 * characters escaped; the texts go into read-only buffers; images are decoded by GTK's own
 * PNG and JPEG loaders on a worker thread, and only after their headers were checked against
 * the bounds in corral-task-changes.h (so a declared 100000 × 100000 image is never
 * allocated).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-change-window.h"

#include <glib/gi18n.h>
#include <gtksourceview/gtksource.h>

#include "assistant-text.h"
#include "corral-ui-util.h"

struct _CorralChangeWindow {
        AdwWindow parent_instance;

        CorralTaskChange *change;
        GCancellable *cancellable;
        GtkWidget *title;
        GtkWidget *subtitle;
        GtkWidget *details;
        GtkWidget *layout; /* linked "Unified" / "Side by Side" */
        GtkWidget *unified_button;
        GtkWidget *split_button;
        GtkWidget *stack; /* loading, unified, split, image, sizes, none */
        GtkWidget *unified_view;
        GtkWidget *before_view;
        GtkWidget *after_view;
        GtkWidget *before_picture;
        GtkWidget *after_picture;
        GtkWidget *before_caption;
        GtkWidget *after_caption;
        GtkWidget *sizes_page;
        GtkWidget *none_page;
        const char *shown;
};

G_DEFINE_FINAL_TYPE (CorralChangeWindow, corral_change_window, ADW_TYPE_WINDOW)

enum { SIGNAL_UNDO, N_SIGNALS };
static guint signals[N_SIGNALS];

static CorralTaskChange *
change_copy (const CorralTaskChange *c)
{
        CorralTaskChange *copy = g_memdup2 (c, sizeof *c);

        copy->share = g_strdup (c->share);
        copy->path = g_strdup (c->path);
        copy->origin = g_strdup (c->origin);
        copy->key = g_strdup (c->key);
        copy->folder = g_strdup (c->folder);
        copy->host_path = g_strdup (c->host_path);
        copy->kept_path = g_strdup (c->kept_path);
        copy->lost = g_strdup (c->lost);
        return copy;
}

/* A name the guest chose, for a label: one line, control characters escaped. */
static char *
shown_name (const char *share, const char *path)
{
        g_autofree char *raw = path ? g_build_filename (share, path, NULL) : g_strdup (share);

        return assistant_text_escaped (raw, 4096);
}

static char *
size_words (gint64 size)
{
        g_autofree char *human = NULL, *exact = NULL;

        if (size < 0)
                return g_strdup (_ ("nothing"));
        human = g_format_size (size);
        exact = g_strdup_printf ("%'" G_GINT64_FORMAT, size);
        /* Translators: a file's size: "1.2 kB (1,234 bytes)" */
        return size < 1000 ? g_strdup_printf (g_dngettext (GETTEXT_PACKAGE, "%u byte", "%u bytes",
                                                           (gulong) size),
                                              (guint) size)
                           : g_strdup_printf (_ ("%s (%s bytes)"), human, exact);
}

static void
show_uri_for (GtkWidget *widget, const char *path)
{
        g_autoptr (GFile) file = g_file_new_for_path (path);
        g_autofree char *uri = g_file_get_uri (file);
        GtkRoot *root = gtk_widget_get_root (widget);

        gtk_show_uri (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, uri, GDK_CURRENT_TIME);
}

static void
on_open (GtkButton *button, CorralChangeWindow *self)
{
        show_uri_for (GTK_WIDGET (button), self->change->host_path);
}

static void
on_show_in_folder (GtkButton *button, CorralChangeWindow *self)
{
        g_autofree char *dir = g_path_get_dirname (self->change->host_path);

        show_uri_for (GTK_WIDGET (button), dir);
}

static void
on_undo (GtkButton *button, CorralChangeWindow *self)
{
        g_signal_emit (self, signals[SIGNAL_UNDO], 0, self->change->key);
}

/* Text ---------------------------------------------------------------------------------------- */

static void
apply_scheme (CorralChangeWindow *self)
{
        GtkSourceStyleSchemeManager *schemes = gtk_source_style_scheme_manager_get_default ();
        gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
        GtkSourceStyleScheme *scheme = gtk_source_style_scheme_manager_get_scheme (
                schemes, dark ? "Adwaita-dark" : "Adwaita");
        GtkWidget *views[] = { self->unified_view, self->before_view, self->after_view };

        if (!scheme)
                return;
        for (guint i = 0; i < G_N_ELEMENTS (views); i++)
                gtk_source_buffer_set_style_scheme (
                        GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (GTK_TEXT_VIEW (views[i]))),
                        scheme);
}

static GtkWidget *
source_view_new (const char *label)
{
        GtkSourceBuffer *buffer = gtk_source_buffer_new (NULL);
        GtkWidget *view = gtk_source_view_new_with_buffer (buffer);
        GtkTextTagTable *tags = gtk_text_buffer_get_tag_table (GTK_TEXT_BUFFER (buffer));
        struct {
                const char *name, *color;
        } marks[] = { { "removed", "rgba(224,27,36,0.20)" },
                      { "added", "rgba(46,194,126,0.22)" },
                      { "filler", "rgba(128,128,128,0.22)" } };

        g_object_unref (buffer);
        for (guint i = 0; i < G_N_ELEMENTS (marks); i++) {
                GtkTextTag *tag = gtk_text_tag_new (marks[i].name);
                g_object_set (tag, "paragraph-background", marks[i].color, NULL);
                gtk_text_tag_table_add (tags, tag);
                g_object_unref (tag);
        }
        gtk_text_view_set_editable (GTK_TEXT_VIEW (view), FALSE);
        gtk_text_view_set_cursor_visible (GTK_TEXT_VIEW (view), FALSE);
        gtk_text_view_set_monospace (GTK_TEXT_VIEW (view), TRUE);
        gtk_text_view_set_left_margin (GTK_TEXT_VIEW (view), 8);
        gtk_text_view_set_top_margin (GTK_TEXT_VIEW (view), 6);
        gtk_text_view_set_bottom_margin (GTK_TEXT_VIEW (view), 6);
        gtk_source_buffer_set_highlight_matching_brackets (buffer, FALSE);
        gtk_accessible_update_property (GTK_ACCESSIBLE (view), GTK_ACCESSIBLE_PROPERTY_LABEL, label,
                                        -1);
        return view;
}

static GtkWidget *
scrolled (GtkWidget *child, GtkAdjustment *vadjustment)
{
        GtkWidget *sw = gtk_scrolled_window_new ();

        gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), child);
        if (vadjustment)
                gtk_scrolled_window_set_vadjustment (GTK_SCROLLED_WINDOW (sw), vadjustment);
        gtk_widget_set_hexpand (sw, TRUE);
        gtk_widget_set_vexpand (sw, TRUE);
        return sw;
}

static void
set_text (GtkWidget *view,
          const char *text,
          gsize len,
          const GByteArray *marks,
          GtkSourceLanguage *language)
{
        GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (view));
        GtkTextIter start, end;

        gtk_source_buffer_set_language (GTK_SOURCE_BUFFER (buffer), language);
        gtk_text_buffer_set_text (buffer, text, len);
        for (guint i = 0; marks && i < marks->len; i++) {
                const char *tag = marks->data[i] == CORRAL_TASK_LINE_REMOVED  ? "removed"
                                  : marks->data[i] == CORRAL_TASK_LINE_ADDED  ? "added"
                                  : marks->data[i] == CORRAL_TASK_LINE_FILLER ? "filler"
                                                                              : NULL;
                if (!tag)
                        continue;
                gtk_text_buffer_get_iter_at_line (buffer, &start, i);
                end = start;
                gtk_text_iter_forward_line (&end);
                gtk_text_buffer_apply_tag_by_name (buffer, tag, &start, &end);
        }
}

static void
show_text (CorralChangeWindow *self, const CorralTaskDiff *d)
{
        GtkSourceLanguageManager *languages = gtk_source_language_manager_get_default ();
        GtkSourceLanguage *diff = gtk_source_language_manager_get_language (languages, "diff");
        g_autofree char *base = g_path_get_basename (self->change->path);
        GtkSourceLanguage *language =
                gtk_source_language_manager_guess_language (languages, base, NULL);
        gboolean changed = d->unified[0] != '\0';

        set_text (self->unified_view, d->unified, -1, NULL, diff);
        set_text (self->before_view, d->before->str, d->before->len, d->before_lines, language);
        set_text (self->after_view, d->after->str, d->after->len, d->after_lines, language);
        gtk_widget_set_visible (self->layout, TRUE);
        /* Nothing changed inside (renamed, its permissions): the file, once. */
        gtk_widget_set_sensitive (self->unified_button, changed);
        if (!changed)
                gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (self->split_button), TRUE);
        gtk_stack_set_visible_child_name (
                GTK_STACK (self->stack),
                gtk_toggle_button_get_active (GTK_TOGGLE_BUTTON (self->split_button)) ? "split"
                                                                                      : "unified");
        self->shown = "text";
}

static void
on_layout_toggled (GtkToggleButton *button, CorralChangeWindow *self)
{
        if (!gtk_toggle_button_get_active (button) || g_strcmp0 (self->shown, "text") != 0)
                return;
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack),
                                          GTK_WIDGET (button) == self->split_button ? "split"
                                                                                    : "unified");
}

/* Images -------------------------------------------------------------------------------------- */

typedef struct {
        GdkTexture *before;
        GdkTexture *after;
        gboolean failed;
} Decoded;

static void
decoded_free (Decoded *d)
{
        g_clear_object (&d->before);
        g_clear_object (&d->after);
        g_free (d);
}

static gpointer
decode_images (gpointer data, GCancellable *cancellable, GError **error)
{
        const CorralTaskDiff *d = data;
        Decoded *out = g_new0 (Decoded, 1);
        g_autoptr (GError) e1 = NULL, e2 = NULL;

        if (d->before_image)
                out->before = gdk_texture_new_from_bytes (d->before_image, &e1);
        if (d->after_image)
                out->after = gdk_texture_new_from_bytes (d->after_image, &e2);
        out->failed = (d->before_image && !out->before) || (d->after_image && !out->after);
        return out;
}

static void show_sizes (CorralChangeWindow *self, const CorralTaskDiff *d, const char *what);

typedef struct {
        CorralChangeWindow *self;
        CorralTaskDiff *diff;
} ImageJob;

static void
on_decoded (GObject *source, GAsyncResult *res, gpointer user_data)
{
        ImageJob *job = user_data;
        g_autoptr (CorralChangeWindow) self = job->self;
        g_autoptr (CorralTaskDiff) diff = job->diff;
        Decoded *d = corral_run_in_thread_finish (res, NULL);

        g_free (job);
        if (!d || g_cancellable_is_cancelled (self->cancellable)) {
                if (d)
                        decoded_free (d);
                return;
        }
        if (d->failed) {
                show_sizes (self, diff, _ ("The image cannot be shown"));
        } else {
                gtk_picture_set_paintable (GTK_PICTURE (self->before_picture),
                                           GDK_PAINTABLE (d->before));
                gtk_picture_set_paintable (GTK_PICTURE (self->after_picture),
                                           GDK_PAINTABLE (d->after));
                gtk_label_set_text (GTK_LABEL (self->before_caption),
                                    d->before ? _ ("Before") : _ ("Before: no image"));
                gtk_label_set_text (GTK_LABEL (self->after_caption),
                                    d->after ? _ ("After") : _ ("After: deleted"));
                gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "image");
                self->shown = "image";
        }
        decoded_free (d);
}

/* Sizes --------------------------------------------------------------------------------------- */

static void
show_sizes (CorralChangeWindow *self, const CorralTaskDiff *d, const char *what)
{
        g_autofree char *before = size_words (d->size_before);
        g_autofree char *after = size_words (d->size_after);
        /* Translators: "1.2 kB (1,234 bytes) → 2.0 kB (2,048 bytes)" */
        g_autofree char *sizes = g_strdup_printf (_ ("%s → %s"), before, after);

        adw_status_page_set_title (ADW_STATUS_PAGE (self->sizes_page), what);
        adw_status_page_set_description (ADW_STATUS_PAGE (self->sizes_page), sizes);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "sizes");
        self->shown = "sizes";
}

static void
show_none (CorralChangeWindow *self, const char *title, const char *description)
{
        adw_status_page_set_title (ADW_STATUS_PAGE (self->none_page), title);
        adw_status_page_set_description (ADW_STATUS_PAGE (self->none_page), description);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "none");
        self->shown = "none";
}

/* Comparing ----------------------------------------------------------------------------------- */

static gpointer
compare (gpointer data, GCancellable *cancellable, GError **error)
{
        return corral_task_change_diff (data, error);
}

static void
on_compared (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralChangeWindow) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralTaskDiff) d = corral_run_in_thread_finish (res, &error);

        if (g_cancellable_is_cancelled (self->cancellable))
                return;
        if (!d) {
                show_none (self, _ ("It Cannot Be Compared"), error->message);
                return;
        }
        switch (d->kind) {
        case CORRAL_TASK_DIFF_TEXT:
                show_text (self, d);
                break;
        case CORRAL_TASK_DIFF_IMAGE: {
                ImageJob *job = g_new0 (ImageJob, 1);

                job->self = g_object_ref (self);
                job->diff = g_steal_pointer (&d);
                corral_run_in_thread (decode_images, job->diff, NULL, (GDestroyNotify) decoded_free,
                                      self->cancellable, on_decoded, job);
                break;
        }
        case CORRAL_TASK_DIFF_BINARY:
                show_sizes (self, d,
                            self->change->kind == CORRAL_TASK_CHANGE_ADDED     ? _ ("Added")
                            : self->change->kind == CORRAL_TASK_CHANGE_DELETED ? _ ("Deleted")
                            : !self->change->content_changed ? _ ("Moved, Its Content Unchanged")
                                                             : _ ("Changed"));
                break;
        case CORRAL_TASK_DIFF_TOO_LARGE:
                show_sizes (self, d, _ ("Too Large to Compare Here"));
                break;
        case CORRAL_TASK_DIFF_UNAVAILABLE:
                show_none (self, _ ("It Cannot Be Compared"), d->reason);
                break;
        case CORRAL_TASK_DIFF_NONE:
                show_none (self,
                           self->change->type == 'd'   ? _ ("A Folder")
                           : self->change->type == 'l' ? _ ("A Link")
                                                       : _ ("Its Content Did Not Change"),
                           self->change->kind == CORRAL_TASK_CHANGE_ADDED
                                   ? _ ("The assistant made it.")
                           : self->change->kind == CORRAL_TASK_CHANGE_DELETED
                                   ? _ ("The assistant deleted it.")
                           : self->change->kind == CORRAL_TASK_CHANGE_RENAMED
                                   ? _ ("The assistant moved it.")
                                   : _ ("The assistant changed its permissions or its date."));
                break;
        }
}

/* The window ---------------------------------------------------------------------------------- */

static GtkWidget *
header_button (const char *mnemonic, GCallback cb, CorralChangeWindow *self)
{
        GtkWidget *button = gtk_button_new_with_mnemonic (mnemonic);

        g_signal_connect (button, "clicked", cb, self);
        return button;
}

static GtkWidget *
picture_column (GtkWidget **picture, GtkWidget **caption)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);

        *caption = gtk_label_new (NULL);
        gtk_widget_add_css_class (*caption, "heading");
        *picture = gtk_picture_new ();
        gtk_picture_set_can_shrink (GTK_PICTURE (*picture), TRUE);
        gtk_widget_set_hexpand (*picture, TRUE);
        gtk_widget_set_vexpand (*picture, TRUE);
        gtk_box_append (GTK_BOX (box), *caption);
        gtk_box_append (GTK_BOX (box), *picture);
        return box;
}

static void
build (CorralChangeWindow *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *header = adw_header_bar_new ();
        GtkWidget *titles = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *split = gtk_grid_new ();
        GtkWidget *after_column = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
        GtkWidget *images = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
        GtkWidget *spinner = gtk_spinner_new ();
        GtkWidget *undo = gtk_button_new_with_mnemonic (_ ("_Undo This Change"));
        GtkWidget *open = header_button (_ ("_Open"), G_CALLBACK (on_open), self);
        GtkWidget *show =
                header_button (_ ("Show in _Files"), G_CALLBACK (on_show_in_folder), self);
        /* Floating: the first scroller takes it. */
        GtkAdjustment *shared = gtk_adjustment_new (0, 0, 0, 0, 0, 0);
        GtkWidget *before_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *after_box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *before_label = gtk_label_new (_ ("Before"));
        GtkWidget *after_label = gtk_label_new (_ ("After"));

        self->title = gtk_label_new (NULL);
        gtk_widget_add_css_class (self->title, "title");
        gtk_label_set_ellipsize (GTK_LABEL (self->title), PANGO_ELLIPSIZE_MIDDLE);
        self->subtitle = gtk_label_new (NULL);
        gtk_widget_add_css_class (self->subtitle, "subtitle");
        gtk_label_set_ellipsize (GTK_LABEL (self->subtitle), PANGO_ELLIPSIZE_START);
        gtk_widget_set_valign (titles, GTK_ALIGN_CENTER);
        gtk_box_append (GTK_BOX (titles), self->title);
        gtk_box_append (GTK_BOX (titles), self->subtitle);
        adw_header_bar_set_title_widget (ADW_HEADER_BAR (header), titles);

        self->layout = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
        gtk_widget_add_css_class (self->layout, "linked");
        self->unified_button = gtk_toggle_button_new_with_label (_ ("Unified"));
        self->split_button = gtk_toggle_button_new_with_label (_ ("Side by Side"));
        gtk_toggle_button_set_group (GTK_TOGGLE_BUTTON (self->split_button),
                                     GTK_TOGGLE_BUTTON (self->unified_button));
        gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (self->unified_button), TRUE);
        g_signal_connect (self->unified_button, "toggled", G_CALLBACK (on_layout_toggled), self);
        g_signal_connect (self->split_button, "toggled", G_CALLBACK (on_layout_toggled), self);
        gtk_box_append (GTK_BOX (self->layout), self->unified_button);
        gtk_box_append (GTK_BOX (self->layout), self->split_button);
        gtk_widget_set_visible (self->layout, FALSE);
        adw_header_bar_pack_start (ADW_HEADER_BAR (header), self->layout);

        g_signal_connect (undo, "clicked", G_CALLBACK (on_undo), self);
        /* Nothing to undo with: the original was not kept. */
        gtk_widget_set_sensitive (undo, self->change->lost == NULL);
        adw_header_bar_pack_end (ADW_HEADER_BAR (header), undo);
        gtk_widget_set_sensitive (open, self->change->size_now >= 0);
        gtk_widget_set_sensitive (show, self->change->host_path != NULL);
        adw_header_bar_pack_end (ADW_HEADER_BAR (header), show);
        adw_header_bar_pack_end (ADW_HEADER_BAR (header), open);
        gtk_box_append (GTK_BOX (box), header);

        self->details = gtk_label_new (NULL);
        gtk_label_set_wrap (GTK_LABEL (self->details), TRUE);
        gtk_label_set_xalign (GTK_LABEL (self->details), 0);
        gtk_widget_add_css_class (self->details, "dim-label");
        gtk_widget_set_margin_start (self->details, 12);
        gtk_widget_set_margin_end (self->details, 12);
        gtk_widget_set_margin_top (self->details, 6);
        gtk_widget_set_margin_bottom (self->details, 6);
        gtk_box_append (GTK_BOX (box), self->details);
        gtk_box_append (GTK_BOX (box), gtk_separator_new (GTK_ORIENTATION_HORIZONTAL));

        self->stack = gtk_stack_new ();
        gtk_widget_set_vexpand (self->stack, TRUE);
        gtk_spinner_start (GTK_SPINNER (spinner));
        gtk_widget_set_size_request (spinner, 32, 32);
        gtk_widget_set_halign (spinner, GTK_ALIGN_CENTER);
        gtk_widget_set_valign (spinner, GTK_ALIGN_CENTER);
        corral_ui_set_accessible_label (spinner, _ ("Comparing"));
        gtk_stack_add_named (GTK_STACK (self->stack), spinner, "loading");

        self->unified_view = source_view_new (_ ("Changes"));
        gtk_stack_add_named (GTK_STACK (self->stack), scrolled (self->unified_view, NULL),
                             "unified");

        self->before_view = source_view_new (_ ("Before"));
        self->after_view = source_view_new (_ ("After"));
        gtk_widget_add_css_class (before_label, "heading");
        gtk_widget_add_css_class (after_label, "heading");
        gtk_widget_set_margin_top (before_label, 6);
        gtk_widget_set_margin_top (after_label, 6);
        gtk_box_append (GTK_BOX (before_box), before_label);
        gtk_box_append (GTK_BOX (before_box), scrolled (self->before_view, shared));
        gtk_box_append (GTK_BOX (after_box), after_label);
        gtk_box_append (GTK_BOX (after_box), scrolled (self->after_view, shared));
        /* Two equal columns, the line between them in the second. */
        gtk_grid_set_column_homogeneous (GTK_GRID (split), TRUE);
        gtk_widget_set_hexpand (after_box, TRUE);
        gtk_box_append (GTK_BOX (after_column), gtk_separator_new (GTK_ORIENTATION_VERTICAL));
        gtk_box_append (GTK_BOX (after_column), after_box);
        gtk_grid_attach (GTK_GRID (split), before_box, 0, 0, 1, 1);
        gtk_grid_attach (GTK_GRID (split), after_column, 1, 0, 1, 1);
        gtk_stack_add_named (GTK_STACK (self->stack), split, "split");

        gtk_box_set_homogeneous (GTK_BOX (images), TRUE);
        gtk_widget_set_margin_start (images, 12);
        gtk_widget_set_margin_end (images, 12);
        gtk_widget_set_margin_top (images, 12);
        gtk_widget_set_margin_bottom (images, 12);
        gtk_box_append (GTK_BOX (images),
                        picture_column (&self->before_picture, &self->before_caption));
        gtk_box_append (GTK_BOX (images),
                        picture_column (&self->after_picture, &self->after_caption));
        gtk_stack_add_named (GTK_STACK (self->stack), images, "image");

        self->sizes_page = adw_status_page_new ();
        adw_status_page_set_icon_name (ADW_STATUS_PAGE (self->sizes_page),
                                       "document-edit-symbolic");
        gtk_stack_add_named (GTK_STACK (self->stack), self->sizes_page, "sizes");
        self->none_page = adw_status_page_new ();
        adw_status_page_set_icon_name (ADW_STATUS_PAGE (self->none_page),
                                       "document-properties-symbolic");
        gtk_stack_add_named (GTK_STACK (self->stack), self->none_page, "none");
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "loading");
        self->shown = "loading";
        gtk_box_append (GTK_BOX (box), self->stack);
        adw_window_set_content (ADW_WINDOW (self), box);

        apply_scheme (self);
        g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                                 G_CALLBACK (apply_scheme), self, G_CONNECT_SWAPPED);
}

static void
describe (CorralChangeWindow *self)
{
        const CorralTaskChange *c = self->change;
        g_autofree char *base = g_path_get_basename (c->path);
        g_autofree char *name = assistant_text_escaped (base, 1024);
        g_autofree char *where = shown_name (c->share, c->path);
        g_autofree char *from = c->origin ? shown_name (c->share, c->origin) : NULL;
        g_autofree char *subtitle =
                /* Translators: a moved file: "Documents/old.txt → Documents/new.txt" */
                from ? g_strdup_printf (_ ("%s → %s"), from, where) : g_strdup (where);
        g_autofree char *title = NULL;
        GString *details = g_string_new (NULL);

        gtk_label_set_text (GTK_LABEL (self->title), name);
        gtk_label_set_text (GTK_LABEL (self->subtitle), subtitle);
        /* Translators: the window's title, %s a file name */
        title = g_strdup_printf (_ ("Changes to %s"), name);
        gtk_window_set_title (GTK_WINDOW (self), title);
        g_string_append (details,
                         c->kind == CORRAL_TASK_CHANGE_ADDED     ? _ ("Added by the assistant.")
                         : c->kind == CORRAL_TASK_CHANGE_DELETED ? _ ("Deleted by the assistant.")
                         : c->kind == CORRAL_TASK_CHANGE_RENAMED ? _ ("Moved by the assistant.")
                                                                 : _ ("Changed by the assistant."));
        if (c->mode_changed)
                g_string_append_printf (details, " %s", _ ("Its permissions changed."));
        if (c->lost)
                g_string_append_printf (details, " %s", c->lost);
        else if (c->host_path)
                g_string_append_printf (details, " %s", _ ("Undo puts it back as it was."));
        gtk_label_set_text (GTK_LABEL (self->details), details->str);
        g_string_free (details, TRUE);
}

static void
corral_change_window_dispose (GObject *object)
{
        CorralChangeWindow *self = CORRAL_CHANGE_WINDOW (object);

        g_cancellable_cancel (self->cancellable);
        G_OBJECT_CLASS (corral_change_window_parent_class)->dispose (object);
}

static void
corral_change_window_finalize (GObject *object)
{
        CorralChangeWindow *self = CORRAL_CHANGE_WINDOW (object);

        g_clear_object (&self->cancellable);
        g_clear_pointer (&self->change, corral_task_change_free);
        G_OBJECT_CLASS (corral_change_window_parent_class)->finalize (object);
}

static void
corral_change_window_class_init (CorralChangeWindowClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        /* GtkSourceView's types, languages and style schemes (once; later calls do nothing). */
        gtk_source_init ();
        object_class->dispose = corral_change_window_dispose;
        object_class->finalize = corral_change_window_finalize;
        /* The person asked to undo the change named key ("SHARE/PATH"). */
        signals[SIGNAL_UNDO] = g_signal_new ("undo", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                             0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
corral_change_window_init (CorralChangeWindow *self)
{
        self->cancellable = g_cancellable_new ();
}

CorralChangeWindow *
corral_change_window_new (GtkWindow *parent, const CorralTaskChange *change)
{
        CorralChangeWindow *self = g_object_new (CORRAL_TYPE_CHANGE_WINDOW, "transient-for", parent,
                                                 "destroy-with-parent", TRUE, "default-width", 980,
                                                 "default-height", 680, NULL);

        self->change = change_copy (change);
        build (self);
        describe (self);
        corral_run_in_thread (compare, change_copy (change),
                              (GDestroyNotify) corral_task_change_free,
                              (GDestroyNotify) corral_task_diff_free, self->cancellable,
                              on_compared, g_object_ref (self));
        return self;
}

const char *
corral_change_window_get_shown (CorralChangeWindow *self)
{
        g_return_val_if_fail (CORRAL_IS_CHANGE_WINDOW (self), NULL);
        return self->shown;
}

char *
corral_change_window_get_text (CorralChangeWindow *self, const char *which)
{
        GtkWidget *view = g_str_equal (which, "before")  ? self->before_view
                          : g_str_equal (which, "after") ? self->after_view
                                                         : self->unified_view;
        GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (view));
        GtkTextIter start, end;

        gtk_text_buffer_get_bounds (buffer, &start, &end);
        return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

void
corral_change_window_show_side_by_side (CorralChangeWindow *self, gboolean side_by_side)
{
        g_return_if_fail (CORRAL_IS_CHANGE_WINDOW (self));
        gtk_toggle_button_set_active (
                GTK_TOGGLE_BUTTON (side_by_side ? self->split_button : self->unified_button), TRUE);
}
