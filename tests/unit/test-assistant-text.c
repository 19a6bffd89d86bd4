/* test-assistant-text.c — the assistant loop's pure parts: output capture, line numbers, edits, text
 * for terminals, refusals explained from log records, session ids.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-sandbox-log.h"
#include "corral-agent-client.h"
#include "assistant-store.h"
#include "assistant-text.h"
#include "corral-assistant-loop.h"

#include <gio/gio.h>
#include <string.h>

static void
test_capture (void)
{
        AssistantCapture c;
        g_autofree char *small = NULL, *big = NULL;

        assistant_capture_init (&c, 4);
        assistant_capture_add (&c, (const guint8 *) "abc", 3);
        assistant_capture_add (&c, (const guint8 *) "defgh", 5);
        small = assistant_capture_to_text (&c);
        g_assert_cmpstr (small, ==, "abcdefgh");
        for (int i = 0; i < 1000; i++)
                assistant_capture_add (&c, (const guint8 *) "0123456789", 10);
        assistant_capture_add (&c, (const guint8 *) "\0END", 4);
        big = assistant_capture_to_text (&c);
        g_assert_true (g_str_has_prefix (big, "abcd\n[… 10004 bytes cut"));
        g_assert_true (g_str_has_suffix (big, "…]\n\xef\xbf\xbd"
                                              "END"));
        g_assert_cmpuint (c.total, ==, 10012);
        g_assert_cmpuint (c.tail->len, <=, 8);
        assistant_capture_clear (&c);
}

static void
test_lines (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *all = assistant_text_number_lines ("a\nb\nc", 1, -1, NULL, &error);
        g_autofree char *mid = assistant_text_number_lines ("a\nb\nc\n", 2, 2, NULL, &error);
        g_autofree char *empty = assistant_text_number_lines ("", 1, -1, NULL, &error);
        guint n = 0;

        g_assert_cmpstr (all, ==, "     1\ta\n     2\tb\n     3\tc\n");
        g_assert_cmpstr (mid, ==, "     2\tb\n");
        g_assert_cmpstr (empty, ==, "");
        g_assert_null (assistant_text_number_lines ("a\n", 5, 6, &n, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_assert_cmpuint (n, ==, 1);
        g_assert_cmpuint (assistant_text_count_lines ("a\nb"), ==, 2);
        g_assert_cmpuint (assistant_text_count_lines ("a\nb\n"), ==, 2);
        g_assert_cmpuint (assistant_text_count_lines ("\n"), ==, 1);
}

static void
test_edits (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *r = NULL, *i0 = NULL, *i2 = NULL, *iend = NULL;
        guint line = 0;

        g_assert_cmpuint (assistant_text_count ("aaaa", "aa"), ==, 2);
        g_assert_cmpuint (assistant_text_count ("abc", "x"), ==, 0);
        r = assistant_text_replace_once ("one\ntwo\nthree\n", "two", "2", &line);
        g_assert_cmpstr (r, ==, "one\n2\nthree\n");
        g_assert_cmpuint (line, ==, 2);
        i0 = assistant_text_insert_after ("a\nb\n", 0, "z", &error);
        g_assert_cmpstr (i0, ==, "z\na\nb\n");
        i2 = assistant_text_insert_after ("a\nb", 2, "z\n", &error);
        g_assert_cmpstr (i2, ==, "a\nb\nz\n");
        iend = assistant_text_insert_after ("a\nb\n", 1, "z", &error);
        g_assert_cmpstr (iend, ==, "a\nz\nb\n");
        g_assert_null (assistant_text_insert_after ("a\n", 3, "z", &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
test_terminal_and_truncate (void)
{
        g_autofree char *t = assistant_text_for_terminal ("ok\033[2J\r\x07 \xe2\x80\xae"
                                                          "x\ty\n\xff");
        g_autofree char *cut = assistant_text_truncate ("héllo wörld", 2);
        g_autofree char *same = assistant_text_truncate ("short", 10);

        g_assert_cmpstr (t, ==, "ok[2J x\ty\n\xef\xbf\xbd");
        g_assert_true (g_str_has_prefix (cut, "h\n[… 12 more bytes cut (13 bytes in all) …]"));
        g_assert_cmpstr (same, ==, "short");
}

static void
test_explain (void)
{
        g_autoptr (cJSON) ro = cJSON_Parse (
                "{\"source\":\"files\",\"share\":\"p\",\"op\":\"write\",\"path\":\"a\\u0007b\","
                "\"result\":\"refused\",\"rule\":\"read-only\",\"message\":\"m\"}");
        g_autoptr (cJSON) ok = cJSON_Parse ("{\"source\":\"files\",\"result\":\"ok\"}");
        g_autoptr (cJSON) deny = cJSON_Parse (
                "{\"source\":\"egress\",\"host\":\"x.io\",\"port\":80,\"decision\":\"denied\","
                "\"rule\":\"deny:x.io\"}");
        g_autoptr (cJSON) odd = cJSON_Parse ("{\"source\":\"egress\",\"decision\":7}");
        g_autofree char *e1 = assistant_sandbox_explain (ro);
        g_autofree char *e2 = assistant_sandbox_explain (deny);

        g_assert_nonnull (strstr (e1, "write of /workspace/p/a b was refused (rule “read-only”)"));
        g_assert_nonnull (strstr (e1, "editable"));
        g_assert_null (assistant_sandbox_explain (ok));
        g_assert_null (assistant_sandbox_explain (odd));
        g_assert_nonnull (strstr (e2, "x.io:80"));
        g_assert_nonnull (strstr (e2, "deny:x.io"));
        g_assert_nonnull (strstr (e2, "request_approval"));
        /* Refusals no approval changes say so, and never send the agent to ask for one. */
        {
                const struct {
                        const char *rule;
                        const char *says;
                } cases[] = {
                        { "secret-from-guest", "Tell the person now" },
                        { "session-ended", "restarting the VM" },
                        { "credential-misplaced", "credential rules" },
                        { "unknown-placeholder", "credential rules" },
                        { "response-unmaskable", "credential rules" },
                        { "upstream-certificate", "credential rules" },
                        { "resolve-failed", "could not be reached" },
                };
                for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
                        g_autofree char *json = g_strdup_printf (
                                "{\"source\":\"egress\",\"host\":\"x.io\",\"port\":443,"
                                "\"decision\":\"denied\",\"rule\":\"%s\"}",
                                cases[i].rule);
                        g_autoptr (cJSON) rec = cJSON_Parse (json);
                        g_autofree char *e = assistant_sandbox_explain (rec);

                        g_test_message ("%s: %s", cases[i].rule, e);
                        g_assert_nonnull (strstr (e, cases[i].says));
                        g_assert_null (strstr (e, "call request_approval"));
                }
        }
}

