/* assistant-loop.c — one task: ask the model, run its tools, repeat.
 *
 *   start → [stream a reply → add it → run each tool call → add the results] → ... → done
 *
 * A step is one model reply. The loop ends when the model ends its turn without calling a
 * tool, at the step limit, on a refusal, an error or a cancel. A reply cut off by the output
 * limit gets a polite "please continue"; a reply whose tool input was not valid JSON gets one
 * note saying so (twice at most per task), because the model can fix that itself.
 *
 * Every message goes to the transcript as it enters the conversation, so a transcript replay
 * rebuilds what the model saw. When a task stops in the middle, each tool call that got no
 * result gets one saying it did not run: the conversation stays valid for the next task.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include <glib/gi18n-lib.h>

#define MAX_RECOVERIES 2
#define AUDIT_OUTPUT_MAX 4096

typedef struct {
        CorralAssistantSession *self;
        CorralLlmResponse *response; /* the reply being worked on */
        guint tool_index; /* next block of response to look at */
        gboolean ran_tools; /* this reply called at least one tool */
        CorralAssistantToolCard *card; /* the running call's */
        guint steps;
        guint tool_calls;
        guint recoveries;
        gboolean saw_tool_start;
        CorralLlmUsage usage;
        AssistantLogMark mark; /* the VM's logs when the task began */
} TaskState;

static void step (GTask *task);
static void run_next_tool (GTask *task);

static void
task_state_free (TaskState *ts)
{
        g_clear_pointer (&ts->response, corral_llm_response_free);
        g_clear_pointer (&ts->card, corral_assistant_tool_card_unref);
        g_free (ts);
}

static void
record (CorralAssistantSession *self, cJSON *rec)
{
        assistant_store_append (self->store, rec);
}

static void
add_user_text (CorralAssistantSession *self, const char *text)
{
        assistant_conv_add_user_text (self->conv, text);
        record (self, assistant_store_user_record (text));
}

/* The conversation ends with the person's words or tool results: a request can be sent as is. */
static gboolean
last_is_user (CorralAssistantSession *self)
{
        GPtrArray *messages = self->conv->messages;

        return messages->len > 0 &&
               ((CorralLlmMessage *) messages->pdata[messages->len - 1])->role ==
                       CORRAL_LLM_ROLE_USER;
}

/* outcome: (nullable) the person's answer, when the tool asked them. */
static void
add_tool_result_full (CorralAssistantSession *self,
                      const char *id,
                      const char *text,
                      gboolean is_error,
                      const char *outcome,
                      const char *media_type,
                      GBytes *image)
{
        if (image)
                corral_llm_conversation_add_tool_result_image (self->conv, id, text, is_error,
                                                               media_type, image);
        else
                corral_llm_conversation_add_tool_result (self->conv, id, text, is_error);
        if (outcome) {
                CorralLlmMessage *last = self->conv->messages->pdata[self->conv->messages->len - 1];
                CorralLlmBlock *block = last->blocks->pdata[last->blocks->len - 1];

                block->outcome = g_strdup (outcome);
        }
        record (self, assistant_store_tool_result_record (id, text, is_error, outcome));
}

static void
add_tool_result (CorralAssistantSession *self,
                 const char *id,
                 const char *text,
                 gboolean is_error,
                 const char *outcome)
{
        add_tool_result_full (self, id, text, is_error, outcome, NULL, NULL);
}

static void
close_open_tool_uses (CorralAssistantSession *self)
{
        g_autoptr (GPtrArray) ids = assistant_conv_open_tool_uses (self->conv);

        for (guint i = 0; i < ids->len; i++)
                add_tool_result (self, ids->pdata[i],
                                 _ ("This tool call did not run: the task was stopped first."),
                                 TRUE, NULL);
}

/* The VM's own records of what happened during the task go into its audit log. */
static void
audit_sandbox_window (TaskState *ts)
{
        CorralAssistantSession *self = ts->self;
        guint64 skipped = 0;
        g_autoptr (GPtrArray) records =
                assistant_sandbox_read_since (self->vm_dir, &ts->mark, &skipped);

        for (guint i = 0; i < records->len; i++) {
                cJSON *rec = cJSON_CreateObject ();
                cJSON_AddStringToObject (rec, "type", "sandbox");
                cJSON_AddItemToObject (rec, "record", cJSON_Duplicate (records->pdata[i], TRUE));
                assistant_store_audit (self->store, self->task_number, rec);
        }
        if (skipped) {
                cJSON *rec = cJSON_CreateObject ();
                cJSON_AddStringToObject (rec, "type", "sandbox-skipped");
                cJSON_AddNumberToObject (rec, "bytes", (double) skipped);
                assistant_store_audit (self->store, self->task_number, rec);
        }
}

