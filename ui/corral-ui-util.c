/* corral-ui-util.c — small helpers shared by the widgets.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-ui-util.h"

#include <glib/gi18n.h>
#include <stdlib.h>
#include <string.h>

void
corral_ui_set_accessible_label (GtkWidget *widget, const char *label)
{
        g_return_if_fail (GTK_IS_WIDGET (widget));

        gtk_accessible_update_property (GTK_ACCESSIBLE (widget), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        label, -1);
        if (GTK_IS_BUTTON (widget) && !gtk_button_get_label (GTK_BUTTON (widget)) &&
            !gtk_widget_get_tooltip_text (widget))
                gtk_widget_set_tooltip_text (widget, label);
        if (GTK_IS_MENU_BUTTON (widget) && !gtk_widget_get_tooltip_text (widget))
                gtk_widget_set_tooltip_text (widget, label);
}

GtkWidget *
corral_ui_plain_label (const char *text, gboolean selectable)
{
        GtkWidget *label = gtk_label_new (NULL);

        gtk_label_set_use_markup (GTK_LABEL (label), FALSE);
        gtk_label_set_text (GTK_LABEL (label), text ? text : "");
        gtk_label_set_wrap (GTK_LABEL (label), TRUE);
        gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
        gtk_label_set_xalign (GTK_LABEL (label), 0.0f);
        gtk_label_set_selectable (GTK_LABEL (label), selectable);
        return label;
}

GtkWidget *
corral_ui_warning_new (const char *text)
{
        /* Stacked, not side by side: GTK 4.8 measures a wrapping label beside an icon one
         * pixel differently for different widths. */
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
        GtkWidget *icon = gtk_image_new_from_icon_name ("dialog-warning-symbolic");
        GtkWidget *label = corral_ui_plain_label (text, FALSE);

        gtk_accessible_update_property (GTK_ACCESSIBLE (icon), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                        _ ("Warning"), -1);
        gtk_label_set_xalign (GTK_LABEL (label), 0.5f);
        gtk_label_set_justify (GTK_LABEL (label), GTK_JUSTIFY_CENTER);
        gtk_widget_add_css_class (box, "warning");
        gtk_box_append (GTK_BOX (box), icon);
        gtk_box_append (GTK_BOX (box), label);
        return box;
}

/* The folder as the file server will hold it: links resolved. (transfer full) */
static char *
real_folder (const char *path)
{
        g_autofree char *canonical = g_canonicalize_filename (path, NULL);
        char *real = realpath (canonical, NULL);
        char *out = g_strdup (real ? real : canonical);

        free (real);
        return out;
}

const char *
corral_ui_folder_warning (const char *path)
{
        g_autofree char *folder = NULL, *home = NULL;

        g_return_val_if_fail (path != NULL, NULL);
        folder = real_folder (path);
        home = real_folder (g_get_home_dir ());
        if (g_str_equal (folder, "/"))
                return _ ("This is your whole computer. The assistant will see every file in it "
                          "that you can open, including everything in your home folder. Private "
                          "settings folders, such as those that hold keys and passwords, stay "
                          "hidden. Sharing only the folder the task needs is safer.");
        if (g_str_equal (folder, home))
                return _ ("This is your whole home folder. The assistant will see everything in "
                          "it: documents, photos, downloads and the settings of your programs. "
                          "Private settings folders, such as those that hold keys and passwords, "
                          "stay hidden. Sharing only the folder the task needs is safer.");
        if (g_str_has_prefix (home, folder) && home[strlen (folder)] == '/')
                return _ ("This folder holds your whole home folder. The assistant will see "
                          "everything in it: documents, photos, downloads and the settings of "
                          "your programs. Private settings folders, such as those that hold keys "
                          "and passwords, stay hidden. Sharing only the folder the task needs is "
                          "safer.");
        return NULL;
}

GtkWidget *
corral_ui_list_stack_new (const char *icon_name,
                          const char *title,
                          const char *description,
                          const char *list_label,
                          GtkWidget **ret_list)
{
        GtkWidget *empty = adw_status_page_new ();
        GtkWidget *scroller = gtk_scrolled_window_new ();
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *stack = gtk_stack_new ();
        GtkWidget *list = gtk_list_box_new ();

        adw_status_page_set_icon_name (ADW_STATUS_PAGE (empty), icon_name);
        adw_status_page_set_title (ADW_STATUS_PAGE (empty), title);
        adw_status_page_set_description (ADW_STATUS_PAGE (empty), description);
        gtk_widget_add_css_class (empty, "compact");
        gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
        gtk_widget_add_css_class (list, "boxed-list");
        corral_ui_set_accessible_label (list, list_label);
        gtk_widget_set_margin_start (box, 12);
        gtk_widget_set_margin_end (box, 12);
        gtk_widget_set_margin_top (box, 12);
        gtk_widget_set_margin_bottom (box, 12);
        gtk_box_append (GTK_BOX (box), list);
        gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), box);
        gtk_stack_add_named (GTK_STACK (stack), empty, "empty");
        gtk_stack_add_named (GTK_STACK (stack), scroller, "list");
        *ret_list = list;
        return stack;
}

char *
corral_ui_format_when (gint64 unix_time, gboolean with_time)
{
        g_autoptr (GDateTime) t = g_date_time_new_from_unix_local (unix_time);

        if (!t)
                return g_strdup ("?");
        /* Translators: a date (%x, the locale's) and a time of day, in g_date_time_format()'s
         * format */
        return g_date_time_format (t, with_time ? _ ("%x, %H:%M") : "%x");
}

const char *
corral_ui_key_refused_text (void)
{
        return _ ("The provider did not accept this key. Copy it again, whole, from your "
                  "provider’s website, and paste it here.");
}

CorralLlmProvider *
corral_ui_key_checker_new (CorralLlmProviderKind kind,
                           const char *base_url,
                           const char *key,
                           GError **error)
{
        g_autofree char *env_base = corral_llm_env_base_url (kind);

        return corral_llm_provider_new (
                kind, env_base ? env_base : (base_url && *base_url ? base_url : NULL), key, error);
}
