/* corral-tool-card.c — one tool call in the transcript.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-tool-card.h"

#include <glib/gi18n.h>
#include <math.h>
#include <string.h>

#include "corral-ui-util.h"

typedef enum { CARD_RUNNING, CARD_DONE, CARD_FAILED, CARD_STOPPED } CardState;

struct _CorralToolCard {
        GtkWidget parent_instance;

        char *id;
        char *tool; /* the tool's name, for the words of each state */
        char *title_text;
        char *summary; /* (nullable) the assistant's words for a command */
        char *outcome; /* (nullable) the person's answer to a question */
        gboolean blocked; /* the sandbox refused part of the call */
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

static GtkWidget *build_details (CorralChatTool *tool);

static const char *
tool_icon (const char *tool, const char *title)
{
        if (g_strcmp0 (tool, "shell") == 0)
                return "utilities-terminal-symbolic";
        if (g_strcmp0 (tool, "request_approval") == 0)
                return title && g_str_has_prefix (title, "delete ") ? "user-trash-symbolic"
                                                                    : "network-workgroup-symbolic";
        if (tool && g_str_has_prefix (tool, "mcp"))
                return "application-x-addon-symbolic";
        if (g_strcmp0 (tool, "computer") == 0 || g_strcmp0 (tool, "ask_for_help") == 0)
                return "video-display-symbolic";
        return "text-x-generic-symbolic";
}

/* The file a call is about, by name (its folder is in Details). */
static char *
file_name (const char *path)
{
        return path && *path ? g_path_get_basename (path) : g_strdup ("?");
}

/* A computer action (the loop titles it "computer: ACTION"), in words. */
static const char *
computer_sentence (const char *action, gboolean running)
{
        static const struct {
                const char *prefix, *running, *done;
        } words[] = {
                { "screenshot", N_ ("Looking at the screen"), N_ ("Looked at the screen") },
                { "zoom", N_ ("Looking closely at the screen"),
                  N_ ("Looked closely at the screen") },
                { "cursor_position", N_ ("Finding the pointer"), N_ ("Found the pointer") },
                { "mouse_move", N_ ("Moving the pointer"), N_ ("Moved the pointer") },
                { "left_click_drag", N_ ("Dragging"), N_ ("Dragged") },
                { "left_mouse", N_ ("Pressing the mouse button"), N_ ("Pressed the mouse button") },
                { "", N_ ("Using the screen"), N_ ("Used the screen") },
        };

        if (g_str_has_suffix (action, "click"))
                return running ? _ ("Clicking") : _ ("Clicked");
        if (g_str_equal (action, "type"))
                return running ? _ ("Typing") : _ ("Typed");
        if (g_str_equal (action, "key") || g_str_equal (action, "hold_key"))
                return running ? _ ("Pressing keys") : _ ("Pressed keys");
        if (g_str_equal (action, "scroll"))
                return running ? _ ("Scrolling") : _ ("Scrolled");
        if (g_str_equal (action, "wait"))
                return running ? _ ("Waiting for the screen") : _ ("Waited for the screen");
        for (gsize i = 0; i < G_N_ELEMENTS (words); i++)
                if (g_str_has_prefix (action, words[i].prefix))
                        return _ (running ? words[i].running : words[i].done);
        return NULL;
}

