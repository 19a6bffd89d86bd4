/* corral-tool-card.c — one tool call in the transcript.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-tool-card.h"

#include <glib/gi18n.h>
#include <string.h>

#include "corral-ui-util.h"

typedef enum { CARD_RUNNING, CARD_DONE, CARD_FAILED, CARD_STOPPED } CardState;

struct _CorralToolCard {
        GtkWidget parent_instance;

        char *id;
        char *tool; /* the tool's name, for the words of each state */
        char *title_text;
        CardState state; /* running until the call finishes or the task stops it */
        GtkWidget *box;
        GtkWidget *status; /* spinner, then an icon */
        GtkWidget *status_box;
        GtkWidget *title;
        GtkWidget *subtitle;
        GtkWidget *details; /* GtkExpander with output */
        GtkWidget *sections;
};

G_DEFINE_FINAL_TYPE (CorralToolCard, corral_tool_card, GTK_TYPE_WIDGET)

static const char *
tool_icon (const char *tool)
{
        if (g_strcmp0 (tool, "shell") == 0)
                return "utilities-terminal-symbolic";
        if (g_strcmp0 (tool, "delete") == 0)
                return "user-trash-symbolic";
        if (tool && g_str_has_prefix (tool, "mcp"))
                return "application-x-addon-symbolic";
        return "text-x-generic-symbolic";
}

/* What the call is, in the tense its state calls for. */
static char *
tool_kind_text (const char *tool, CardState state)
{
        gboolean running = state == CARD_RUNNING;

        if (state == CARD_STOPPED)
                return g_strdup (_ ("Stopped before it finished"));
        if (g_strcmp0 (tool, "shell") == 0) {
                if (state == CARD_FAILED)
                        return g_strdup (_ ("Command failed"));
                return g_strdup (running ? _ ("Running a command") : _ ("Ran a command"));
        }
        if (g_strcmp0 (tool, "create_file") == 0)
                return g_strdup (running ? _ ("Writing a file") : _ ("Wrote a file"));
        if (g_strcmp0 (tool, "view_file") == 0)
                return g_strdup (running ? _ ("Reading a file") : _ ("Read a file"));
        if (g_strcmp0 (tool, "delete") == 0)
                return g_strdup (running ? _ ("Deleting a file") : _ ("Deleted a file"));
        if (running)
                /* Translators: %s is the name of a tool the assistant uses */
                return g_strdup_printf (_ ("Using %s"), tool ? tool : "?");
        /* Translators: %s is the name of a tool the assistant used */
        return g_strdup_printf (_ ("Used %s"), tool ? tool : "?");
}

static CardState
state_of (CorralChatTool *tool)
{
        if (!tool->finished)
                return CARD_RUNNING;
        /* A command that exited with a status other than 0 or was killed (-1) failed, whatever
         * the tool call's own result says. */
        if (tool->is_error || tool->blocked->len > 0 || (tool->command && tool->exit_code != 0))
                return CARD_FAILED;
        return CARD_DONE;
}

static void
add_section (CorralToolCard *self, const char *heading, const char *icon, GPtrArray *items)
{
        GtkWidget *box, *label;

        if (!items || items->len == 0)
                return;
        box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
        gtk_widget_add_css_class (box, "tool-section");
        label = gtk_label_new (heading);
        gtk_label_set_xalign (GTK_LABEL (label), 0.0f);
        gtk_widget_add_css_class (label, "caption-heading");
        gtk_widget_add_css_class (label, "dim-label");
        gtk_box_append (GTK_BOX (box), label);
        for (guint i = 0; i < items->len; i++) {
                GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
                GtkWidget *img = gtk_image_new_from_icon_name (icon);
                GtkWidget *text = corral_ui_plain_label (items->pdata[i], TRUE);

                gtk_widget_set_hexpand (text, TRUE);
                gtk_box_append (GTK_BOX (row), img);
                gtk_box_append (GTK_BOX (row), text);
                gtk_box_append (GTK_BOX (box), row);
        }
        gtk_box_append (GTK_BOX (self->sections), box);
}

