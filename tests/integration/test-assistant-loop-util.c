/* test-assistant-loop-util.c — the assistant loop's test fixture.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-assistant-loop-util.h"

#include <glib/gstdio.h>
#include <stdlib.h>

#define TEST_KEY "sk-test-0123456789abcdef"

static char *env_root;

static void
remove_env_root (void)
{
        const char *argv[] = { "rm", "-rf", env_root, NULL };

        /* Sessions and config the tests wrote: nothing stays behind in /tmp. */
        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
}

void
fix_init_environment (void)
{
        env_root = g_dir_make_tmp ("corral-assistant-loop-XXXXXX", NULL);
        g_assert_nonnull (env_root);
        g_setenv ("XDG_STATE_HOME", env_root, TRUE);
        g_setenv ("XDG_CONFIG_HOME", env_root, TRUE);
        atexit (remove_env_root);
}

static void
on_text (CorralAssistantSession *session, const char *text, Fix *fix)
{
        g_string_append (fix->text, text);
}

static void
on_started (CorralAssistantSession *session, CorralAssistantToolCard *card, Fix *fix)
{
        g_ptr_array_add (fix->started, corral_assistant_tool_card_ref (card));
}

static void
on_finished (CorralAssistantSession *session, CorralAssistantToolCard *card, Fix *fix)
{
        g_ptr_array_add (fix->cards, corral_assistant_tool_card_ref (card));
}

static void
on_notice (CorralAssistantSession *session, const char *text, Fix *fix)
{
        g_ptr_array_add (fix->notices, g_strdup (text));
}

static void
on_approval (CorralAssistantSession *session, CorralAssistantApproval *approval, Fix *fix)
{
        g_ptr_array_add (fix->approvals, corral_assistant_approval_ref (approval));
        if (fix->answer_approvals)
                corral_assistant_approval_respond (approval, fix->answer);
}

void
fix_new_session (Fix *fix)
{
        g_clear_object (&fix->session);
        fix->session =
                corral_assistant_session_new (fix->provider, fix->agent->client, "test-model");
        g_signal_connect (fix->session, "text-delta", G_CALLBACK (on_text), fix);
        g_signal_connect (fix->session, "tool-started", G_CALLBACK (on_started), fix);
        g_signal_connect (fix->session, "tool-finished", G_CALLBACK (on_finished), fix);
        g_signal_connect (fix->session, "notice", G_CALLBACK (on_notice), fix);
        g_signal_connect (fix->session, "approval-requested", G_CALLBACK (on_approval), fix);
}

Fix *
fix_new (CorralLlmProviderKind kind)
{
        Fix *fix = g_new0 (Fix, 1);
        g_autoptr (GError) error = NULL;
        g_autofree char *url = NULL, *base = NULL;

        fix->kind = kind;
        fix->dir = g_dir_make_tmp ("assistant-loop-files-XXXXXX", &error);
        g_assert_no_error (error);
        fix->agent = test_agent_start (0, NULL);
        fix->server = corral_fake_llm_server_new (0, &error);
        g_assert_no_error (error);
        url = corral_fake_llm_server_get_url (fix->server);
        base = kind == CORRAL_LLM_PROVIDER_OPENAI ? g_strconcat (url, "/v1", NULL) : g_strdup (url);
        fix->provider = corral_llm_provider_new (kind, base, TEST_KEY, &error);
        g_assert_no_error (error);
        corral_llm_provider_set_retry (fix->provider, 1, 5, 50);
        corral_llm_provider_set_idle_timeout (fix->provider, 10000);
        fix->text = g_string_new (NULL);
        fix->started =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_assistant_tool_card_unref);
        fix->cards =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_assistant_tool_card_unref);
        fix->notices = g_ptr_array_new_with_free_func (g_free);
        fix->approvals =
                g_ptr_array_new_with_free_func ((GDestroyNotify) corral_assistant_approval_unref);
        fix_new_session (fix);
        return fix;
}