static void
task_end_record (TaskState *ts, const char *outcome, const GError *error)
{
        cJSON *rec = cJSON_CreateObject ();

        cJSON_AddStringToObject (rec, "type", "task");
        cJSON_AddStringToObject (rec, "event", "end");
        cJSON_AddNumberToObject (rec, "task", ts->self->task_number);
        cJSON_AddStringToObject (rec, "outcome", outcome);
        cJSON_AddNumberToObject (rec, "steps", ts->steps);
        cJSON_AddNumberToObject (rec, "tool_calls", ts->tool_calls);
        if (error)
                cJSON_AddStringToObject (rec, "error", error->message);
        assistant_store_audit (ts->self->store, ts->self->task_number, cJSON_Duplicate (rec, TRUE));
        record (ts->self, rec);
}

static void
wrap_up (TaskState *ts, const char *outcome, const GError *error)
{
        CorralAssistantSession *self = ts->self;

        close_open_tool_uses (self);
        assistant_approval_end_task (self);
        audit_sandbox_window (ts);
        task_end_record (ts, outcome, error);
        g_clear_object (&self->task);
}

static void
finish_error (GTask *task, GError *error)
{
        TaskState *ts = g_task_get_task_data (task);
        gboolean cancelled = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

        wrap_up (ts, cancelled ? "cancelled" : "error", error);
        g_task_return_error (task, error);
        g_object_unref (task);
}

static void
finish (GTask *task, CorralAssistantStop stop)
{
        TaskState *ts = g_task_get_task_data (task);
        CorralAssistantTaskResult *result = g_new0 (CorralAssistantTaskResult, 1);
        static const char *const names[] = { "done", "step-limit", "refusal" };

        result->stop = stop;
        result->steps = ts->steps;
        result->tool_calls = ts->tool_calls;
        result->usage = ts->usage;
        result->final_text = ts->response ? corral_llm_response_get_text (ts->response) : NULL;
        wrap_up (ts, names[stop], NULL);
        g_task_return_pointer (task, result, (GDestroyNotify) corral_assistant_task_result_free);
        g_object_unref (task);
}

/* Tools ------------------------------------------------------------------------------------------ */

static void
audit_tool_call (CorralAssistantSession *self, const CorralAssistantToolCard *card)
{
        cJSON *rec = cJSON_CreateObject ();
        g_autofree char *output = NULL;
        const GPtrArray *lists[] = { card->files_read, card->files_changed, card->network,
                                     card->blocked };
        const char *names[] = { "files_read", "files_changed", "network", "blocked" };

        cJSON_AddStringToObject (rec, "type", "tool_call");
        cJSON_AddStringToObject (rec, "id", card->tool_id);
        cJSON_AddStringToObject (rec, "tool", card->tool);
        cJSON_AddItemToObject (rec, "input", cJSON_Parse (card->input_json));
        if (card->command) {
                cJSON_AddStringToObject (rec, "command", card->command);
                cJSON_AddNumberToObject (rec, "exit_code", card->exit_code);
                cJSON_AddNumberToObject (rec, "signal", card->term_signal);
                cJSON_AddBoolToObject (rec, "timed_out", card->timed_out);
        }
        output = g_utf8_substring (card->output, 0,
                                   MIN (g_utf8_strlen (card->output, -1), AUDIT_OUTPUT_MAX));
        cJSON_AddStringToObject (rec, "output", output);
        cJSON_AddBoolToObject (rec, "is_error", card->is_error);
        cJSON_AddNumberToObject (rec, "duration_ms", (double) card->duration_us / 1000.0);
        for (gsize i = 0; i < G_N_ELEMENTS (lists); i++) {
                cJSON *arr = cJSON_AddArrayToObject (rec, names[i]);
                for (guint j = 0; j < lists[i]->len; j++)
                        cJSON_AddItemToArray (arr, cJSON_CreateString (lists[i]->pdata[j]));
        }
        assistant_store_audit (self->store, self->task_number, rec);
}

