/* corral-markdown.h — the assistant's Markdown, as the chat shows it: parsed by cmark (the
 * CommonMark reference parser, from Debian) and written out as Pango markup for a GtkLabel.
 *
 * The model's text is untrusted: every character of it is escaped, only the tags written here
 * reach Pango (bold, italic, monospace, a larger bold for headings, links), raw HTML is shown as
 * text, images as their description, and links only for http, https and mailto (the label asks
 * before it opens one: corral_markdown_confirm_link). The result always parses as Pango
 * markup (fuzzed: fuzz-markdown).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* (transfer full) Pango markup for text (UTF-8; invalid bytes are replaced). */
char *corral_markdown_to_pango (const char *text, gssize len);

/* For a label's "activate-link": asks the person (naming the address) before the browser
 * opens it; returns TRUE (the label does not open it itself). */
gboolean corral_markdown_confirm_link (GtkLabel *label, const char *uri, gpointer user_data);

G_END_DECLS
