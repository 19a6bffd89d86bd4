/* test-assistant-loop.c — the assistant loop end to end: the real session against the fake LLM
 * provider (both wire formats) and a local corral-agent (no VM): file tools, the shell tool's
 * limits, bad model output, provider failures, cancel.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-assistant-loop-util.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static char *
read_file (const char *path)
{
        char *contents = NULL;

        g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
        return contents;
}

/* create, view, str_replace, insert, view with a range, then shell: one task, six steps. */
static void
test_multi_step (gconstpointer data)
{
        CorralLlmProviderKind kind = GPOINTER_TO_INT (data);
        g_autoptr (Fix) fix = fix_new (kind);
        g_autofree char *path = fix_path (fix, "sub/notes.txt");
        g_autofree char *in1 = g_strdup_printf (
                "{\"path\": \"%s\", \"file_text\": \"alpha\\nbeta\\ngamma\\n\"}", path);
        g_autofree char *in2 = g_strdup_printf ("{\"path\": \"%s\"}", path);
        g_autofree char *in3 = g_strdup_printf (
                "{\"path\": \"%s\", \"old_str\": \"beta\", \"new_str\": \"BETA\"}", path);
        g_autofree char *in4 = g_strdup_printf (
                "{\"path\": \"%s\", \"insert_line\": 1, \"new_str\": \"one-and-a-half\"}", path);
        g_autofree char *in5 = g_strdup_printf ("{\"path\": \"%s\", \"view_range\": [2, 3]}", path);
        g_autofree char *in6 = g_strdup_printf ("{\"command\": \"wc -l < '%s'\"}", path);
        g_autofree char *contents = NULL;
        g_autofree char *sent = NULL;

        fix_push (fix, "I will make the file.", "create", in1, "tool");
        fix_push (fix, NULL, "view", in2, "tool");
        fix_push (fix, NULL, "str_replace", in3, "tool");
        fix_push (fix, NULL, "insert", in4, "tool");
        fix_push (fix, NULL, "view", in5, "tool");
        fix_push (fix, NULL, "shell", in6, "tool");
        fix_push (fix, "All done.", NULL, NULL, "end");
        fix_run (fix, "Write my notes", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpint (fix->result->stop, ==, CORRAL_ASSISTANT_STOP_DONE);
        g_assert_cmpuint (fix->result->steps, ==, 7);
        g_assert_cmpuint (fix->result->tool_calls, ==, 6);
        g_assert_cmpstr (fix->result->final_text, ==, "All done.");
        g_assert_true (g_str_has_prefix (fix->text->str, "I will make the file."));

        contents = read_file (path);
        g_assert_cmpstr (contents, ==, "alpha\none-and-a-half\nBETA\ngamma\n");
        g_assert_nonnull (strstr (fix_output (fix, 0), "Created"));
        g_assert_nonnull (strstr (fix_output (fix, 1), "     2\tbeta\n"));
        g_assert_nonnull (strstr (fix_output (fix, 2), "BETA"));
        g_assert_cmpstr (fix_output (fix, 4), ==, "     2\tone-and-a-half\n     3\tBETA\n");
        g_assert_cmpstr (fix_output (fix, 5), ==, "4\n[exit status 0]");
        g_assert_cmpint (fix_card (fix, 5)->exit_code, ==, 0);
        g_assert_true (g_str_has_prefix (fix_card (fix, 5)->command, "wc -l < "));
        g_assert_cmpuint (fix_card (fix, 2)->files_changed->len, ==, 1);
        g_assert_cmpuint (fix_card (fix, 1)->files_read->len, ==, 1);
        /* The results went back to the model. */
        sent = fix_sent_text (fix, 6);
        g_assert_nonnull (strstr (sent, "[exit status 0]"));
        g_assert_nonnull (strstr (sent, "request_approval"));
}

static void
test_edit_errors (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *path = fix_path (fix, "f.txt");
        g_autofree char *in_none = g_strdup_printf (
                "{\"path\": \"%s\", \"old_str\": \"zzz\", \"new_str\": \"y\"}", path);
        g_autofree char *in_two = g_strdup_printf (
                "{\"path\": \"%s\", \"old_str\": \"ab\", \"new_str\": \"y\"}", path);
        g_autofree char *in_create =
                g_strdup_printf ("{\"path\": \"%s\", \"file_text\": \"x\"}", path);
        g_autofree char *in_insert = g_strdup_printf (
                "{\"path\": \"%s\", \"insert_line\": 99, \"new_str\": \"x\"}", path);
        g_autofree char *contents = NULL;

        g_assert_true (g_file_set_contents (path, "ab ab\n", -1, NULL));
        fix_push (fix, NULL, "str_replace", in_none, "tool");
        fix_push (fix, NULL, "str_replace", in_two, "tool");
        fix_push (fix, NULL, "create", in_create, "tool");
        fix_push (fix, NULL, "insert", in_insert, "tool");
        fix_push (fix, NULL, "view", "{\"path\": \"relative.txt\"}", "tool");
        fix_push (fix, NULL, "view", "{\"path\": \"/nonexistent/corral\"}", "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "edit", NULL);
        g_assert_no_error (fix->error);
        g_assert_nonnull (strstr (fix_output (fix, 0), "0 matches"));
        g_assert_nonnull (strstr (fix_output (fix, 1), "matches 2 times"));
        g_assert_nonnull (strstr (fix_output (fix, 2), "already exists"));
        g_assert_nonnull (strstr (fix_output (fix, 3), "has 1 lines"));
        g_assert_nonnull (strstr (fix_output (fix, 4), "absolute path"));
        g_assert_nonnull (strstr (fix_output (fix, 5), "no such file"));
        for (guint i = 0; i < 6; i++)
                g_assert_true (fix_card (fix, i)->is_error);
        contents = read_file (path);
        g_assert_cmpstr (contents, ==, "ab ab\n");
}

static void
test_shell_truncation (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        const char *out;

        corral_assistant_session_set_shell_limits (fix->session, 30, 60, 100);
        fix_push (fix, NULL, "shell", "{\"command\": \"seq 1 100000\"}", "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "count", NULL);
        g_assert_no_error (fix->error);
        out = fix_output (fix, 0);
        g_assert_true (g_str_has_prefix (out, "1\n2\n3\n"));
        g_assert_true (g_str_has_suffix (out, "99999\n100000\n[exit status 0]"));
        /* seq 1 100000 prints 588895 bytes; 200 are kept. */
        g_assert_nonnull (strstr (out, "588695 bytes cut from the middle"));
        g_assert_cmpuint (strlen (out), <, 600);
}

static void
test_shell_timeout (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        gint64 start = g_get_monotonic_time ();

        fix_push (fix, NULL, "shell", "{\"command\": \"echo before; sleep 30\", \"timeout\": 1}",
                  "tool");
        fix_push (fix, NULL, "shell", "{\"command\": \"true\", \"timeout\": 999999}", "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "sleep", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpint (g_get_monotonic_time () - start, <, 20 * G_USEC_PER_SEC);
        g_assert_true (fix_card (fix, 0)->timed_out);
        g_assert_true (g_str_has_prefix (fix_output (fix, 0), "before\n"));
        g_assert_nonnull (strstr (fix_output (fix, 0), "timed out after 1 s"));
        g_assert_nonnull (strstr (fix_output (fix, 1), "from 1 to 1800"));
}

/* The model's tool input is not JSON: the provider fails the reply; the loop tells the model. */
static void
test_invalid_tool_json (gconstpointer data)
{
        g_autoptr (Fix) fix = fix_new (GPOINTER_TO_INT (data));
        g_autofree char *sent = NULL;

        fix_push (fix, NULL, "shell", "{\"command\": \"echo x\"", "tool");
        fix_push (fix, NULL, "shell", "{\"command\": \"echo fixed\"}", "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "go", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpint (fix->result->stop, ==, CORRAL_ASSISTANT_STOP_DONE);
        sent = fix_sent_text (fix, 1);
        g_assert_nonnull (strstr (sent, "could not be used"));
        g_assert_nonnull (strstr (sent, "not valid JSON"));
        g_assert_cmpstr (fix_output (fix, 0), ==, "fixed\n[exit status 0]");
        g_assert_cmpuint (fix->notices->len, ==, 1);
}

static void
test_unknown_tool_and_bad_args (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);

        fix_push (fix, NULL, "frobnicate", "{}", "tool");
        fix_push (fix, NULL, "shell", "{\"cmd\": \"ls\"}", "tool");
        fix_push (fix, NULL, "shell", "{\"command\": 42}", "tool");
        fix_push (fix, NULL, "view", "{\"path\": \"/etc\", \"view_range\": \"all\"}", "tool");
        fix_push (fix, "ok", NULL, NULL, "end");
        fix_run (fix, "go", NULL);
        g_assert_no_error (fix->error);
        g_assert_nonnull (strstr (fix_output (fix, 0), "There is no tool named “frobnicate”"));
        g_assert_nonnull (strstr (fix_output (fix, 0), "shell, view, create"));
        g_assert_nonnull (strstr (fix_output (fix, 1), "“command” of shell must be a string"));
        g_assert_nonnull (strstr (fix_output (fix, 2), "must be a string"));
        g_assert_nonnull (strstr (fix_output (fix, 3), "view_range must be"));
}

static void
test_malformed_sse (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        const char *garbage[] = { "event: message_start\ndata: {not json\n\n", NULL };
        const char *truncated[] = {
                "event: message_start\ndata: {\"type\": \"message_start\", \"message\": "
                "{\"id\": \"m\", \"usage\": {}}}\n\n",
                "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": "
                "0, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}\n\n",
                NULL
        };

        corral_fake_llm_server_push (fix->server, corral_fake_llm_raw_reply (garbage, "complete"));
        fix_run (fix, "go", NULL);
        g_assert_error (fix->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL);

        corral_fake_llm_server_push (fix->server, corral_fake_llm_raw_reply (truncated, "close"));
        fix_run (fix, "again", NULL);
        g_assert_nonnull (fix->error);
        g_assert_true (fix->error->domain == CORRAL_LLM_ERROR);
        g_test_message ("truncated: %s", fix->error->message);
}

static void
test_provider_timeout (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_OPENAI);
        const char *chunks[] = { "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": "
                                 "\"Hel\"}}]}\n\n",
                                 NULL };

        corral_llm_provider_set_idle_timeout (fix->provider, 300);
        corral_fake_llm_server_push (fix->server, corral_fake_llm_raw_reply (chunks, "stall"));
        fix_run (fix, "go", NULL);
        g_assert_error (fix->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_TIMEOUT);
        g_assert_cmpstr (fix->text->str, ==, "Hel");
}

static gboolean
cancel_when_file (gpointer user_data)
{
        gpointer *args = user_data;

        if (!g_file_test (args[0], G_FILE_TEST_EXISTS))
                return G_SOURCE_CONTINUE;
        g_cancellable_cancel (args[1]);
        *(guint *) args[2] = 0;
        return G_SOURCE_REMOVE;
}

static gboolean
pid_gone (pid_t pid)
{
        g_autofree char *stat_path = g_strdup_printf ("/proc/%d/stat", (int) pid);
        g_autofree char *stat = NULL;
        const char *close_paren;

        if (kill (pid, 0) < 0 && errno == ESRCH)
                return TRUE;
        /* A zombie is dead too, only not reaped yet by whoever adopted it. */
        if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
                return TRUE;
        close_paren = strrchr (stat, ')');
        return close_paren && close_paren[2] == 'Z';
}

static void
test_cancel_kills (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *pidfile = fix_path (fix, "pid");
        g_autofree char *in = g_strdup_printf (
                "{\"command\": \"sleep 60 & echo $! > '%s.tmp'; mv '%s.tmp' '%s'; wait\"}", pidfile,
                pidfile, pidfile);
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        g_autofree char *text = NULL;
        guint id = 0;
        gpointer args[] = { pidfile, cancellable, &id };
        pid_t pid;
        const CorralLlmConversation *conv;
        const CorralLlmMessage *last;

        fix_push (fix, NULL, "shell", in, "tool");
        id = g_timeout_add (20, cancel_when_file, args);
        fix_run (fix, "sleep", cancellable);
        if (id)
                g_source_remove (id);
        g_assert_error (fix->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        text = read_file (pidfile);
        pid = (pid_t) g_ascii_strtoll (text, NULL, 10);
        g_assert_cmpint (pid, >, 1);
        for (guint i = 0; i < 300 && !pid_gone (pid); i++)
                g_usleep (10000);
        g_assert_true (pid_gone (pid));
        /* The unanswered call got a result, so the next task can go on. */
        conv = corral_assistant_session_get_conversation (fix->session);
        last = conv->messages->pdata[conv->messages->len - 1];
        g_assert_cmpint (last->role, ==, CORRAL_LLM_ROLE_USER);
        g_assert_cmpint (((CorralLlmBlock *) last->blocks->pdata[0])->type, ==,
                         CORRAL_LLM_BLOCK_TOOL_RESULT);
        fix_push (fix, "fine", NULL, NULL, "end");
        fix_run (fix, "next", NULL);
        g_assert_no_error (fix->error);
}

static void
test_step_limit_and_max_tokens (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *sent = NULL;

        fix_push (fix, "Part one", NULL, NULL, "max");
        fix_push (fix, " and two.", NULL, NULL, "end");
        fix_run (fix, "long answer", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpuint (fix->result->steps, ==, 2);
        sent = fix_sent_text (fix, 1);
        g_assert_nonnull (strstr (sent, "cut off by the output limit"));
        g_assert_cmpstr (fix->text->str, ==, "Part one and two.");

        corral_assistant_session_set_max_steps (fix->session, 2);
        for (guint i = 0; i < 3; i++)
                fix_push (fix, NULL, "shell", "{\"command\": \"true\"}", "tool");
        fix_run (fix, "loop", NULL);
        g_assert_no_error (fix->error);
        g_assert_cmpint (fix->result->stop, ==, CORRAL_ASSISTANT_STOP_STEP_LIMIT);
        g_assert_cmpuint (fix->result->steps, ==, 2);
}

/* A task stopped by a passing failure (the provider overloaded) goes on with "": the same
 * conversation is sent again, the person's words once, and the model gets its answer. */
static void
test_go_on_after_failure (void)
{
        g_autoptr (Fix) fix = fix_new (CORRAL_LLM_PROVIDER_ANTHROPIC);
        g_autofree char *second = NULL;
        const cJSON *messages;

        corral_fake_llm_server_push (
                fix->server,
                corral_fake_llm_error_reply (529, "overloaded_error", "Overloaded", NULL));
        fix_push (fix, "Sorted.", NULL, NULL, "end");
        fix_run (fix, "sort my notes", NULL);
        g_assert_error (fix->error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_OVERLOADED);
        g_assert_true (corral_llm_error_is_transient (fix->error));
        fix_run (fix, "", NULL);
        g_assert_no_error (fix->error);
        g_assert_nonnull (fix->result);
        g_assert_cmpstr (fix->result->final_text, ==, "Sorted.");
        /* The second request holds the person's words once, and nothing the person did not
         * write. */
        second = fix_sent_text (fix, 1);
        g_assert_nonnull (strstr (second, "sort my notes"));
        g_assert_null (strstr (strstr (second, "sort my notes") + 1, "sort my notes"));
        g_assert_null (strstr (second, "go on where you stopped"));
        messages = cJSON_GetObjectItemCaseSensitive (fix_sent (fix, 1), "messages");
        g_assert_cmpint (cJSON_GetArraySize (messages), ==, 1);
}

int
main (int argc, char **argv)
{
        fix_init_environment ();
        g_test_init (&argc, &argv, NULL);
        g_test_add_data_func ("/assistant-loop/anthropic/multi-step",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_ANTHROPIC), test_multi_step);
        g_test_add_data_func ("/assistant-loop/openai/multi-step",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_OPENAI), test_multi_step);
        g_test_add_func ("/assistant-loop/edit-errors", test_edit_errors);
        g_test_add_func ("/assistant-loop/shell/truncation", test_shell_truncation);
        g_test_add_func ("/assistant-loop/shell/timeout", test_shell_timeout);
        g_test_add_data_func ("/assistant-loop/anthropic/invalid-tool-json",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_ANTHROPIC),
                              test_invalid_tool_json);
        g_test_add_data_func ("/assistant-loop/openai/invalid-tool-json",
                              GINT_TO_POINTER (CORRAL_LLM_PROVIDER_OPENAI), test_invalid_tool_json);
        g_test_add_func ("/assistant-loop/unknown-tool-bad-args", test_unknown_tool_and_bad_args);
        g_test_add_func ("/assistant-loop/provider/malformed-sse", test_malformed_sse);
        g_test_add_func ("/assistant-loop/provider/timeout", test_provider_timeout);
        g_test_add_func ("/assistant-loop/cancel-kills", test_cancel_kills);
        g_test_add_func ("/assistant-loop/step-limit-max-tokens", test_step_limit_and_max_tokens);
        g_test_add_func ("/assistant-loop/go-on-after-failure", test_go_on_after_failure);
        return g_test_run ();
}