static void
tool_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        TaskState *ts = g_task_get_task_data (task);
        g_autoptr (CorralAssistantToolCard) card = g_steal_pointer (&ts->card);
        GError *error = NULL;

        if (!agent_tools_run_finish (result, &error)) {
                finish_error (task, error);
                return;
        }
        add_tool_result_full (ts->self, card->tool_id, card->output, card->is_error, card->outcome,
                              card->image_media_type, card->image);
        ts->tool_calls++;
        audit_tool_call (ts->self, card);
        assistant_session_emit_card (ts->self, card, TRUE);
        run_next_tool (task);
}

static void
after_tools (GTask *task)
{
        TaskState *ts = g_task_get_task_data (task);
        CorralLlmStopReason stop = ts->response->stop_reason;

        if (stop == CORRAL_LLM_STOP_MAX_TOKENS) {
                assistant_session_emit_notice (ts->self,
                                               _ ("The reply hit the output limit; asking "
                                                  "the model to continue."));
                add_user_text (ts->self, "Your reply was cut off by the output limit. Please "
                                         "continue where you stopped.");
                step (task);
        } else if (stop == CORRAL_LLM_STOP_REFUSAL) {
                finish (task, CORRAL_ASSISTANT_STOP_REFUSAL);
        } else if (stop == CORRAL_LLM_STOP_TOOL_USE || stop == CORRAL_LLM_STOP_PAUSE ||
                   ts->ran_tools) {
                /* Some OpenAI-compatible servers end a turn with tool calls as "stop". */
                step (task);
        } else {
                finish (task, CORRAL_ASSISTANT_STOP_DONE);
        }
}

static void
run_next_tool (GTask *task)
{
        TaskState *ts = g_task_get_task_data (task);
        GPtrArray *blocks = ts->response->blocks;
        const CorralLlmBlock *block = NULL;

        if (g_task_return_error_if_cancelled (task)) {
                wrap_up (ts, "cancelled", NULL);
                g_object_unref (task);
                return;
        }
        while (ts->tool_index < blocks->len && !block) {
                const CorralLlmBlock *b = blocks->pdata[ts->tool_index++];
                if (b->type == CORRAL_LLM_BLOCK_TOOL_USE)
                        block = b;
        }
        if (!block) {
                after_tools (task);
                return;
        }
        ts->ran_tools = TRUE;
        ts->card = assistant_tool_card_new (block);
        assistant_session_emit_card (ts->self, ts->card, FALSE);
        agent_tools_run_async (ts->self, block, ts->card, g_task_get_cancellable (task), tool_done,
                               task);
}

/* Model replies ------------------------------------------------------------------------------------ */

static void
on_event (const CorralLlmEvent *event, gpointer user_data)
{
        TaskState *ts = user_data;
        g_autofree char *text = NULL;

        switch (event->type) {
        case CORRAL_LLM_EVENT_TEXT_DELTA:
                text = g_strndup (event->text, event->text_len);
                assistant_session_emit_text (ts->self, text);
                break;
        case CORRAL_LLM_EVENT_TOOL_USE_START:
                ts->saw_tool_start = TRUE;
                break;
        case CORRAL_LLM_EVENT_RETRY:
                ts->saw_tool_start = FALSE;
                assistant_session_emit_restarted (ts->self);
                break;
        }
}

/* A reply whose tool input was not valid JSON fails the whole stream in the provider layer;
 * the model can fix that if told, so it is told (a bounded number of times). */
static gboolean
recover (GTask *task, const GError *error)
{
        TaskState *ts = g_task_get_task_data (task);
        g_autofree char *note = NULL;

        if (!ts->saw_tool_start || ts->recoveries >= MAX_RECOVERIES ||
            !g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_PROTOCOL))
                return FALSE;
        ts->recoveries++;
        note = g_strdup_printf ("Your last reply could not be used: %s Call the tool again with "
                                "its input as one valid JSON object that matches its schema.",
                                error->message);
        assistant_session_emit_notice (ts->self, error->message);
        add_user_text (ts->self, note);
        step (task);
        return TRUE;
}

static void
add_usage (CorralLlmUsage *sum, const CorralLlmUsage *u)
{
        sum->input_tokens += u->input_tokens;
        sum->output_tokens += u->output_tokens;
        sum->cache_read_input_tokens += u->cache_read_input_tokens;
        sum->cache_creation_input_tokens += u->cache_creation_input_tokens;
}