static void
remove_tree (const char *path)
{
        g_autoptr (GFile) file = g_file_new_for_path (path);
        g_autoptr (GFileEnumerator) e =
                g_file_enumerate_children (file, G_FILE_ATTRIBUTE_STANDARD_NAME,
                                           G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);
        GFileInfo *info;

        while (e && (info = g_file_enumerator_next_file (e, NULL, NULL))) {
                g_autofree char *child = g_build_filename (path, g_file_info_get_name (info), NULL);
                if (g_file_info_get_file_type (info) == G_FILE_TYPE_DIRECTORY)
                        remove_tree (child);
                else
                        g_unlink (child);
                g_object_unref (info);
        }
        g_rmdir (path);
}

void
fix_free (Fix *fix)
{
        if (!fix)
                return;
        g_clear_object (&fix->session);
        g_clear_object (&fix->provider);
        g_clear_pointer (&fix->server, corral_fake_llm_server_free);
        g_clear_pointer (&fix->agent, test_agent_free);
        g_clear_pointer (&fix->result, corral_assistant_task_result_free);
        g_clear_error (&fix->error);
        g_string_free (fix->text, TRUE);
        g_ptr_array_unref (fix->started);
        g_ptr_array_unref (fix->cards);
        g_ptr_array_unref (fix->notices);
        g_ptr_array_unref (fix->approvals);
        remove_tree (fix->dir);
        g_free (fix->dir);
        g_free (fix);
}

void
fix_push (
        Fix *fix, const char *text, const char *tool_name, const char *input_json, const char *stop)
{
        g_autofree char *id = tool_name ? g_strdup_printf ("toolu_%02u", ++fix->n_tools) : NULL;
        const char *word = stop;
        gboolean anthropic = fix->kind == CORRAL_LLM_PROVIDER_ANTHROPIC;

        if (g_str_equal (stop, "end"))
                word = anthropic ? "end_turn" : "stop";
        else if (g_str_equal (stop, "tool"))
                word = anthropic ? "tool_use" : "tool_calls";
        else if (g_str_equal (stop, "max"))
                word = anthropic ? "max_tokens" : "length";
        corral_fake_llm_server_push (
                fix->server,
                anthropic ? corral_fake_llm_anthropic_reply (text, id, tool_name, input_json, word)
                          : corral_fake_llm_openai_reply (text, id, tool_name, input_json, word));
}

static void
run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Fix *fix = user_data;

        fix->result = corral_assistant_session_run_task_finish (CORRAL_ASSISTANT_SESSION (source),
                                                                result, &fix->error);
        if (!fix->result && !fix->error)
                g_error ("run_task_finish returned neither a result nor an error");
}

void
fix_run (Fix *fix, const char *task, GCancellable *cancellable)
{
        gboolean done = FALSE;

        g_clear_pointer (&fix->result, corral_assistant_task_result_free);
        g_clear_error (&fix->error);
        corral_assistant_session_run_task_async (fix->session, task, cancellable, run_done, fix);
        while (!fix->result && !fix->error)
                g_main_context_iteration (NULL, TRUE);
        (void) done;
}

CorralAssistantToolCard *
fix_card (Fix *fix, guint i)
{
        g_assert_cmpuint (i, <, fix->cards->len);
        return fix->cards->pdata[i];
}

const char *
fix_output (Fix *fix, guint i)
{
        return fix_card (fix, i)->output;
}

char *
fix_path (Fix *fix, const char *name)
{
        return g_build_filename (fix->dir, name, NULL);
}

const cJSON *
fix_sent (Fix *fix, guint i)
{
        const cJSON *rec;

        g_assert_cmpuint (i, <, corral_fake_llm_server_get_n_requests (fix->server));
        rec = corral_fake_llm_server_get_request (fix->server, i);
        return cJSON_GetObjectItem (rec, "body");
}

char *
fix_sent_text (Fix *fix, guint i)
{
        char *json = cJSON_PrintUnformatted (fix_sent (fix, i));
        char *copy = g_strdup (json);

        cJSON_free (json);
        return copy;
}
