/* fuzz-markdown.c — libFuzzer target for the chat's Markdown (ui/corral-markdown.c): whatever
 * the model writes, the result is markup a GtkLabel accepts, and links go only to the web or
 * mail.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-markdown.h"

#include <pango/pango.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        static GRegex *links;
        g_autofree char *markup = corral_markdown_to_pango ((const char *) data, (gssize) size);
        g_autofree char *pango = NULL;
        g_autoptr (GError) error = NULL;
        const char *href = markup;

        if (!links)
                links = g_regex_new ("<a href=\"[^\"<>]*\">|</a>", 0, 0, NULL);
        /* Every link the renderer wrote goes to the web or mail. */
        while ((href = strstr (href, "<a href=\""))) {
                href += strlen ("<a href=\"");
                g_assert_true (g_ascii_strncasecmp (href, "http:", 5) == 0 ||
                               g_ascii_strncasecmp (href, "https:", 6) == 0 ||
                               g_ascii_strncasecmp (href, "mailto:", 7) == 0);
        }
        /* GtkLabel takes the links out, then Pango parses the rest. */
        pango = g_regex_replace_literal (links, markup, -1, 0, "", 0, NULL);
        if (!pango_parse_markup (pango, -1, 0, NULL, NULL, NULL, &error))
                g_error ("not markup (%s): %s", error->message, markup);
        return 0;
}