static void
streamed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        GTask *task = user_data;
        TaskState *ts = g_task_get_task_data (task);
        GError *error = NULL;
        CorralLlmResponse *response =
                corral_llm_provider_stream_finish (CORRAL_LLM_PROVIDER (source), result, &error);

        if (!response) {
                if (!recover (task, error))
                        finish_error (task, error);
                else
                        g_error_free (error);
                return;
        }
        g_clear_pointer (&ts->response, corral_llm_response_free);
        ts->response = response;
        add_usage (&ts->usage, &response->usage);
        if (response->blocks->len > 0) {
                corral_llm_conversation_add_response (ts->self->conv, response);
                record (ts->self, assistant_store_response_record (response));
        }
        ts->tool_index = 0;
        ts->ran_tools = FALSE;
        run_next_tool (task);
}

static void
step (GTask *task)
{
        TaskState *ts = g_task_get_task_data (task);
        CorralAssistantSession *self = ts->self;

        if (g_task_return_error_if_cancelled (task)) {
                wrap_up (ts, "cancelled", NULL);
                g_object_unref (task);
                return;
        }
        if (ts->steps >= self->max_steps) {
                g_autofree char *notice = g_strdup_printf (
                        _ ("Stopped after %u model replies (the step limit)."), ts->steps);
                assistant_session_emit_notice (self, notice);
                finish (task, CORRAL_ASSISTANT_STOP_STEP_LIMIT);
                return;
        }
        ts->steps++;
        ts->saw_tool_start = FALSE;
        agent_tools_describe (self, self->conv);
        corral_llm_provider_stream_async (self->provider, self->conv, on_event, ts, NULL,
                                          g_task_get_cancellable (task), streamed, task);
}

/* Starting ----------------------------------------------------------------------------------------- */

static void
task_start_record (CorralAssistantSession *self)
{
        cJSON *rec = cJSON_CreateObject ();

        if (self->task_number == 1 && self->conv->messages->len == 0) {
                cJSON *header = cJSON_CreateObject ();
                g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
                g_autofree char *ts = g_date_time_format_iso8601 (now);

                cJSON_AddStringToObject (header, "type", "session");
                cJSON_AddNumberToObject (header, "version", 1);
                cJSON_AddStringToObject (header, "id", assistant_store_get_id (self->store));
                cJSON_AddStringToObject (header, "created", ts);
                cJSON_AddStringToObject (header, "model", self->conv->model);
                cJSON_AddItemToObject (header, "vm",
                                       self->vm_name ? cJSON_CreateString (self->vm_name)
                                                     : cJSON_CreateNull ());
                assistant_store_set_header (self->store, header);
        }
        cJSON_AddStringToObject (rec, "type", "task");
        cJSON_AddStringToObject (rec, "event", "start");
        cJSON_AddNumberToObject (rec, "task", self->task_number);
        assistant_store_audit (self->store, self->task_number, cJSON_Duplicate (rec, TRUE));
        record (self, rec);
}

void
corral_assistant_session_run_task_async (CorralAssistantSession *self,
                                         const char *text,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback,
                                         gpointer user_data)
{
        g_autoptr (GTask) task = NULL;
        g_autofree char *system = NULL;
        TaskState *ts;

        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_return_if_fail (text != NULL);
        task = g_task_new (self, cancellable, callback, user_data);
        g_task_set_source_tag (task, corral_assistant_session_run_task_async);
        if (self->task) {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_BUSY,
                                         _ ("The assistant is already working on a task"));
                return;
        }
        ts = g_new0 (TaskState, 1);
        ts->self = self;
        g_task_set_task_data (task, ts, (GDestroyNotify) task_state_free);
        self->task = g_object_ref (task);
        self->task_number++;
        assistant_sandbox_mark (self->vm_dir, &ts->mark);
        task_start_record (self);
        /* A task that was interrupted (or a crash before a resume) left calls unanswered. */
        close_open_tool_uses (self);
        system = corral_assistant_session_build_system_prompt (self);
        corral_llm_conversation_set_system (self->conv, system);
        if (*text || !last_is_user (self))
                /* Going on after a failure when the model had the last word: it is told so. */
                add_user_text (self, *text ? text
                                           : "The last request to you failed on the way; go on "
                                             "where you stopped.");
        step (g_steal_pointer (&task));
}

CorralAssistantTaskResult *
corral_assistant_session_run_task_finish (CorralAssistantSession *self,
                                          GAsyncResult *result,
                                          GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, self), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
