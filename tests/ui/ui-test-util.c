/* ui-test-util.c — display, waits, widget lookup and screenshots for the UI tests.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "ui-test-util.h"

#include "corral-tasks-page.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static GSubprocess *xvfb;

/* Xvfb goes when this process goes, also when a failed assertion aborts it. */
static void
die_with_parent (gpointer data)
{
        prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static gboolean
start_xvfb (const char *xvfb_path)
{
        int fds[2];
        char buf[16] = { 0 };
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        g_autoptr (GError) error = NULL;
        ssize_t n;

        if (pipe2 (fds, O_CLOEXEC) < 0)
                return FALSE;
        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                              G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        /* The write end becomes the child's fd 3; ours is closed by the launcher. */
        g_subprocess_launcher_take_fd (launcher, fds[1], 3);
        g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
        xvfb = g_subprocess_launcher_spawn (launcher, &error, xvfb_path, "-displayfd", "3",
                                            "-screen", "0", "1280x900x24", "-nolisten", "tcp",
                                            "-noreset", NULL);
        g_clear_object (&launcher);
        if (!xvfb) {
                g_printerr ("# Xvfb: %s\n", error->message);
                close (fds[0]);
                return FALSE;
        }
        /* Xvfb writes the display number, then a newline, once it accepts connections; closing
         * the pipe before the newline makes the second write fail and Xvfb exit. */
        for (gsize got = 0; got < sizeof buf - 1 && !strchr (buf, '\n');) {
                n = read (fds[0], buf + got, sizeof buf - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (gsize) n;
        }
        close (fds[0]);
        if (!buf[0])
                return FALSE;
        g_strstrip (buf);
        {
                g_autofree char *display = g_strdup_printf (":%s", buf);
                g_setenv ("DISPLAY", display, TRUE);
        }
        return TRUE;
}

int
ui_test_setup_display (void)
{
        const char *require = g_getenv ("CORRAL_REQUIRE_UI");
        g_autofree char *xvfb_path = NULL;

        g_setenv ("GSETTINGS_SCHEMA_DIR", CORRAL_BUILD_SCHEMA_DIR, TRUE);
        /* Software rendering: the same pixels on every machine, no GL needed under Xvfb. */
        g_setenv ("GSK_RENDERER", "cairo", TRUE);
        g_setenv ("GDK_DEBUG", "gl-disable", TRUE);
        g_setenv ("GDK_BACKEND", "x11", TRUE);
        g_setenv ("GTK_A11Y", "test", TRUE);
        g_setenv ("NO_AT_BRIDGE", "1", TRUE);
        g_setenv ("GTK_IM_MODULE", "gtk-im-context-simple", TRUE);
        g_unsetenv ("GTK_THEME");
        if (g_getenv ("DISPLAY") && *g_getenv ("DISPLAY"))
                return 0;
        xvfb_path = g_find_program_in_path ("Xvfb");
        if (!xvfb_path) {
                if (require && g_str_equal (require, "1")) {
                        g_printerr ("Xvfb is missing and CORRAL_REQUIRE_UI=1\n");
                        return 1;
                }
                g_print ("1..0 # SKIP no display and no Xvfb (apt install xvfb)\n");
                return 77;
        }
        return start_xvfb (xvfb_path) ? 0 : 1;
}

void
ui_test_teardown_display (void)
{
        if (!xvfb)
                return;
        g_subprocess_send_signal (xvfb, SIGTERM);
        g_subprocess_wait (xvfb, NULL, NULL);
        g_clear_object (&xvfb);
}

static gboolean
on_timeout (gpointer data)
{
        *(gboolean *) data = TRUE;
        return G_SOURCE_REMOVE;
}

gboolean
ui_test_wait (gboolean (*cond) (gpointer data), gpointer data, guint timeout_ms)
{
        gboolean timed_out = FALSE;
        guint id = g_timeout_add (timeout_ms, on_timeout, &timed_out);

        while (!cond (data) && !timed_out)
                g_main_context_iteration (NULL, TRUE);
        if (!timed_out)
                g_source_remove (id);
        return cond (data);
}

static gboolean
never (gpointer data)
{
        return FALSE;
}

void
ui_test_spin (guint ms)
{
        ui_test_wait (never, NULL, ms);
}

static char *
strip_mnemonic (const char *s)
{
        GString *out = g_string_new (NULL);

        for (; s && *s; s++)
                if (*s != '_')
                        g_string_append_c (out, *s);
        return g_string_free (out, FALSE);
}

static gboolean
widget_has_name (GtkWidget *w, const char *name)
{
        g_autofree char *stripped = NULL;

        if (GTK_IS_BUTTON (w) && gtk_button_get_label (GTK_BUTTON (w))) {
                stripped = strip_mnemonic (gtk_button_get_label (GTK_BUTTON (w)));
                if (g_str_equal (stripped, name))
                        return TRUE;
        }
        if (GTK_IS_LABEL (w) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (w)), name) == 0)
                return TRUE;
        if (ADW_IS_PREFERENCES_ROW (w) &&
            g_strcmp0 (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (w)), name) == 0)
                return TRUE;
        if (ADW_IS_STATUS_PAGE (w) &&
            g_strcmp0 (adw_status_page_get_title (ADW_STATUS_PAGE (w)), name) == 0)
                return TRUE;
        if (gtk_test_accessible_has_property (GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_PROPERTY_LABEL)) {
                g_autofree char *diff = gtk_test_accessible_check_property (
                        GTK_ACCESSIBLE (w), GTK_ACCESSIBLE_PROPERTY_LABEL, name);
                if (!diff)
                        return TRUE;
        }
        return FALSE;
}

