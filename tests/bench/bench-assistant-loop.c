/* bench-assistant-loop.c — what the assistant loop adds to a tool call.
 *
 * One task of N steps, each a model reply (from the in-process fake provider, answering at
 * once) that calls the shell tool with `true`, against N raw exec round trips of the same
 * command through the same agent client. Overhead per step = (loop time - raw time) / N: HTTP
 * and SSE to the fake provider, the conversation serialised again, the tool dispatch, the
 * transcript and audit writes. Goal: < 5 ms per step. The fake provider's own round trip (the
 * same reply, no loop) is printed too, to tell the HTTP stack's share from the loop's. The
 * last line is the ratio.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "bench-common.h"
#include "../vm/vm-test-util.h"
#include "corral-assistant-loop.h"
#include "fake-llm-server.h"

#include <stdio.h>

#define STEPS 200

typedef struct {
        gboolean done;
        CorralAssistantTaskResult *result;
        GError *error;
} Wait;

static void
raw_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Wait *w = user_data;
        CorralRunResult *r =
                corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), result, &w->error);

        corral_run_result_free (r);
        w->done = TRUE;
}

static double
raw_round_trips (CorralAgentClient *client, guint n)
{
        double start = bench_now ();

        for (guint i = 0; i < n; i++) {
                g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_shell ("true");
                Wait w = { 0 };
                corral_agent_client_run_async (client, spec, 16 * 1024, NULL, raw_done, &w);
                bench_wait (&w.done);
                g_assert_no_error (w.error);
        }
        return (bench_now () - start) / n;
}

static void
streamed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Wait *w = user_data;
        CorralLlmResponse *r =
                corral_llm_provider_stream_finish (CORRAL_LLM_PROVIDER (source), result, &w->error);

        corral_llm_response_free (r);
        w->done = TRUE;
}

/* The fake provider's own round trip: one tool-call reply, no loop around it. */
static double
provider_round_trips (guint n)
{
        g_autoptr (GError) error = NULL;
        CorralFakeLlmServer *server = corral_fake_llm_server_new (0, &error);
        g_autofree char *url = corral_fake_llm_server_get_url (server);
        g_autoptr (CorralLlmProvider) provider =
                corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, url, "sk-bench", &error);
        g_autoptr (CorralLlmConversation) conv = corral_llm_conversation_new ("bench", 1024);
        double start;

        corral_llm_conversation_add_user_text (conv, "bench");
        for (guint i = 0; i < n; i++) {
                cJSON *reply = corral_fake_llm_anthropic_reply (
                        NULL, "toolu_1", "shell", "{\"command\": \"true\"}", "tool_use");
                cJSON_AddNumberToObject (reply, "split", 1 << 20);
                corral_fake_llm_server_push (server, reply);
        }
        start = bench_now ();
        for (guint i = 0; i < n; i++) {
                Wait w = { 0 };
                corral_llm_provider_stream_async (provider, conv, NULL, NULL, NULL, NULL, streamed,
                                                  &w);
                bench_wait (&w.done);
                g_assert_no_error (w.error);
        }
        start = (bench_now () - start) / n;
        g_clear_object (&provider);
        corral_fake_llm_server_free (server);
        return start;
}

static void
task_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Wait *w = user_data;

        w->result = corral_assistant_session_run_task_finish (CORRAL_ASSISTANT_SESSION (source),
                                                              result, &w->error);
        w->done = TRUE;
}

static double
loop_steps (CorralAgentClient *client, guint n)
{
        g_autoptr (GError) error = NULL;
        CorralFakeLlmServer *server = corral_fake_llm_server_new (0, &error);
        g_autofree char *url = corral_fake_llm_server_get_url (server);
        g_autoptr (CorralLlmProvider) provider =
                corral_llm_provider_new (CORRAL_LLM_PROVIDER_ANTHROPIC, url, "sk-bench", &error);
        g_autoptr (CorralAssistantSession) session = NULL;
        Wait w = { 0 };
        double start;

        g_assert_no_error (error);
        for (guint i = 0; i < n; i++) {
                g_autofree char *id = g_strdup_printf ("toolu_%u", i);
                cJSON *reply = corral_fake_llm_anthropic_reply (
                        NULL, id, "shell", "{\"command\": \"true\"}", "tool_use");
                /* The whole reply in one write: a model that answers at once. */
                cJSON_AddNumberToObject (reply, "split", 1 << 20);
                corral_fake_llm_server_push (server, reply);
        }
        corral_fake_llm_server_push (
                server, corral_fake_llm_anthropic_reply ("done", NULL, NULL, NULL, "end_turn"));
        session = corral_assistant_session_new (provider, client, "bench");
        corral_assistant_session_set_max_steps (session, n + 1);
        start = bench_now ();
        corral_assistant_session_run_task_async (session, "bench", NULL, task_done, &w);
        bench_wait (&w.done);
        g_assert_no_error (w.error);
        g_assert_cmpuint (w.result->tool_calls, ==, n);
        corral_assistant_task_result_free (w.result);
        start = (bench_now () - start) / n;
        g_clear_object (&session);
        corral_fake_llm_server_free (server);
        return start;
}

int
main (void)
{
        BenchAgent agent = { 0 };
        g_autofree char *state = g_dir_make_tmp ("bench-assistant-loop-XXXXXX", NULL);
        double raw, loop, provider;

        /* Transcripts of the benchmark go to a scratch folder, not the person's sessions. */
        g_setenv ("XDG_STATE_HOME", state, TRUE);
        bench_agent_start (&agent);
        raw_round_trips (agent.client, 20); /* warm up */
        raw = raw_round_trips (agent.client, STEPS);
        loop = loop_steps (agent.client, STEPS);
        provider = provider_round_trips (STEPS);
        bench_agent_stop (&agent);
        printf ("raw exec round trip of `true`: %.2f ms\n", raw * 1000);
        printf ("assistant loop step (fake model reply + shell `true`): %.2f ms\n", loop * 1000);
        printf ("fake provider round trip alone (HTTP + SSE, no loop): %.2f ms\n", provider * 1000);
        printf ("loop overhead per step: %.2f ms (goal < 5 ms), of which the loop's own code "
                "(without the provider's round trip): %.2f ms\n",
                (loop - raw) * 1000, (loop - raw - provider) * 1000);
        printf ("ratio loop/raw: %.2f\n", loop / raw);
        vm_test_remove_state (state);
        return 0;
}
