/* bench-ui-minimal.c — the baseline of bench-ui-startup: the smallest GTK 4 + libadwaita
 * application with a window (header bar, a status page), reporting its first painted frame the
 * way `corral` does with CORRAL_BENCH_SHOWN=1.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <adwaita.h>

static void
on_after_paint (GdkFrameClock *clock, gpointer data)
{
        g_signal_handlers_disconnect_by_func (clock, on_after_paint, data);
        g_print ("shown\n");
        fflush (stdout);
}

static void
on_realize (GtkWidget *window)
{
        g_signal_connect (gtk_widget_get_frame_clock (window), "after-paint",
                          G_CALLBACK (on_after_paint), NULL);
}

static void
on_activate (GtkApplication *app)
{
        GtkWidget *window = adw_application_window_new (app);
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        GtkWidget *page = adw_status_page_new ();

        adw_status_page_set_title (ADW_STATUS_PAGE (page), "Hello");
        gtk_widget_set_vexpand (page, TRUE);
        gtk_box_append (GTK_BOX (box), adw_header_bar_new ());
        gtk_box_append (GTK_BOX (box), page);
        adw_application_window_set_content (ADW_APPLICATION_WINDOW (window), box);
        gtk_window_set_default_size (GTK_WINDOW (window), 1080, 720);
        g_signal_connect (window, "realize", G_CALLBACK (on_realize), NULL);
        gtk_window_present (GTK_WINDOW (window));
}

int
main (int argc, char **argv)
{
        g_autoptr (AdwApplication) app =
                adw_application_new ("org.corral.BenchMinimal", G_APPLICATION_DEFAULT_FLAGS);

        g_signal_connect (app, "activate", G_CALLBACK (on_activate), NULL);
        return g_application_run (G_APPLICATION (app), argc, argv);
}