GtkWidget *
ui_test_find (GtkWidget *root, GtkAccessibleRole role, const char *name)
{
        if (!gtk_widget_get_visible (root) || !gtk_widget_get_child_visible (root))
                return NULL;
        if (gtk_accessible_get_accessible_role (GTK_ACCESSIBLE (root)) == role &&
            widget_has_name (root, name))
                return root;
        for (GtkWidget *c = gtk_widget_get_first_child (root); c;
             c = gtk_widget_get_next_sibling (c)) {
                GtkWidget *found = ui_test_find (c, role, name);
                if (found)
                        return found;
        }
        return NULL;
}

GtkWidget *
ui_test_find_preferences (GtkWindow *window)
{
        GListModel *toplevels = gtk_window_get_toplevels ();

        for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++) {
                g_autoptr (GtkWindow) w = g_list_model_get_item (toplevels, i);

                if (ADW_IS_PREFERENCES_WINDOW (w) && gtk_window_get_transient_for (w) == window)
                        return GTK_WIDGET (w);
        }
        return NULL;
}

GtkWidget *
ui_test_find_message_dialog (const char *heading)
{
        GListModel *toplevels = gtk_window_get_toplevels ();

        for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++) {
                g_autoptr (GtkWindow) w = g_list_model_get_item (toplevels, i);

                if (ADW_IS_MESSAGE_DIALOG (w) && gtk_widget_get_visible (GTK_WIDGET (w)) &&
                    g_strcmp0 (adw_message_dialog_get_heading (ADW_MESSAGE_DIALOG (w)), heading) ==
                            0)
                        return GTK_WIDGET (w);
        }
        return NULL;
}

gboolean
ui_test_row_listed (gpointer data)
{
        void **args = data;
        GtkWidget *page = ui_test_find_type (args[0], CORRAL_TYPE_TASKS_PAGE);

        args[2] = page ? ui_test_find (page, GTK_ACCESSIBLE_ROLE_LIST_ITEM, args[1]) : NULL;
        return args[2] != NULL;
}

GtkWidget *
ui_test_find_type (GtkWidget *root, GType type)
{
        if (G_TYPE_CHECK_INSTANCE_TYPE (root, type))
                return root;
        for (GtkWidget *c = gtk_widget_get_first_child (root); c;
             c = gtk_widget_get_next_sibling (c)) {
                GtkWidget *found = ui_test_find_type (c, type);
                if (found)
                        return found;
        }
        return NULL;
}

static gboolean
has_label_child (GtkWidget *w)
{
        if (GTK_IS_LABEL (w) && *gtk_label_get_text (GTK_LABEL (w)))
                return TRUE;
        for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
                if (has_label_child (c))
                        return TRUE;
        return FALSE;
}