static void
test_ids (void)
{
        g_assert_true (corral_assistant_store_id_is_valid ("20250101-120000-abcdef01"));
        g_assert_false (corral_assistant_store_id_is_valid (""));
        g_assert_false (corral_assistant_store_id_is_valid ("../x"));
        g_assert_false (corral_assistant_store_id_is_valid ("a/b"));
        g_assert_false (corral_assistant_store_id_is_valid (
                "0123456789012345678901234567890123456789012345678901234567890123456789"));
}

/* A stored result read back for the UI: the status line ends the command's part, refusals
 * follow a paragraph each; look-alikes inside the output do not count. */
static void
test_result_describe (void)
{
        const struct {
                const char *text;
                int exit_code;
                guint n_blocked;
        } cases[] = {
                { "hi\n[exit status 0]", 0, 0 },
                { "[exit status 5]\nmore\n[exit status 1]", 1, 0 },
                { "rm: cannot remove\n[exit status 1]\n\nBlocked by the sandbox: unlink of "
                  "/workspace/d/x was refused (rule “no-delete”).\n\nBlocked by the sandbox: a "
                  "connection to pypi.org:443 was refused by the network policy.",
                  1, 2 },
                { "(no output)\n[killed by signal 9]", -1, 0 },
                { "[exit status abc]", -1, 0 },
                { "[exit status 999]", -1, 0 },
                { "[exit status ]", -1, 0 },
                { "Created /workspace/d/x (1 lines).\n\nBlocked by the sandbox: write of x", -1,
                  1 },
                { "", -1, 0 },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GPtrArray) blocked = NULL;
                int code = 42;

                corral_assistant_result_describe (cases[i].text, &code, &blocked);
                g_assert_cmpint (code, ==, cases[i].exit_code);
                g_assert_cmpuint (blocked->len, ==, cases[i].n_blocked);
                for (guint j = 0; j < blocked->len; j++)
                        g_assert_true (
                                g_str_has_prefix (blocked->pdata[j], "Blocked by the sandbox:"));
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/assistant-text/capture", test_capture);
        g_test_add_func ("/assistant-text/lines", test_lines);
        g_test_add_func ("/assistant-text/edits", test_edits);
        g_test_add_func ("/assistant-text/terminal-truncate", test_terminal_and_truncate);
        g_test_add_func ("/assistant-text/explain", test_explain);
        g_test_add_func ("/assistant-text/ids", test_ids);
        g_test_add_func ("/assistant-text/result-describe", test_result_describe);
        return g_test_run ();
}