static void
set_status_icon (CorralToolCard *self, CardState state)
{
        GtkWidget *img;
        const char *a11y;

        self->state = state;
        if (self->status)
                gtk_box_remove (GTK_BOX (self->status_box), self->status);
        switch (state) {
        case CARD_RUNNING:
                self->status = gtk_spinner_new ();
                gtk_spinner_start (GTK_SPINNER (self->status));
                corral_ui_set_accessible_label (self->status, _ ("Running"));
                gtk_box_append (GTK_BOX (self->status_box), self->status);
                return;
        case CARD_FAILED:
                img = gtk_image_new_from_icon_name ("dialog-warning-symbolic");
                gtk_widget_add_css_class (img, "warning");
                a11y = _ ("Did not succeed");
                break;
        case CARD_STOPPED:
                img = gtk_image_new_from_icon_name ("media-playback-stop-symbolic");
                gtk_widget_add_css_class (img, "dim-label");
                a11y = _ ("Stopped");
                break;
        case CARD_DONE:
        default:
                img = gtk_image_new_from_icon_name ("object-select-symbolic");
                gtk_widget_add_css_class (img, "success");
                a11y = _ ("Done");
                break;
        }
        gtk_accessible_update_property (GTK_ACCESSIBLE (img), GTK_ACCESSIBLE_PROPERTY_LABEL, a11y,
                                        -1);
        self->status = img;
        gtk_box_append (GTK_BOX (self->status_box), img);
}

/* The icon, the line above the title and the card's accessible name, for state. */
static void
show_state (CorralToolCard *self, CardState state)
{
        g_autofree char *kind = tool_kind_text (self->tool, state);
        g_autofree char *a11y = g_strdup_printf ("%s: %s", kind, self->title_text);

        set_status_icon (self, state);
        gtk_label_set_text (GTK_LABEL (self->subtitle), kind);
        gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL, a11y,
                                        -1);
}

static GtkWidget *
build_header (CorralToolCard *self, CorralChatTool *tool)
{
        GtkWidget *header = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 10);
        GtkWidget *texts = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
        GtkWidget *icon = gtk_image_new_from_icon_name (tool_icon (tool->tool));
        gtk_widget_add_css_class (header, "tool-header");
        self->subtitle = gtk_label_new (NULL);
        gtk_label_set_xalign (GTK_LABEL (self->subtitle), 0.0f);
        gtk_widget_add_css_class (self->subtitle, "caption");
        gtk_widget_add_css_class (self->subtitle, "dim-label");
        self->title = corral_ui_plain_label (tool->title, TRUE);
        gtk_label_set_ellipsize (GTK_LABEL (self->title), PANGO_ELLIPSIZE_MIDDLE);
        gtk_label_set_wrap (GTK_LABEL (self->title), FALSE);
        if (tool->command)
                gtk_widget_add_css_class (self->title, "monospace");
        gtk_widget_add_css_class (self->title, "heading");
        gtk_box_append (GTK_BOX (texts), self->subtitle);
        gtk_box_append (GTK_BOX (texts), self->title);
        gtk_widget_set_hexpand (texts, TRUE);
        self->status_box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 0);
        gtk_widget_set_valign (self->status_box, GTK_ALIGN_CENTER);
        gtk_box_append (GTK_BOX (header), icon);
        gtk_box_append (GTK_BOX (header), texts);
        gtk_box_append (GTK_BOX (header), self->status_box);
        return header;
}

static void
corral_tool_card_dispose (GObject *object)
{
        CorralToolCard *self = CORRAL_TOOL_CARD (object);

        g_clear_pointer (&self->box, gtk_widget_unparent);
        G_OBJECT_CLASS (corral_tool_card_parent_class)->dispose (object);
}

static void
corral_tool_card_finalize (GObject *object)
{
        CorralToolCard *self = CORRAL_TOOL_CARD (object);

        g_free (self->id);
        g_free (self->tool);
        g_free (self->title_text);
        G_OBJECT_CLASS (corral_tool_card_parent_class)->finalize (object);
}