void
ui_test_assert_buttons_named (GtkWidget *root)
{
        /* Like ui_test_find: what is on screen (a closed revealer's child is not). */
        if (!gtk_widget_get_visible (root) || !gtk_widget_get_child_visible (root))
                return;
        if (GTK_IS_BUTTON (root) && !has_label_child (root) &&
            !gtk_test_accessible_has_property (GTK_ACCESSIBLE (root),
                                               GTK_ACCESSIBLE_PROPERTY_LABEL) &&
            !gtk_widget_get_tooltip_text (root) &&
            /* libadwaita's own (row expanders, header bar window controls) are named by it */
            !gtk_widget_has_css_class (gtk_widget_get_parent (root), "windowcontrols") &&
            !GTK_IS_MENU_BUTTON (gtk_widget_get_parent (root)) &&
            /* a spin button's +/- are part of its "spin button" role */
            !GTK_IS_SPIN_BUTTON (gtk_widget_get_parent (root))) {
                g_autofree char *desc =
                        g_strdup_printf ("%s (%s) has no accessible name",
                                         G_OBJECT_TYPE_NAME (root), gtk_widget_get_name (root));
                const char *icon = gtk_button_get_icon_name (GTK_BUTTON (root));

                if (icon && g_str_has_prefix (icon, "window-"))
                        return;
                g_test_message ("%s icon=%s", desc, icon ? icon : "-");
                g_test_fail ();
        }
        for (GtkWidget *c = gtk_widget_get_first_child (root); c;
             c = gtk_widget_get_next_sibling (c))
                ui_test_assert_buttons_named (c);
}

static void
check_render (GdkTexture *texture, const char *name, double *ret_mean)
{
        int w = gdk_texture_get_width (texture), h = gdk_texture_get_height (texture);
        g_autofree guchar *px = g_malloc ((gsize) w * h * 4);
        g_autoptr (GHashTable) colours = g_hash_table_new (g_direct_hash, g_direct_equal);
        double sum = 0, sum2 = 0, var;
        gsize n = (gsize) w * h;

        gdk_texture_download (texture, px, (gsize) w * 4);
        for (gsize i = 0; i < n; i++) {
                const guchar *p = px + i * 4; /* B G R A */
                double y = 0.114 * p[0] + 0.587 * p[1] + 0.299 * p[2];
                guint32 rgb = (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16;

                sum += y;
                sum2 += y * y;
                if (g_hash_table_size (colours) < 4096)
                        g_hash_table_add (colours, GUINT_TO_POINTER (rgb));
        }
        *ret_mean = sum / n;
        var = sum2 / n - *ret_mean * *ret_mean;
        g_test_message ("%s: %dx%d mean %.1f variance %.1f colours %u", name, w, h, *ret_mean, var,
                        g_hash_table_size (colours));
        g_assert_cmpint (w, >=, 200);
        g_assert_cmpint (h, >=, 100);
        g_assert_cmpfloat (var, >, 20.0);
        g_assert_cmpuint (g_hash_table_size (colours), >, 16);
}

GdkTexture *
ui_test_render (GtkWidget *widget)
{
        int w, h;
        g_autoptr (GdkPaintable) paintable = gtk_widget_paintable_new (widget);
        g_autoptr (GskRenderNode) node = NULL;
        GskRenderer *renderer = gtk_native_get_renderer (gtk_widget_get_native (widget));

        /* Let pending layout and drawing happen: the paintable shows the last drawn frame, and
         * nothing before a window's first (a slow build may take seconds to draw it). */
        for (guint tries = 0; !node && tries < 50; tries++) {
                GtkSnapshot *snapshot = gtk_snapshot_new ();

                ui_test_spin (tries ? 100 : 250);
                w = gtk_widget_get_width (widget);
                h = gtk_widget_get_height (widget);
                gdk_paintable_snapshot (paintable, snapshot, w, h);
                node = gtk_snapshot_free_to_node (snapshot);
        }
        g_test_message ("mapped %d, %dx%d", gtk_widget_get_mapped (widget), w, h);
        g_assert_nonnull (renderer);
        g_assert_nonnull (node);
        return gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, w, h));
}

