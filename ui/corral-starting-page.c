/* corral-starting-page.c — staged progress and the error page.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-starting-page.h"

#include <glib/gi18n.h>

#include "corral-ui-util.h"

struct _CorralStartingPage {
        GtkWidget parent_instance;

        GtkWidget *stack; /* "progress", "error" */
        GtkWidget *status;
        GtkWidget *bar;
        GtkWidget *rows[CORRAL_LAUNCH_N_STAGES];
        GtkWidget *icons[CORRAL_LAUNCH_N_STAGES];
        GtkWidget *error_page;
        GtkWidget *error_detail;
        CorralLaunchStage stage;
        gboolean failed;
        guint pulse_id;
        gint64 build_started; /* when the image build reported its first step, or 0 */
};

G_DEFINE_FINAL_TYPE (CorralStartingPage, corral_starting_page, GTK_TYPE_WIDGET)

enum { SIGNAL_RETRY, SIGNAL_BACK, N_SIGNALS };
static guint signals[N_SIGNALS];

/* building: the image is being built (it reports steps with a fraction), not only checked. */
static const char *
stage_text (CorralLaunchStage stage, gboolean building)
{
        switch (stage) {
        case CORRAL_LAUNCH_STAGE_PREPARE:
                return _ ("Preparing a safe workspace…");
        case CORRAL_LAUNCH_STAGE_IMAGE:
                return building ? _ ("Building the workspace (only the first time)…")
                                : _ ("Checking the workspace…");
        case CORRAL_LAUNCH_STAGE_BOOT:
                return _ ("Starting the workspace…");
        case CORRAL_LAUNCH_STAGE_SHARE:
                return _ ("Sharing your folder…");
        case CORRAL_LAUNCH_STAGE_CONNECT:
        default:
                return _ ("Waiting for the workspace to answer…");
        }
}

static gboolean
on_pulse (gpointer user_data)
{
        gtk_progress_bar_pulse (GTK_PROGRESS_BAR (CORRAL_STARTING_PAGE (user_data)->bar));
        return G_SOURCE_CONTINUE;
}

static void
set_pulsing (CorralStartingPage *self, gboolean pulsing)
{
        if (pulsing && !self->pulse_id)
                self->pulse_id = g_timeout_add (120, on_pulse, self);
        else if (!pulsing)
                g_clear_handle_id (&self->pulse_id, g_source_remove);
}

static void
update_rows (CorralStartingPage *self)
{
        for (guint i = 0; i < CORRAL_LAUNCH_N_STAGES; i++) {
                gboolean done = i < self->stage;
                gboolean current = i == self->stage;

                gtk_image_set_from_icon_name (GTK_IMAGE (self->icons[i]),
                                              done      ? "object-select-symbolic"
                                              : current ? "media-playback-start-symbolic"
                                                        : "content-loading-symbolic");
                if (done)
                        gtk_widget_add_css_class (self->rows[i], "done");
                else
                        gtk_widget_remove_css_class (self->rows[i], "done");
                gtk_widget_set_opacity (self->rows[i], done || current ? 1.0 : 0.55);
        }
}

/* An estimate from the pace so far, once there is one to go by: "About 3 minutes left". */
static char *
time_left (CorralStartingPage *self, double fraction)
{
        double elapsed = (double) (g_get_monotonic_time () - self->build_started) / G_USEC_PER_SEC;
        guint minutes;

        if (fraction < 0.1 || fraction >= 1.0 || elapsed < 5)
                return NULL;
        minutes = (guint) (elapsed * (1.0 - fraction) / fraction / 60.0 + 0.5);
        if (minutes < 1)
                return g_strdup (_ ("Less than a minute left"));
        return g_strdup_printf (ngettext ("About %u minute left", "About %u minutes left", minutes),
                                minutes);
}

void
corral_starting_page_set_progress (CorralStartingPage *self,
                                   CorralLaunchStage stage,
                                   double fraction,
                                   const char *detail)
{
        g_return_if_fail (CORRAL_IS_STARTING_PAGE (self));
        g_return_if_fail (stage < CORRAL_LAUNCH_N_STAGES);

        gboolean building = stage == CORRAL_LAUNCH_STAGE_IMAGE && fraction >= 0;
        g_autofree char *left = NULL;
        g_autofree char *text = NULL;
        g_autofree char *escaped = NULL;

        if (building && !self->build_started)
                self->build_started = g_get_monotonic_time ();
        if (building)
                left = time_left (self, fraction);
        self->stage = stage;
        adw_status_page_set_title (ADW_STATUS_PAGE (self->status), stage_text (stage, building));
        text = g_strjoin (left && detail ? "\n" : "", detail ? detail : "", left ? left : "", NULL);
        escaped = g_markup_escape_text (text, -1);
        adw_status_page_set_description (ADW_STATUS_PAGE (self->status), escaped);
        set_pulsing (self, fraction < 0);
        if (fraction >= 0)
                gtk_progress_bar_set_fraction (GTK_PROGRESS_BAR (self->bar), fraction);
        update_rows (self);
}

void
corral_starting_page_reset (CorralStartingPage *self)
{
        g_return_if_fail (CORRAL_IS_STARTING_PAGE (self));
        self->failed = FALSE;
        self->build_started = 0;
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "progress");
        corral_starting_page_set_progress (self, CORRAL_LAUNCH_STAGE_PREPARE, -1.0, NULL);
}