static void
corral_tool_card_class_init (CorralToolCardClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_tool_card_dispose;
        G_OBJECT_CLASS (klass)->finalize = corral_tool_card_finalize;
        gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
        gtk_widget_class_set_css_name (widget_class, "toolcard");
        gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_GROUP);
}

static void
corral_tool_card_init (CorralToolCard *self)
{
        self->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
        gtk_widget_add_css_class (self->box, "card");
        gtk_widget_add_css_class (self->box, "tool-card");
        gtk_widget_set_parent (self->box, GTK_WIDGET (self));
        self->sections = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
}

GtkWidget *
corral_tool_card_new (CorralChatTool *tool)
{
        CorralToolCard *self = g_object_new (CORRAL_TYPE_TOOL_CARD, NULL);

        self->id = g_strdup (tool->id);
        self->tool = g_strdup (tool->tool);
        self->title_text = g_strdup (tool->title);
        gtk_box_append (GTK_BOX (self->box), build_header (self, tool));
        gtk_box_append (GTK_BOX (self->box), self->sections);
        show_state (self, CARD_RUNNING);
        if (tool->finished)
                corral_tool_card_update (self, tool);
        return GTK_WIDGET (self);
}

static GtkWidget *
build_output (CorralChatTool *tool)
{
        GtkWidget *expander, *label;
        g_autofree char *heading = NULL;

        if (tool->command && tool->exit_code >= 0)
                /* Translators: %d is a command's exit status */
                heading = g_strdup_printf (_ ("Output (exit status %d)"), tool->exit_code);
        else
                heading = g_strdup (_ ("Result"));
        expander = gtk_expander_new (heading);
        gtk_widget_add_css_class (expander, "tool-section");
        label = corral_ui_plain_label (tool->output, TRUE);
        gtk_widget_add_css_class (label, "tool-output");
        gtk_expander_set_child (GTK_EXPANDER (expander), label);
        /* Short results and failures are shown open; long output stays folded. */
        gtk_expander_set_expanded (GTK_EXPANDER (expander),
                                   tool->is_error || strlen (tool->output) < 400);
        return expander;
}

void
corral_tool_card_update (CorralToolCard *self, CorralChatTool *tool)
{
        GtkWidget *child;

        g_return_if_fail (CORRAL_IS_TOOL_CARD (self));

        show_state (self, state_of (tool));
        while ((child = gtk_widget_get_first_child (self->sections)))
                gtk_box_remove (GTK_BOX (self->sections), child);
        if (tool->output && *tool->output)
                gtk_box_append (GTK_BOX (self->sections), build_output (tool));
        add_section (self, _ ("Files read"), "document-open-symbolic", tool->files_read);
        add_section (self, _ ("Files changed"), "document-edit-symbolic", tool->files_changed);
        add_section (self, _ ("Network"), "network-transmit-receive-symbolic", tool->network);
        add_section (self, _ ("Blocked by the sandbox"), "action-unavailable-symbolic",
                     tool->blocked);
        gtk_widget_set_margin_bottom (self->sections,
                                      gtk_widget_get_first_child (self->sections) ? 6 : 0);
}

const char *
corral_tool_card_get_id (CorralToolCard *self)
{
        return self->id;
}

gboolean
corral_tool_card_get_finished (CorralToolCard *self)
{
        return self->state != CARD_RUNNING;
}

void
corral_tool_card_stop (CorralToolCard *self)
{
        g_return_if_fail (CORRAL_IS_TOOL_CARD (self));

        if (self->state == CARD_RUNNING)
                show_state (self, CARD_STOPPED);
}

const char *
corral_tool_card_get_state (CorralToolCard *self)
{
        static const char *const names[] = { "running", "done", "failed", "stopped" };

        g_return_val_if_fail (CORRAL_IS_TOOL_CARD (self), NULL);
        return names[self->state];
}