/* The mean of a w x h cell of px (bpp bytes a pixel) at (x, y), channel c. */
static double
cell_mean (const guint8 *px, gsize stride, guint bpp, guint x, guint y, guint w, guint h, guint c)
{
        double sum = 0;

        for (guint j = y; j < y + h; j++)
                for (guint i = x; i < x + w; i++)
                        sum += px[j * stride + i * bpp + c];
        return sum / (w * h);
}

double
ui_test_view_distance (GdkTexture *view, GdkPixbuf *shot, int screen_w, int screen_h)
{
        int vw = gdk_texture_get_width (view), vh = gdk_texture_get_height (view);
        int mw = gdk_pixbuf_get_width (shot), mh = gdk_pixbuf_get_height (shot);
        g_autofree guint8 *vpx = g_malloc ((gsize) vw * vh * 4);
        double scale = MIN ((double) vw / screen_w, (double) vh / screen_h);
        double ox = (vw - screen_w * scale) / 2, oy = (vh - screen_h * scale) / 2, worst = 0;

        gdk_texture_download (view, vpx, (gsize) vw * 4); /* B G R A (cairo's ARGB32) */
        g_test_message ("view %dx%d (scale %.3f), screenshot %dx%d", vw, vh, scale, mw, mh);
        for (guint gy = 0; gy < 20; gy++) {
                for (guint gx = 0; gx < 32; gx++) {
                        /* One cell in screen pixels, and where the view and the shot have it. */
                        double sx0 = screen_w * gx / 32.0, sy0 = screen_h * gy / 20.0;
                        double sw = screen_w / 32.0, sh = screen_h / 20.0;
                        guint vx = (guint) (ox + sx0 * scale) + 1,
                              vy = (guint) (oy + sy0 * scale) + 1;
                        guint vcw = MAX (1, (guint) (sw * scale) - 2),
                              vch = MAX (1, (guint) (sh * scale) - 2);
                        guint mx = (guint) (sx0 * mw / screen_w) + 1,
                              my = (guint) (sy0 * mh / screen_h) + 1;
                        guint mcw = MAX (1, (guint) (sw * mw / screen_w) - 2),
                              mch = MAX (1, (guint) (sh * mh / screen_h) - 2);

                        for (guint c = 0; c < 3; c++) {
                                double v =
                                        cell_mean (vpx, (gsize) vw * 4, 4, vx, vy, vcw, vch, 2 - c);
                                double m = cell_mean (gdk_pixbuf_read_pixels (shot),
                                                      gdk_pixbuf_get_rowstride (shot),
                                                      gdk_pixbuf_get_n_channels (shot), mx, my, mcw,
                                                      mch, c);
                                worst = MAX (worst, ABS (v - m));
                        }
                }
        }
        g_test_message ("largest difference of a cell's mean: %.1f", worst);
        return worst;
}

double
ui_test_screenshot (GtkWidget *widget, const char *name)
{
        g_autoptr (GdkTexture) texture = NULL;
        g_autofree char *dir = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "ui",
                                                 "screenshots", NULL);
        g_autofree char *file = g_strdup_printf ("%s.png", name);
        g_autofree char *path = g_build_filename (dir, file, NULL);
        double mean = 0;

        g_test_message ("%s:", name);
        texture = ui_test_render (widget);
        g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
        g_assert_true (gdk_texture_save_to_png (texture, path));
        g_test_message ("screenshot: %s", path);
        check_render (texture, name, &mean);
        return mean;
}

/* The ASan setup: caches that GTK's libraries keep until exit (fontconfig's configuration, held
 * by pango's font map for the life of the process) are not this code's leaks. Nor is GLib's
 * first quark table, allocated by its constructor (_dl_init): once a process has more than
 * 2,048 quarks (property and signal names of GTK, VTE and libsoup: about 2,100 by the end of
 * this suite) GLib copies the table and, so that readers need no lock, never frees the old one.
 * Debian's libraries have no frame pointers, so that suppression can only match a stack unwound
 * the slow way; that also gives a real leak through g_malloc its whole stack, at about three
 * times the UI suite’s run time. */
const char *__lsan_default_suppressions (void);
const char *
__lsan_default_suppressions (void)
{
        return "leak:libfontconfig.so\nleak:_dl_init\n";
}

const char *__asan_default_options (void);
const char *
__asan_default_options (void)
{
        return "fast_unwind_on_malloc=0";
}