/* What the call did, in a sentence a person understands and the tense its state calls for. */
static char *
sentence (CorralToolCard *self, CardState state)
{
        gboolean running = state == CARD_RUNNING;
        const char *tool = self->tool ? self->tool : "";
        const char *title = self->title_text ? self->title_text : "";
        g_autofree char *name = file_name (title);

        if (g_str_equal (tool, "shell")) {
                if (self->summary)
                        return g_strdup (self->summary);
                if (running)
                        return g_strdup (_ ("Running a command"));
                return g_strdup (state == CARD_FAILED ? _ ("A command did not work")
                                                      : _ ("Ran a command"));
        }
        /* Translators: %s is a file's name, here and below */
        if (g_str_equal (tool, "view"))
                return g_strdup_printf (running ? _ ("Reading %s") : _ ("Read %s"), name);
        if (g_str_equal (tool, "create"))
                return g_strdup_printf (running ? _ ("Writing %s") : _ ("Wrote %s"), name);
        if (g_str_equal (tool, "str_replace") || g_str_equal (tool, "insert"))
                return g_strdup_printf (running ? _ ("Editing %s") : _ ("Edited %s"), name);
        if (g_str_equal (tool, "request_approval")) {
                /* The loop titles a question "delete PATH" or "network HOST". */
                if (g_str_has_prefix (title, "delete ")) {
                        g_autofree char *target = file_name (title + strlen ("delete "));

                        return g_strdup_printf (_ ("Asked to delete %s"), target);
                }
                if (g_str_has_prefix (title, "network "))
                        /* Translators: %s is a host name such as pypi.org */
                        return g_strdup_printf (_ ("Asked to reach %s"),
                                                title + strlen ("network "));
                return g_strdup (_ ("Asked you"));
        }
        if (g_str_equal (tool, "ask_for_help"))
                return g_strdup (running ? _ ("Asking for your help on the screen")
                                         : _ ("Asked for your help on the screen"));
        if (g_str_equal (tool, "computer"))
                return g_strdup (computer_sentence (
                        g_str_has_prefix (title, "computer: ") ? title + strlen ("computer: ") : "",
                        running));
        /* Translators: %s is the name of a tool from a tool server (MCP) */
        return g_strdup_printf (running ? _ ("Using %s") : _ ("Used %s"), tool);
}

/* The line under the sentence: how it went. */
static const char *
state_line (CorralToolCard *self, CardState state)
{
        switch (state) {
        case CARD_RUNNING:
                return _ ("Working…");
        case CARD_FAILED:
                return self->blocked ? _ ("Corral stopped part of it; Details say why")
                                     : _ ("It did not work; Details say why");
        case CARD_STOPPED:
                return _ ("Stopped before it finished");
        case CARD_DONE:
        default:
                if (g_strcmp0 (self->outcome, "denied") == 0)
                        return _ ("You said no");
                return g_strcmp0 (self->outcome, "done") == 0 ? _ ("You allowed it") : _ ("Done");
        }
}

static CardState
state_of (CorralChatTool *tool)
{
        if (!tool->finished)
                return CARD_RUNNING;
        /* A question the person answered no to did what it should: nothing. */
        if (g_strcmp0 (tool->outcome, "denied") == 0)
                return CARD_DONE;
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
                const char *path = items->pdata[i];
                /* The shared folder's name and the path in it, as the person knows them. */
                GtkWidget *text = corral_ui_plain_label (g_str_has_prefix (path, "/workspace/")
                                                                 ? path + strlen ("/workspace/")
                                                                 : path,
                                                         TRUE);

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
        g_autofree char *words = sentence (self, state);
        const char *how = state_line (self, state);
        g_autofree char *a11y = g_strdup_printf ("%s: %s", words, how);

        set_status_icon (self, state);
        gtk_label_set_text (GTK_LABEL (self->title), words);
        gtk_label_set_text (GTK_LABEL (self->subtitle), how);
        gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL, a11y,
                                        -1);
}

static GtkWidget *
build_header (CorralToolCard *self, CorralChatTool *tool)
{
        GtkWidget *header = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 10);
        GtkWidget *texts = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
        GtkWidget *icon = gtk_image_new_from_icon_name (tool_icon (tool->tool, tool->title));
        gtk_widget_add_css_class (header, "tool-header");
        self->subtitle = gtk_label_new (NULL);
        gtk_label_set_xalign (GTK_LABEL (self->subtitle), 0.0f);
        gtk_widget_add_css_class (self->subtitle, "caption");
        gtk_widget_add_css_class (self->subtitle, "dim-label");
        /* The sentence: the assistant's or Corral's words, never the raw command. */
        self->title = corral_ui_plain_label (NULL, TRUE);
        gtk_label_set_ellipsize (GTK_LABEL (self->title), PANGO_ELLIPSIZE_END);
        gtk_label_set_wrap (GTK_LABEL (self->title), FALSE);
        gtk_widget_add_css_class (self->title, "heading");
        gtk_box_append (GTK_BOX (texts), self->title);
        gtk_box_append (GTK_BOX (texts), self->subtitle);
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
        g_free (self->summary);
        g_free (self->outcome);
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
        self->summary = g_strdup (tool->summary);
        gtk_box_append (GTK_BOX (self->box), build_header (self, tool));
        gtk_box_append (GTK_BOX (self->box), self->sections);
        show_state (self, CARD_RUNNING);
        if (tool->finished)
                corral_tool_card_update (self, tool);
        else
                /* What runs, for whoever wants to see it while it does. */
                gtk_box_append (GTK_BOX (self->sections), build_details (tool));
        return GTK_WIDGET (self);
}

