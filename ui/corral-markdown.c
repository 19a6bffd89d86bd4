/* corral-markdown.c — see corral-markdown.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-markdown.h"

#include "assistant-text.h"

#include <adwaita.h>
#include <cmark.h>
#include <glib/gi18n.h>
#include <string.h>

/* Deeper nesting is flattened (a hostile reply could nest thousands of lists). */
#define MAX_DEPTH 16

typedef struct {
        GString *out;
        /* Per open list: its next number (0 for bullets) and whether it is tight. */
        int number[MAX_DEPTH];
        gboolean tight[MAX_DEPTH];
        int lists;
} Render;

static void
escape (Render *r, const char *text)
{
        g_autofree char *escaped = NULL;

        if (!text)
                return;
        escaped = g_markup_escape_text (text, -1);
        g_string_append (r->out, escaped);
}

static gboolean
link_allowed (const char *url)
{
        g_autofree char *scheme = url ? g_uri_parse_scheme (url) : NULL;

        return scheme && (g_ascii_strcasecmp (scheme, "http") == 0 ||
                          g_ascii_strcasecmp (scheme, "https") == 0 ||
                          g_ascii_strcasecmp (scheme, "mailto") == 0);
}

/* Blocks are separated by a blank line, or by a line break inside a tight list. */
static void
block_break (Render *r, cmark_node *node)
{
        gboolean in_tight = r->lists > 0 && r->lists <= MAX_DEPTH && r->tight[r->lists - 1];

        if (!cmark_node_previous (node) || r->out->len == 0)
                return;
        g_string_append (r->out, in_tight ? "\n" : "\n\n");
}

static void
enter (Render *r, cmark_node *node)
{
        cmark_node_type type = cmark_node_get_type (node);

        switch (type) {
        case CMARK_NODE_PARAGRAPH:
                /* The first paragraph of a list item follows its bullet. */
                if (cmark_node_get_type (cmark_node_parent (node)) != CMARK_NODE_ITEM ||
                    cmark_node_previous (node))
                        block_break (r, node);
                break;
        case CMARK_NODE_HEADING:
                block_break (r, node);
                g_string_append (r->out, cmark_node_get_heading_level (node) <= 2
                                                 ? "<span weight=\"bold\" size=\"x-large\">"
                                                 : "<span weight=\"bold\" size=\"large\">");
                break;
        case CMARK_NODE_BLOCK_QUOTE:
                block_break (r, node);
                g_string_append (r->out, "<i>");
                break;
        case CMARK_NODE_LIST:
                block_break (r, node);
                if (r->lists < MAX_DEPTH) {
                        r->number[r->lists] = cmark_node_get_list_type (node) == CMARK_ORDERED_LIST
                                                      ? cmark_node_get_list_start (node)
                                                      : 0;
                        r->tight[r->lists] = cmark_node_get_list_tight (node);
                }
                r->lists++;
                break;
        case CMARK_NODE_ITEM: {
                int level = MIN (r->lists, MAX_DEPTH) - 1;

                if (cmark_node_previous (node))
                        g_string_append (r->out, level >= 0 && r->tight[level] ? "\n" : "\n\n");
                for (int i = 0; i < level; i++)
                        g_string_append (r->out, "    ");
                if (level >= 0 && r->number[level] > 0)
                        g_string_append_printf (r->out, "%d. ", r->number[level]++);
                else
                        g_string_append (r->out, "• ");
                break;
        }
        case CMARK_NODE_CODE_BLOCK:
                block_break (r, node);
                {
                        g_autofree char *code = g_strdup (cmark_node_get_literal (node));

                        g_strchomp (code);
                        g_string_append (r->out, "<tt>");
                        escape (r, code);
                        g_string_append (r->out, "</tt>");
                }
                break;
        case CMARK_NODE_HTML_BLOCK:
                block_break (r, node);
                {
                        g_autofree char *html = g_strdup (cmark_node_get_literal (node));

                        g_strchomp (html);
                        escape (r, html);
                }
                break;
        case CMARK_NODE_THEMATIC_BREAK:
                block_break (r, node);
                g_string_append (r->out, "――――――――");
                break;
        case CMARK_NODE_TEXT:
        case CMARK_NODE_HTML_INLINE:
                escape (r, cmark_node_get_literal (node));
                break;
        case CMARK_NODE_CODE:
                g_string_append (r->out, "<tt>");
                escape (r, cmark_node_get_literal (node));
                g_string_append (r->out, "</tt>");
                break;
        case CMARK_NODE_SOFTBREAK:
        case CMARK_NODE_LINEBREAK:
                /* The model's lines as it wrote them. */
                g_string_append_c (r->out, '\n');
                break;
        case CMARK_NODE_EMPH:
                g_string_append (r->out, "<i>");
                break;
        case CMARK_NODE_STRONG:
                g_string_append (r->out, "<b>");
                break;
        case CMARK_NODE_LINK:
                if (link_allowed (cmark_node_get_url (node))) {
                        g_autofree char *url = g_markup_escape_text (cmark_node_get_url (node), -1);

                        g_string_append_printf (r->out, "<a href=\"%s\">", url);
                }
                break;
        case CMARK_NODE_IMAGE:
                /* Never loaded: its description stands in its place. */
                break;
        case CMARK_NODE_DOCUMENT:
        case CMARK_NODE_CUSTOM_BLOCK:
        case CMARK_NODE_CUSTOM_INLINE:
        case CMARK_NODE_NONE:
        default:
                break;
        }
}

