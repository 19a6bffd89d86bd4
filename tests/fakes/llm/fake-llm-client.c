/* fake-llm-client.c — runs provider requests against the fake server for tests.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fake-llm-client.h"

#include <string.h>

CorralFakeLlmClient *
corral_fake_llm_client_new (CorralLlmProviderKind kind)
{
        CorralFakeLlmClient *c = g_new0 (CorralFakeLlmClient, 1);
        g_autoptr (GError) error = NULL;
        g_autofree char *url = NULL, *base = NULL;

        c->kind = kind;
        c->server = corral_fake_llm_server_new (0, &error);
        g_assert_no_error (error);
        url = corral_fake_llm_server_get_url (c->server);
        /* OpenAI-style base URLs carry the version; a trailing slash must not matter. */
        base = kind == CORRAL_LLM_PROVIDER_OPENAI ? g_strconcat (url, "/v1/", NULL)
                                                  : g_strdup (url);
        c->provider = corral_llm_provider_new (kind, base, CORRAL_FAKE_LLM_KEY, &error);
        g_assert_no_error (error);
        corral_llm_provider_set_retry (c->provider, 4, 5, 50);
        corral_llm_provider_set_idle_timeout (c->provider, 5000);
        c->conv = corral_llm_conversation_new ("model-x", 1024);
        corral_llm_conversation_set_system (c->conv, "You are a careful assistant.");
        corral_llm_conversation_add_user_text (c->conv, "Hello \"there\"\nsecond line");
        c->streamed = g_string_new (NULL);
        c->tool_starts = g_ptr_array_new_with_free_func (g_free);
        return c;
}

void
corral_fake_llm_client_free (CorralFakeLlmClient *c)
{
        if (c == NULL)
                return;
        g_clear_object (&c->provider);
        corral_fake_llm_server_free (c->server);
        corral_llm_conversation_free (c->conv);
        g_string_free (c->streamed, TRUE);
        g_ptr_array_unref (c->tool_starts);
        corral_llm_response_free (c->response);
        g_clear_error (&c->error);
        g_clear_object (&c->cancel_on_text);
        g_free (c);
}

static void
on_event (const CorralLlmEvent *event, gpointer data)
{
        CorralFakeLlmClient *c = data;

        switch (event->type) {
        case CORRAL_LLM_EVENT_TEXT_DELTA:
                g_assert_true (g_utf8_validate_len (event->text, event->text_len, NULL));
                g_string_append_len (c->streamed, event->text, (gssize) event->text_len);
                c->n_text_events++;
                if (c->cancel_on_text != NULL)
                        g_cancellable_cancel (c->cancel_on_text);
                break;
        case CORRAL_LLM_EVENT_TOOL_USE_START:
                g_ptr_array_add (c->tool_starts, g_strdup (event->tool_name));
                break;
        case CORRAL_LLM_EVENT_RETRY:
                g_assert_nonnull (event->error);
                g_assert_cmpuint (event->attempt, >=, 2);
                /* A retry starts over: what was streamed is void. */
                g_string_truncate (c->streamed, 0);
                c->n_retries++;
                break;
        default:
                g_assert_not_reached ();
        }
}

typedef struct {
        CorralFakeLlmClient *c;
        GMainLoop *loop;
} Run;

static void
on_done (GObject *source, GAsyncResult *result, gpointer data)
{
        Run *r = data;

        r->c->response = corral_llm_provider_stream_finish (CORRAL_LLM_PROVIDER (source), result,
                                                            &r->c->error);
        g_main_loop_quit (r->loop);
}

void
corral_fake_llm_client_run (CorralFakeLlmClient *c, GCancellable *cancellable)
{
        Run r = { c, g_main_loop_new (NULL, FALSE) };
        gint64 start = g_get_monotonic_time ();

        g_clear_pointer (&c->response, corral_llm_response_free);
        g_clear_error (&c->error);
        corral_llm_provider_stream_async (c->provider, c->conv, on_event, c, NULL, cancellable,
                                          on_done, &r);
        g_main_loop_run (r.loop);
        g_main_loop_unref (r.loop);
        c->elapsed_us = g_get_monotonic_time () - start;
        g_assert_true ((c->response == NULL) != (c->error == NULL));
}

static const char *
stop_word (CorralLlmProviderKind kind, const char *stop)
{
        gboolean anthropic = kind == CORRAL_LLM_PROVIDER_ANTHROPIC;

        if (g_strcmp0 (stop, "end") == 0)
                return anthropic ? "end_turn" : "stop";
        if (g_strcmp0 (stop, "tool") == 0)
                return anthropic ? "tool_use" : "tool_calls";
        if (g_strcmp0 (stop, "max") == 0)
                return anthropic ? "max_tokens" : "length";
        return stop;
}

void
corral_fake_llm_client_push_reply (CorralFakeLlmClient *c,
                                   const char *text,
                                   const char *tool_id,
                                   const char *tool_name,
                                   const char *input_json,
                                   const char *stop)
{
        const char *word = stop_word (c->kind, stop);

        if (c->kind == CORRAL_LLM_PROVIDER_ANTHROPIC)
                corral_fake_llm_server_push (
                        c->server, corral_fake_llm_anthropic_reply (text, tool_id, tool_name,
                                                                    input_json, word));
        else
                corral_fake_llm_server_push (
                        c->server,
                        corral_fake_llm_openai_reply (text, tool_id, tool_name, input_json, word));
}

const cJSON *
corral_fake_llm_client_sent_body (CorralFakeLlmClient *c, guint i)
{
        return cJSON_GetObjectItemCaseSensitive (corral_fake_llm_server_get_request (c->server, i),
                                                 "body");
}

const char *
corral_fake_llm_client_sent_header (CorralFakeLlmClient *c, guint i, const char *name)
{
        const cJSON *headers = cJSON_GetObjectItemCaseSensitive (
                corral_fake_llm_server_get_request (c->server, i), "headers");

        return cJSON_GetStringValue (cJSON_GetObjectItemCaseSensitive (headers, name));
}