/* Paints a ring at (x, y) of pixbuf (RGB or RGBA): red, with a white edge, so that it shows on
 * any picture. */
static void
mark_point (GdkPixbuf *pixbuf, guint x, guint y)
{
        int w = gdk_pixbuf_get_width (pixbuf), h = gdk_pixbuf_get_height (pixbuf);
        int n = gdk_pixbuf_get_n_channels (pixbuf), stride = gdk_pixbuf_get_rowstride (pixbuf);
        guint8 *px = gdk_pixbuf_get_pixels (pixbuf);

        for (int dy = -14; dy <= 14; dy++) {
                for (int dx = -14; dx <= 14; dx++) {
                        int px_x = (int) x + dx, px_y = (int) y + dy;
                        double r = sqrt (dx * dx + dy * dy);
                        guint8 *p;

                        if (px_x < 0 || px_y < 0 || px_x >= w || px_y >= h || r > 13.5 || r < 7.5)
                                continue;
                        p = px + px_y * stride + px_x * n;
                        if (r > 12 || r < 9) /* the edges */
                                p[0] = p[1] = p[2] = 0xff;
                        else {
                                p[0] = 0xe0;
                                p[1] = 0x1b;
                                p[2] = 0x24;
                        }
                }
        }
}

#define THUMBNAIL_WIDTH 480

/* What the assistant saw after a computer action, with where it pointed. */
static GtkWidget *
build_screenshot (CorralChatTool *tool)
{
        g_autoptr (GdkPixbufLoader) loader = gdk_pixbuf_loader_new ();
        g_autoptr (GError) error = NULL;
        g_autoptr (GdkPixbuf) copy = NULL;
        g_autoptr (GdkTexture) texture = NULL;
        GdkPixbuf *pixbuf;
        GtkWidget *picture;
        int w, h;
        double scale;

        if (!gdk_pixbuf_loader_write_bytes (loader, tool->image, &error) ||
            !gdk_pixbuf_loader_close (loader, &error) ||
            !(pixbuf = gdk_pixbuf_loader_get_pixbuf (loader))) {
                g_debug ("a screenshot that cannot be shown: %s", error ? error->message : "");
                return NULL;
        }
        /* A thumbnail (the transcript holds many): 480 pixels wide at most, then the mark, so
         * that it keeps its size. */
        w = gdk_pixbuf_get_width (pixbuf);
        h = gdk_pixbuf_get_height (pixbuf);
        scale = MIN (1.0, THUMBNAIL_WIDTH / (double) w);
        copy = gdk_pixbuf_scale_simple (pixbuf, MAX (1, (int) (w * scale)),
                                        MAX (1, (int) (h * scale)), GDK_INTERP_BILINEAR);
        if (!copy)
                return NULL;
        if (tool->has_point)
                mark_point (copy, (guint) (tool->point_x * scale), (guint) (tool->point_y * scale));
        texture = gdk_texture_new_for_pixbuf (copy);
        picture = gtk_picture_new_for_paintable (GDK_PAINTABLE (texture));
        gtk_picture_set_can_shrink (GTK_PICTURE (picture), TRUE);
        gtk_picture_set_content_fit (GTK_PICTURE (picture), GTK_CONTENT_FIT_CONTAIN);
        gtk_widget_set_halign (picture, GTK_ALIGN_START);
        gtk_widget_add_css_class (picture, "tool-screenshot");
        corral_ui_set_accessible_label (
                picture, tool->has_point ? _ ("What the assistant saw, with where it "
                                              "pointed marked")
                                         : _ ("What the assistant saw"));
        return picture;
}

