/* test-markdown.c — the assistant's Markdown as the chat shows it (ui/corral-markdown.c): the
 * words it renders, and what it never lets through. No display needed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <pango/pango.h>
#include <string.h>

#include "corral-markdown.h"

/* markup parses as a GtkLabel's markup (Pango's, plus the links the label takes out first);
 * (transfer full) the text a person sees. */
static char *
visible_text (const char *markup)
{
        g_autoptr (GRegex) links = g_regex_new ("<a href=\"[^\"<>]*\">|</a>", 0, 0, NULL);
        g_autofree char *pango = g_regex_replace_literal (links, markup, -1, 0, "", 0, NULL);
        g_autoptr (GError) error = NULL;
        char *text = NULL;

        if (!pango_parse_markup (pango, -1, 0, NULL, &text, NULL, &error))
                g_error ("not Pango markup (%s): %s", error->message, markup);
        return text;
}

static void
test_rendered (void)
{
        struct {
                const char *md;
                const char *markup;
                const char *text;
        } cases[] = {
                { "**food**, *work* and `travel`", "<b>food</b>, <i>work</i> and <tt>travel</tt>",
                  "food, work and travel" },
                { "# Done\n\nMoved 5 notes.",
                  "<span weight=\"bold\" size=\"x-large\">Done</span>\n\nMoved 5 notes.",
                  "Done\n\nMoved 5 notes." },
                { "- food\n- work", "• food\n• work", "• food\n• work" },
                { "3. a\n4. b", "3. a\n4. b", "3. a\n4. b" },
                { "- a\n  - b", "• a\n    • b", "• a\n    • b" },
                { "line one\nline two", "line one\nline two", "line one\nline two" },
                { "```\nls -l\n```", "<tt>ls -l</tt>", "ls -l" },
                { "[docs](https://example.org/a?b=1&c=2)",
                  "<a href=\"https://example.org/a?b=1&amp;c=2\">docs</a>", "docs" },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autofree char *markup = corral_markdown_to_pango (cases[i].md, -1);
                g_autofree char *text = visible_text (markup);

                g_assert_cmpstr (markup, ==, cases[i].markup);
                g_assert_cmpstr (text, ==, cases[i].text);
        }
}

/* The model's text never becomes markup, a link it may not have, or hidden text. */
static void
test_untrusted (void)
{
        struct {
                const char *md;
                const char *text;
        } cases[] = {
                /* Pango markup written by the model stays text. */
                { "<b>bold</b> <span foreground=\"red\">x</span>",
                  "<b>bold</b> <span foreground=\"red\">x</span>" },
                { "<script>alert(1)</script>", "<script>alert(1)</script>" },
                /* Links only to the web and mail; others are their words only. */
                { "[run](file:///etc/passwd) [x](javascript:alert(1))", "run x" },
                /* An image is never loaded: its description stands in. */
                { "![a cat](https://example.org/cat.png)", "a cat" },
                /* Control and bidi characters go. */
                { "safe\x1b[31m \u202Eexe.txt", "safe[31m exe.txt" },
                { "a & b < c > d \"e\" 'f'", "a & b < c > d \"e\" 'f'" },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autofree char *markup = corral_markdown_to_pango (cases[i].md, -1);
                g_autofree char *text = visible_text (markup);

                g_assert_cmpstr (text, ==, cases[i].text);
                g_assert_null (strstr (markup, "href=\"file:"));
                g_assert_null (strstr (markup, "href=\"javascript:"));
                g_assert_null (strstr (markup, "<span foreground"));
                g_assert_null (strstr (markup, "<script"));
        }
}

/* Deep nesting and invalid UTF-8 still give markup. */
static void
test_hostile_shapes (void)
{
        g_autoptr (GString) deep = g_string_new (NULL);
        g_autofree char *markup = NULL, *text = NULL, *bad = NULL;

        for (int i = 0; i < 200; i++) {
                for (int j = 0; j < i; j++)
                        g_string_append (deep, "  ");
                g_string_append (deep, "- item\n");
        }
        for (int i = 0; i < 500; i++)
                g_string_append (deep, ">");
        g_string_append (deep, " quoted **bold *both*** end\n");
        markup = corral_markdown_to_pango (deep->str, -1);
        text = visible_text (markup);
        g_assert_nonnull (strstr (text, "quoted bold both end"));
        bad = corral_markdown_to_pango ("ok \xff\xfe **b**", -1);
        g_free (text);
        text = visible_text (bad);
        g_assert_true (g_str_has_prefix (text, "ok "));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/markdown/rendered", test_rendered);
        g_test_add_func ("/markdown/untrusted", test_untrusted);
        g_test_add_func ("/markdown/hostile-shapes", test_hostile_shapes);
        return g_test_run ();
}