void
corral_starting_page_show_error (CorralStartingPage *self, const GError *error)
{
        g_autofree char *title = NULL;
        g_autofree char *hint = NULL;
        g_autofree char *escaped = NULL;

        g_return_if_fail (CORRAL_IS_STARTING_PAGE (self));
        corral_launch_error_explain (error, &title, &hint);
        escaped = g_markup_escape_text (hint, -1);
        self->failed = TRUE;
        set_pulsing (self, FALSE);
        adw_status_page_set_title (ADW_STATUS_PAGE (self->error_page), title);
        adw_status_page_set_description (ADW_STATUS_PAGE (self->error_page), escaped);
        gtk_label_set_text (GTK_LABEL (self->error_detail), error->message);
        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), "error");
}

CorralLaunchStage
corral_starting_page_get_stage (CorralStartingPage *self)
{
        return self->stage;
}

gboolean
corral_starting_page_get_failed (CorralStartingPage *self)
{
        return self->failed;
}

static GtkWidget *
build_progress (CorralStartingPage *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 18);
        GtkWidget *list = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
        GtkWidget *clamp = adw_clamp_new ();
        static const char *const names[] = {
                N_ ("Prepare"),     N_ ("Workspace image"), N_ ("Start"),
                N_ ("Your folder"), N_ ("Connect"),
        };

        self->status = adw_status_page_new ();
        adw_status_page_set_icon_name (ADW_STATUS_PAGE (self->status), "org.corral.Corral");
        self->bar = gtk_progress_bar_new ();
        corral_ui_set_accessible_label (self->bar, _ ("Progress"));
        gtk_box_append (GTK_BOX (box), self->bar);
        gtk_widget_set_halign (list, GTK_ALIGN_CENTER);
        for (guint i = 0; i < CORRAL_LAUNCH_N_STAGES; i++) {
                GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);

                self->icons[i] = gtk_image_new ();
                gtk_box_append (GTK_BOX (row), self->icons[i]);
                gtk_box_append (GTK_BOX (row), gtk_label_new (_ (names[i])));
                gtk_widget_add_css_class (row, "stage-row");
                self->rows[i] = row;
                gtk_box_append (GTK_BOX (list), row);
        }
        gtk_box_append (GTK_BOX (box), list);
        adw_clamp_set_maximum_size (ADW_CLAMP (clamp), 360);
        adw_clamp_set_child (ADW_CLAMP (clamp), box);
        adw_status_page_set_child (ADW_STATUS_PAGE (self->status), clamp);
        return self->status;
}

static GtkWidget *
build_error (CorralStartingPage *self)
{
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
        GtkWidget *buttons = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
        GtkWidget *retry = gtk_button_new_with_mnemonic (_ ("_Try Again"));
        GtkWidget *back = gtk_button_new_with_mnemonic (_ ("_Back"));
        GtkWidget *expander = gtk_expander_new (_ ("Details"));
        GtkWidget *clamp = adw_clamp_new ();

        self->error_page = adw_status_page_new ();
        adw_status_page_set_icon_name (ADW_STATUS_PAGE (self->error_page), "dialog-error-symbolic");
        gtk_widget_add_css_class (retry, "pill");
        gtk_widget_add_css_class (retry, "suggested-action");
        gtk_widget_add_css_class (back, "pill");
        gtk_widget_set_halign (buttons, GTK_ALIGN_CENTER);
        gtk_box_append (GTK_BOX (buttons), back);
        gtk_box_append (GTK_BOX (buttons), retry);
        self->error_detail = corral_ui_plain_label ("", TRUE);
        gtk_widget_add_css_class (self->error_detail, "monospace");
        gtk_widget_add_css_class (self->error_detail, "dim-label");
        gtk_expander_set_child (GTK_EXPANDER (expander), self->error_detail);
        gtk_box_append (GTK_BOX (box), buttons);
        gtk_box_append (GTK_BOX (box), expander);
        adw_clamp_set_maximum_size (ADW_CLAMP (clamp), 520);
        adw_clamp_set_child (ADW_CLAMP (clamp), box);
        adw_status_page_set_child (ADW_STATUS_PAGE (self->error_page), clamp);
        g_object_set_data (G_OBJECT (self), "retry-button", retry);
        g_object_set_data (G_OBJECT (self), "back-button", back);
        return self->error_page;
}

static void
on_retry (CorralStartingPage *self)
{
        g_signal_emit (self, signals[SIGNAL_RETRY], 0);
}

static void
on_back (CorralStartingPage *self)
{
        g_signal_emit (self, signals[SIGNAL_BACK], 0);
}

static void
corral_starting_page_dispose (GObject *object)
{
        CorralStartingPage *self = CORRAL_STARTING_PAGE (object);

        set_pulsing (self, FALSE);
        g_clear_pointer (&self->stack, gtk_widget_unparent);
        G_OBJECT_CLASS (corral_starting_page_parent_class)->dispose (object);
}

static void
corral_starting_page_class_init (CorralStartingPageClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_starting_page_dispose;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        signals[SIGNAL_RETRY] = g_signal_new ("retry", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                              0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_BACK] = g_signal_new ("back", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                             0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
corral_starting_page_init (CorralStartingPage *self)
{
        self->stack = gtk_stack_new ();
        gtk_stack_add_named (GTK_STACK (self->stack), build_progress (self), "progress");
        gtk_stack_add_named (GTK_STACK (self->stack), build_error (self), "error");
        gtk_widget_set_parent (self->stack, GTK_WIDGET (self));
        g_signal_connect_swapped (g_object_get_data (G_OBJECT (self), "retry-button"), "clicked",
                                  G_CALLBACK (on_retry), self);
        g_signal_connect_swapped (g_object_get_data (G_OBJECT (self), "back-button"), "clicked",
                                  G_CALLBACK (on_back), self);
        corral_starting_page_reset (self);
}

GtkWidget *
corral_starting_page_new (void)
{
        return g_object_new (CORRAL_TYPE_STARTING_PAGE, NULL);
}