/* One part of Details: a small heading and selectable text. */
static void
add_detail (GtkWidget *box, const char *heading, const char *text, gboolean code)
{
        GtkWidget *label;

        if (!text || !*text)
                return;
        label = gtk_label_new (heading);
        gtk_label_set_xalign (GTK_LABEL (label), 0.0f);
        gtk_widget_add_css_class (label, "caption-heading");
        gtk_widget_add_css_class (label, "dim-label");
        gtk_box_append (GTK_BOX (box), label);
        label = corral_ui_plain_label (text, TRUE);
        if (code)
                gtk_widget_add_css_class (label, "tool-output");
        gtk_box_append (GTK_BOX (box), label);
}

static char *
join_lines (GPtrArray *items)
{
        g_autoptr (GString) out = g_string_new (NULL);

        for (guint i = 0; items && i < items->len; i++)
                g_string_append_printf (out, "%s%s", i ? "\n" : "", (char *) items->pdata[i]);
        return g_string_free (g_steal_pointer (&out), FALSE);
}

/* What the assistant ran and read, for whoever wants it: the command, its exit status, the
 * output or result as the model got it, the network requests and the sandbox's refusals. */
static GtkWidget *
build_details (CorralChatTool *tool)
{
        GtkWidget *expander = gtk_expander_new (_ ("Details"));
        GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
        g_autofree char *status = NULL, *network = NULL, *blocked = NULL;

        gtk_widget_add_css_class (expander, "tool-section");
        if (tool->command) {
                add_detail (box, _ ("Command"), tool->command, TRUE);
                if (tool->exit_code >= 0)
                        /* Translators: %d is a command's exit status */
                        status = g_strdup_printf (_ ("Exit status %d"), tool->exit_code);
                else if (tool->finished)
                        status = g_strdup (_ ("Ended without an exit status (stopped or killed)"));
                add_detail (box, _ ("Result"), status, FALSE);
                add_detail (box, _ ("Output"), tool->output, TRUE);
        } else {
                if (tool->title && !g_str_equal (tool->tool, "request_approval"))
                        add_detail (box, _ ("About"), tool->title, TRUE);
                add_detail (box, _ ("What the assistant was told"), tool->output, TRUE);
        }
        network = join_lines (tool->network);
        add_detail (box, _ ("Network"), network, TRUE);
        blocked = join_lines (tool->blocked);
        add_detail (box, _ ("Blocked by the sandbox"), blocked, TRUE);
        gtk_expander_set_child (GTK_EXPANDER (expander), box);
        return expander;
}

void
corral_tool_card_update (CorralToolCard *self, CorralChatTool *tool)
{
        GtkWidget *child;

        g_return_if_fail (CORRAL_IS_TOOL_CARD (self));

        self->blocked = tool->blocked->len > 0;
        g_free (self->summary);
        self->summary = g_strdup (tool->summary);
        g_free (self->outcome);
        self->outcome = g_strdup (tool->outcome);
        show_state (self, state_of (tool));
        while ((child = gtk_widget_get_first_child (self->sections)))
                gtk_box_remove (GTK_BOX (self->sections), child);
        /* The files are the person's: shown as they are. The rest is in Details. */
        add_section (self, _ ("Files read"), "document-open-symbolic", tool->files_read);
        add_section (self, _ ("Files changed"), "document-edit-symbolic", tool->files_changed);
        if (tool->image) {
                GtkWidget *shot = build_screenshot (tool);

                if (shot) {
                        gtk_widget_set_margin_start (shot, 12);
                        gtk_widget_set_margin_end (shot, 12);
                        gtk_box_append (GTK_BOX (self->sections), shot);
                }
        }
        gtk_box_append (GTK_BOX (self->sections), build_details (tool));
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