static void
leave (Render *r, cmark_node *node)
{
        switch (cmark_node_get_type (node)) {
        case CMARK_NODE_HEADING:
                g_string_append (r->out, "</span>");
                break;
        case CMARK_NODE_BLOCK_QUOTE:
        case CMARK_NODE_EMPH:
                g_string_append (r->out, "</i>");
                break;
        case CMARK_NODE_STRONG:
                g_string_append (r->out, "</b>");
                break;
        case CMARK_NODE_LIST:
                r->lists--;
                break;
        case CMARK_NODE_LINK:
                if (link_allowed (cmark_node_get_url (node)))
                        g_string_append (r->out, "</a>");
                break;
        default:
                break;
        }
}

char *
corral_markdown_to_pango (const char *text, gssize len)
{
        g_autofree char *valid = NULL, *clean = NULL;
        Render r = { .out = g_string_new (NULL) };
        cmark_node *doc;
        cmark_iter *iter;
        cmark_event_type ev;

        g_return_val_if_fail (text != NULL || len == 0, NULL);
        /* Line breaks and tabs stay; other control characters and the bidi controls that could
         * make the text read otherwise than it is go, as on corralctl's terminal. */
        valid = g_utf8_make_valid (text ? text : "", len);
        clean = assistant_text_for_terminal (valid);
        doc = cmark_parse_document (clean, strlen (clean), CMARK_OPT_DEFAULT);
        iter = cmark_iter_new (doc);
        while ((ev = cmark_iter_next (iter)) != CMARK_EVENT_DONE) {
                cmark_node *node = cmark_iter_get_node (iter);

                if (ev == CMARK_EVENT_ENTER)
                        enter (&r, node);
                else if (ev == CMARK_EVENT_EXIT)
                        leave (&r, node);
        }
        cmark_iter_free (iter);
        cmark_node_free (doc);
        return g_string_free (r.out, FALSE);
}

static void
on_link_response (AdwMessageDialog *dialog, const char *response, GtkWidget *label)
{
        const char *uri = g_object_get_data (G_OBJECT (dialog), "uri");
        GtkRoot *root = gtk_widget_get_root (label);

        if (g_str_equal (response, "open"))
                gtk_show_uri (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, uri,
                              GDK_CURRENT_TIME);
}

gboolean
corral_markdown_confirm_link (GtkLabel *label, const char *uri, gpointer user_data)
{
        GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (label));
        GtkWidget *dialog;

        /* Only what the renderer wrote as a link; anything else is not opened at all. */
        if (!link_allowed (uri))
                return TRUE;
        dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                         _ ("Open This Link?"), NULL);
        /* The address as it is, not the words the assistant put on it. */
        adw_message_dialog_format_body (ADW_MESSAGE_DIALOG (dialog),
                                        _ ("The assistant’s reply links to %s. It opens in your "
                                           "browser, outside the task’s workspace."),
                                        uri);
        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _ ("_Cancel"),
                                          "open", _ ("_Open Link"), NULL);
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        g_object_set_data_full (G_OBJECT (dialog), "uri", g_strdup (uri), g_free);
        g_signal_connect_object (dialog, "response", G_CALLBACK (on_link_response), label, 0);
        gtk_window_present (GTK_WINDOW (dialog));
        return TRUE;
}
