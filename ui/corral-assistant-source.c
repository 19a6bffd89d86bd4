/* corral-assistant-source.c — see corral-assistant-source.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-assistant-source.h"

#include <glib/gi18n.h>
#include <string.h>

#include "corral-egress-vm.h"
#include "corral-secret-store.h"
#include "corral-task-record.h"
#include "corral-ui-util.h"

#define TITLE_MAX 80

struct _CorralAssistantSource {
        GObject parent_instance;
        CorralAssistantSession *session;
        GCancellable *cancellable; /* the running task's, NULL when idle */
        gboolean resumed; /* restore() replays the session's conversation */
        char *restore_notice; /* (nullable) why the earlier conversation is not shown */
        gboolean network_alerted; /* the VM's network went off and the person was told */
        char *vm_name; /* (nullable) the task's workspace, whose record the first request names */
        gboolean can_retry; /* the last task ended on a passing failure */
};

static void chat_source_init (CorralChatSourceInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (CorralAssistantSource,
                               corral_assistant_source,
                               G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (CORRAL_TYPE_CHAT_SOURCE, chat_source_init))

static void
copy_strings (GPtrArray *to, GPtrArray *from)
{
        for (guint i = 0; from && i < from->len; i++)
                g_ptr_array_add (to, g_strdup (g_ptr_array_index (from, i)));
}

/* (transfer full) (nullable) the shell call's "description": the assistant's words for the
 * person, cleaned as a task's title is (one line, no control or bidi characters, bounded). */
static char *
summary_of (const char *tool, const cJSON *input)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (input, "description");

        if (g_strcmp0 (tool, "shell") != 0 || !cJSON_IsString (item))
                return NULL;
        return corral_task_record_make_title (item->valuestring);
}

/* (transfer full) the card as the view shows it */
static CorralChatTool *
tool_from_card (const CorralAssistantToolCard *card)
{
        CorralChatTool *tool = corral_chat_tool_new (card->tool_id, card->tool, card->title);
        g_autoptr (cJSON) input = cJSON_Parse (card->input_json ? card->input_json : "{}");

        tool->summary = summary_of (card->tool, input);
        tool->outcome = g_strdup (card->outcome);
        tool->command = g_strdup (card->command);
        tool->output = g_strdup (card->output);
        tool->exit_code = card->exit_code;
        tool->is_error = card->is_error;
        tool->finished = card->finished;
        copy_strings (tool->files_read, card->files_read);
        copy_strings (tool->files_changed, card->files_changed);
        copy_strings (tool->network, card->network);
        copy_strings (tool->blocked, card->blocked);
        tool->image = card->image ? g_bytes_ref (card->image) : NULL;
        tool->has_point = card->has_point;
        tool->point_x = card->point_x;
        tool->point_y = card->point_y;
        return tool;
}

static void
on_text_delta (CorralAssistantSession *session, const char *text, CorralAssistantSource *self)
{
        corral_chat_source_emit_text_delta (CORRAL_CHAT_SOURCE (self), text);
}

static void
on_stream_restarted (CorralAssistantSession *session, CorralAssistantSource *self)
{
        corral_chat_source_emit_reply_restarted (CORRAL_CHAT_SOURCE (self));
}

static void
on_tool_started (CorralAssistantSession *session,
                 CorralAssistantToolCard *card,
                 CorralAssistantSource *self)
{
        g_autoptr (CorralChatTool) tool = tool_from_card (card);

        corral_chat_source_emit_tool_started (CORRAL_CHAT_SOURCE (self), tool);
}

/* Worker thread: the VM's network alert, a small file in its folder. */
static gpointer
read_network_alert (gpointer data, GCancellable *cancellable, GError **error)
{
        char *alert = corral_egress_vm_dup_alert (data);

        if (!alert)
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no alert");
        return alert;
}

static void
on_network_alert (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralAssistantSource) self = user_data;
        g_autofree char *alert = corral_run_in_thread_finish (res, NULL);

        if (!alert || self->network_alerted)
                return;
        /* Where the person reads: the egress daemon ended the VM's network session because a
         * program in the VM sent a real secret (SECURITY.md K9). Said once. */
        self->network_alerted = TRUE;
        corral_chat_source_emit_notice (CORRAL_CHAT_SOURCE (self), alert);
}

static void
on_tool_finished (CorralAssistantSession *session,
                  CorralAssistantToolCard *card,
                  CorralAssistantSource *self)
{
        g_autoptr (CorralChatTool) tool = tool_from_card (card);
        const char *vm_dir = corral_assistant_session_get_vm_dir (session);

        corral_chat_source_emit_tool_finished (CORRAL_CHAT_SOURCE (self), tool);
        if (vm_dir && !self->network_alerted)
                corral_run_in_thread (read_network_alert, g_strdup (vm_dir), g_free, g_free, NULL,
                                      on_network_alert, g_object_ref (self));
}

static void
answer_agent (CorralChatAnswer answer, gpointer user_data)
{
        /* The two enums have the same values (corral-chat-source.h). */
        corral_assistant_approval_respond (user_data, (CorralAssistantAnswer) answer);
}

/* The assistant asks the person to take the screen: said in the transcript, and to whoever
 * shows the screen (the session view). */
static void
on_help_requested (CorralAssistantSession *session,
                   const char *request,
                   CorralAssistantSource *self)
{
        if (request) {
                g_autofree char *notice = g_strdup_printf (
                        _ ("The assistant asks for your help on the screen: %s"), request);

                corral_chat_source_emit_notice (CORRAL_CHAT_SOURCE (self), notice);
        }
        corral_chat_source_emit_help_requested (CORRAL_CHAT_SOURCE (self), request);
}

static void
on_approval (CorralAssistantSession *session,
             CorralAssistantApproval *approval,
             CorralAssistantSource *self)
{
        gboolean delete =
                corral_assistant_approval_get_kind (approval) == CORRAL_ASSISTANT_APPROVAL_DELETE;
        /* The session's getters give what the person may see: escaped, as the file server and
         * the egress policy read the request. */
        g_autofree char *target =
                delete ? g_strconcat ("/workspace/",
                                      corral_assistant_approval_get_share_name (approval), "/",
                                      corral_assistant_approval_get_path (approval), NULL)
                       : g_strdup (corral_assistant_approval_get_target (approval));
        g_autoptr (CorralChatApproval) chat = corral_chat_approval_new (
                delete ? CORRAL_CHAT_APPROVAL_DELETE : CORRAL_CHAT_APPROVAL_NETWORK, target,
                corral_assistant_approval_get_reason (approval), answer_agent,
                corral_assistant_approval_ref (approval),
                (GDestroyNotify) corral_assistant_approval_unref);

        if (delete) {
                CorralChatApprovalFile file = {
                        .share_name = (char *) corral_assistant_approval_get_share_name (approval),
                        .share_folder =
                                (char *) corral_assistant_approval_get_share_folder (approval),
                        .mode = corral_assistant_approval_get_share_mode (approval),
                        .path = (char *) corral_assistant_approval_get_path (approval),
                        .type = corral_assistant_approval_get_file_type (approval),
                };
                corral_chat_approval_set_file (chat, &file);
        }
        corral_chat_approval_set_warning (chat, corral_assistant_approval_get_warning (approval));
        corral_chat_source_emit_approval_requested (CORRAL_CHAT_SOURCE (self), chat);
}

static void
on_notice (CorralAssistantSession *session, const char *text, CorralAssistantSource *self)
{
        corral_chat_source_emit_notice (CORRAL_CHAT_SOURCE (self), text);
}

static void
task_done (GObject *object, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (CorralAssistantSource) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralAssistantTaskResult) res = corral_assistant_session_run_task_finish (
                CORRAL_ASSISTANT_SESSION (object), result, &error);
        const char *message = NULL;
        g_autofree char *with_hint = NULL;

        g_clear_object (&self->cancellable);
        self->can_retry = error && corral_llm_error_is_transient (error);
        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                message = _ ("Stopped.");
        else if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH))
                /* What to do, in the app's words: the provider layer cannot know them. */
                message = with_hint = g_strdup_printf (
                        _ ("%s Check the model’s key in Preferences, on the Credentials page."),
                        error->message);
        else if (error)
                message = error->message;
        else if (res->stop == CORRAL_ASSISTANT_STOP_STEP_LIMIT)
                message = _ ("The assistant took too many steps and was stopped; send a message to "
                             "let it go on.");
        corral_chat_source_emit_task_finished (CORRAL_CHAT_SOURCE (self), message);
}

/* Worker thread: the task is named after the person's first request (corral-task-record.h);
 * a task that has a name keeps it. */
static gpointer
name_task (gpointer data, GCancellable *cancellable, GError **error)
{
        char **vm_and_text = data;

        return corral_task_record_set_title (vm_and_text[0], vm_and_text[1], TRUE, error)
                       ? GINT_TO_POINTER (TRUE)
                       : NULL;
}

static void
on_task_named (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        /* Only the list of tasks shows it; a task without a record has nothing to name. */
        if (!corral_run_in_thread_finish (res, &error) &&
            !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND))
                g_message ("Could not name the task: %s", error->message);
}

static void
source_send (CorralChatSource *source, const char *text)
{
        CorralAssistantSource *self = CORRAL_ASSISTANT_SOURCE (source);

        if (self->cancellable) {
                corral_chat_source_emit_notice (source, _ ("The assistant is still working; "
                                                           "stop it first or wait until it is "
                                                           "done."));
                return;
        }
        if (self->vm_name)
                corral_run_in_thread (name_task,
                                      g_strdupv ((char *[]){ self->vm_name, (char *) text, NULL }),
                                      (GDestroyNotify) g_strfreev, NULL, NULL, on_task_named, NULL);
        self->can_retry = FALSE;
        self->cancellable = g_cancellable_new ();
        corral_assistant_session_run_task_async (self->session, text, self->cancellable, task_done,
                                                 g_object_ref (self));
}

static gboolean
source_can_retry (CorralChatSource *source)
{
        CorralAssistantSource *self = CORRAL_ASSISTANT_SOURCE (source);

        return self->can_retry && !self->cancellable;
}

static void
source_retry (CorralChatSource *source)
{
        CorralAssistantSource *self = CORRAL_ASSISTANT_SOURCE (source);

        self->can_retry = FALSE;
        self->cancellable = g_cancellable_new ();
        corral_assistant_session_run_task_async (self->session, "", self->cancellable, task_done,
                                                 g_object_ref (self));
}

static void
source_stop (CorralChatSource *source)
{
        CorralAssistantSource *self = CORRAL_ASSISTANT_SOURCE (source);

        /* The session kills the running command; task-finished follows from task_done. */
        if (self->cancellable)
                g_cancellable_cancel (self->cancellable);
}

static void
source_decline_help (CorralChatSource *source)
{
        corral_assistant_session_decline_help (CORRAL_ASSISTANT_SOURCE (source)->session);
}

static void
chat_source_init (CorralChatSourceInterface *iface)
{
        iface->send = source_send;
        iface->stop = source_stop;
        iface->can_retry = source_can_retry;
        iface->retry = source_retry;
        iface->decline_help = source_decline_help;
}

static void
corral_assistant_source_dispose (GObject *object)
{
        CorralAssistantSource *self = CORRAL_ASSISTANT_SOURCE (object);

        if (self->cancellable)
                g_cancellable_cancel (self->cancellable);
        if (self->session)
                g_signal_handlers_disconnect_by_data (self->session, self);
        g_clear_object (&self->session);
        g_clear_pointer (&self->restore_notice, g_free);
        g_clear_pointer (&self->vm_name, g_free);
        G_OBJECT_CLASS (corral_assistant_source_parent_class)->dispose (object);
}

static void
corral_assistant_source_class_init (CorralAssistantSourceClass *klass)
{
        G_OBJECT_CLASS (klass)->dispose = corral_assistant_source_dispose;
}

static void
corral_assistant_source_init (CorralAssistantSource *self)
{
}

CorralAssistantSource *
corral_assistant_source_new (CorralAssistantSession *session)
{
        CorralAssistantSource *self;

        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (session), NULL);

        self = g_object_new (CORRAL_TYPE_ASSISTANT_SOURCE, NULL);
        self->session = g_object_ref (session);
        g_signal_connect (session, "text-delta", G_CALLBACK (on_text_delta), self);
        g_signal_connect (session, "stream-restarted", G_CALLBACK (on_stream_restarted), self);
        g_signal_connect (session, "tool-started", G_CALLBACK (on_tool_started), self);
        g_signal_connect (session, "tool-finished", G_CALLBACK (on_tool_finished), self);
        g_signal_connect (session, "approval-requested", G_CALLBACK (on_approval), self);
        g_signal_connect (session, "notice", G_CALLBACK (on_notice), self);
        g_signal_connect (session, "help-requested", G_CALLBACK (on_help_requested), self);
        return self;
}

CorralAssistantSession *
corral_assistant_source_get_session (CorralAssistantSource *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SOURCE (self), NULL);
        return self->session;
}

/* Making a session --------------------------------------------------------------------------- */

typedef struct {
        CorralLlmProviderKind kind;
        char *model;
        char *base_url;
        CorralAgentClient *client;
        char *vm_name;
        char *vm_dir;
        gboolean unconfined_commands;
        gboolean resume;
        /* found on the worker thread */
        char *session_id; /* resume: the id in the task record, or NULL */
        char *key;
        GPtrArray *shares;
        char **names; /* credential names (never values) */
} Making;

static void
making_free (Making *m)
{
        g_free (m->model);
        g_free (m->base_url);
        g_clear_object (&m->client);
        g_free (m->vm_name);
        g_free (m->vm_dir);
        g_free (m->session_id);
        corral_llm_api_key_free (m->key);
        g_clear_pointer (&m->shares, g_ptr_array_unref);
        g_strfreev (m->names);
        g_free (m);
}

/* Worker thread: the task record keeps which agent session belongs to the task. */
static gpointer
record_session (gpointer data, GCancellable *cancellable, GError **error)
{
        char **vm_and_id = data;

        return corral_task_record_set_session (vm_and_id[0], vm_and_id[1], error)
                       ? GINT_TO_POINTER (TRUE)
                       : NULL;
}

static void
on_session_recorded (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        /* Only reopening this task later depends on it; the task itself goes on. A task
         * without a record (its start could not write one) has nothing to add it to. */
        if (!corral_run_in_thread_finish (res, &error))
                g_message ("Could not record the task's session: %s", error->message);
}

/* Worker thread: the keychain and the file server can take a moment. */
static void
look_up (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        Making *m = data;
        g_autoptr (GError) error = NULL;
        g_autofree char *env_base = NULL;

        m->key = corral_llm_api_key_lookup_sync (m->kind, &env_base, cancellable, &error);
        if (!m->key && error) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        if ((!m->base_url || !*m->base_url) && env_base) {
                g_free (m->base_url);
                m->base_url = g_steal_pointer (&env_base);
        }
        if (m->resume) {
                g_autoptr (CorralTaskRecord) record = corral_task_record_load (m->vm_name, NULL);
                m->session_id = record ? g_strdup (record->session_id) : NULL;
        }
        /* Best effort: without them the model only knows less about its sandbox. */
        m->shares = corral_shares_list (m->vm_dir, NULL);
        m->names = corral_secret_store_list_session_names_sync (cancellable, NULL);
        g_task_return_boolean (task, TRUE);
}

static void
make_async (gboolean resume,
            CorralLlmProviderKind kind,
            const char *model,
            const char *base_url,
            CorralAgentClient *client,
            const char *vm_name,
            const char *vm_dir,
            gboolean unconfined_commands,
            GCancellable *cancellable,
            GAsyncReadyCallback callback,
            gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
        Making *m = g_new0 (Making, 1);

        m->resume = resume;
        m->kind = kind;
        m->model = model && *model                         ? g_strdup (model)
                   : kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? g_strdup ("claude-sonnet-4-5")
                                                           : g_strdup ("gpt-4.1");
        m->base_url = base_url && *base_url ? g_strdup (base_url) : NULL;
        m->client = g_object_ref (client);
        m->vm_name = g_strdup (vm_name);
        m->vm_dir = g_strdup (vm_dir);
        m->unconfined_commands = unconfined_commands;
        g_task_set_source_tag (task, make_async);
        g_task_set_task_data (task, m, (GDestroyNotify) making_free);
        g_task_run_in_thread (task, look_up);
}

void
corral_assistant_source_new_async (CorralLlmProviderKind kind,
                                   const char *model,
                                   const char *base_url,
                                   CorralAgentClient *client,
                                   const char *vm_name,
                                   const char *vm_dir,
                                   gboolean unconfined_commands,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (client));
        g_return_if_fail (vm_dir != NULL);
        make_async (FALSE, kind, model, base_url, client, vm_name, vm_dir, unconfined_commands,
                    cancellable, callback, user_data);
}

void
corral_assistant_source_resume_async (CorralLlmProviderKind kind,
                                      const char *model,
                                      const char *base_url,
                                      CorralAgentClient *client,
                                      const char *vm_name,
                                      const char *vm_dir,
                                      gboolean unconfined_commands,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data)
{
        g_return_if_fail (CORRAL_IS_AGENT_CLIENT (client));
        g_return_if_fail (vm_dir != NULL);
        make_async (TRUE, kind, model, base_url, client, vm_name, vm_dir, unconfined_commands,
                    cancellable, callback, user_data);
}

CorralAssistantSource *
corral_assistant_source_new_finish (GAsyncResult *result, GError **error)
{
        Making *m = g_task_get_task_data (G_TASK (result));
        g_autoptr (CorralLlmProvider) provider = NULL;
        g_autoptr (CorralAssistantSession) session = NULL;
        g_autoptr (GError) resume_error = NULL;
        CorralAssistantSource *self;

        g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);

        if (!g_task_propagate_boolean (G_TASK (result), error))
                return NULL;
        /* On this thread: the provider's HTTP session belongs to the main context. */
        provider = corral_llm_provider_new (m->kind, m->base_url, m->key, error);
        if (!provider)
                return NULL;
        if (m->resume && m->session_id)
                /* On this thread too: the session keeps the provider. Transcripts are bounded
                 * (assistant-store.h). */
                session = corral_assistant_session_resume (m->session_id, provider, m->client,
                                                           m->model, &resume_error);
        if (!session) {
                session = corral_assistant_session_new (provider, m->client, m->model);
                corral_run_in_thread (
                        record_session,
                        g_strdupv ((char *[]){ m->vm_name,
                                               (char *) corral_assistant_session_get_id (session),
                                               NULL }),
                        (GDestroyNotify) g_strfreev, NULL, NULL, on_session_recorded, NULL);
        }
        corral_assistant_session_set_vm (session, m->vm_name, m->vm_dir);
        /* Resumed sessions too: the setting is the task's; transcripts do not keep it. */
        corral_assistant_session_set_unconfined_commands (session, m->unconfined_commands);
        if (m->shares)
                corral_assistant_session_set_shares (session, m->shares);
        corral_assistant_session_set_credential_names (session, (const char *const *) m->names);
        self = corral_assistant_source_new (session);
        self->resumed = m->resume;
        self->vm_name = g_strdup (m->vm_name);
        if (m->resume && resume_error)
                self->restore_notice = g_strdup_printf (
                        /* Translators: %s says why, e.g. a file could not be read */
                        _ ("The earlier conversation could not be restored (%s). The assistant "
                           "starts afresh in the same workspace."),
                        resume_error->message);
        else if (m->resume && !m->session_id)
                self->restore_notice = g_strdup (
                        _ ("The earlier conversation could not be found. The assistant starts "
                           "afresh in the same workspace."));
        return self;
}

/* Restoring ------------------------------------------------------------------------------------ */

void
corral_assistant_source_set_computer (CorralAssistantSource *self, CorralComputer *computer)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SOURCE (self));
        corral_assistant_session_set_computer (self->session, computer);
}

void
corral_assistant_source_restore (CorralAssistantSource *self, CorralChatView *view)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SOURCE (self));
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (view));

        if (!self->resumed)
                return;
        if (self->restore_notice)
                corral_chat_view_add_notice (view, self->restore_notice);
        else
                corral_assistant_source_replay (
                        corral_assistant_session_get_conversation (self->session), view);
}

/* (transfer full) one line for people, as the assistant loop titles its cards */
static char *
replay_title (const CorralLlmBlock *use)
{
        static const char *const keys[] = { "command", "path", "host" };
        const cJSON *action = cJSON_GetObjectItemCaseSensitive (use->input, "action");
        g_autofree char *line = NULL;
        g_autofree char *valid = NULL;
        g_autofree char *cut = NULL;

        for (gsize i = 0; i < G_N_ELEMENTS (keys) && !line; i++) {
                const cJSON *item = cJSON_GetObjectItemCaseSensitive (use->input, keys[i]);
                if (cJSON_IsString (item))
                        line = g_strndup (item->valuestring, strcspn (item->valuestring, "\n"));
        }
        /* A question is titled "delete PATH" or "network HOST", as the loop titles it live. */
        if (g_strcmp0 (use->name, "request_approval") == 0 && line && cJSON_IsString (action) &&
            (g_str_equal (action->valuestring, "delete") ||
             g_str_equal (action->valuestring, "network"))) {
                char *titled = g_strdup_printf ("%s %s", action->valuestring, line);

                g_free (line);
                line = titled;
        }
        valid = g_utf8_make_valid (line ? line : use->name ? use->name : "", -1);
        if (g_utf8_strlen (valid, -1) <= TITLE_MAX)
                return g_steal_pointer (&valid);
        cut = g_utf8_substring (valid, 0, TITLE_MAX);
        return g_strdup_printf ("%s…", cut);
}

/* (transfer full) the finished card of a tool_use block and its result (nullable) */
static CorralChatTool *
replay_tool (const CorralLlmBlock *use, const CorralLlmBlock *result)
{
        g_autofree char *title = replay_title (use);
        CorralChatTool *tool = corral_chat_tool_new (use->id, use->name, title);
        const cJSON *command = cJSON_GetObjectItemCaseSensitive (use->input, "command");

        if (g_strcmp0 (use->name, "shell") == 0 && cJSON_IsString (command))
                tool->command = g_utf8_make_valid (command->valuestring, -1);
        tool->summary = summary_of (use->name, use->input);
        tool->finished = TRUE;
        if (result) {
                g_autoptr (GPtrArray) blocked = NULL;
                int exit_code = -1;

                tool->output = g_utf8_make_valid (result->text ? result->text : "", -1);
                tool->is_error = result->is_error;
                /* A question's answer: "You allowed it", "You said no". */
                tool->outcome = g_strdup (result->outcome);
                /* What the live card showed: the exit status and the sandbox's refusals. */
                corral_assistant_result_describe (tool->output, &exit_code, &blocked);
                if (tool->command)
                        tool->exit_code = exit_code;
                for (guint i = 0; i < blocked->len; i++)
                        g_ptr_array_add (tool->blocked, g_steal_pointer (&blocked->pdata[i]));
        } else {
                tool->output = g_strdup (_ ("The task was interrupted before this finished."));
                tool->is_error = TRUE;
        }
        return tool;
}

/* (transfer container) tool_use id -> its TOOL_RESULT block */
static GHashTable *
index_results (const CorralLlmConversation *conv)
{
        GHashTable *results = g_hash_table_new (g_str_hash, g_str_equal);

        for (guint i = 0; i < conv->messages->len; i++) {
                const CorralLlmMessage *msg = conv->messages->pdata[i];

                for (guint j = 0; j < msg->blocks->len; j++) {
                        const CorralLlmBlock *b = msg->blocks->pdata[j];
                        if (b->type == CORRAL_LLM_BLOCK_TOOL_RESULT && b->id)
                                g_hash_table_insert (results, b->id, (gpointer) b);
                }
        }
        return results;
}

void
corral_assistant_source_replay (const CorralLlmConversation *conv, CorralChatView *view)
{
        g_autoptr (GHashTable) results = NULL;

        g_return_if_fail (conv != NULL);
        g_return_if_fail (CORRAL_IS_CHAT_VIEW (view));

        results = index_results (conv);
        for (guint i = 0; i < conv->messages->len; i++) {
                const CorralLlmMessage *msg = conv->messages->pdata[i];

                for (guint j = 0; j < msg->blocks->len; j++) {
                        const CorralLlmBlock *b = msg->blocks->pdata[j];
                        g_autoptr (CorralChatTool) tool = NULL;

                        if (b->type == CORRAL_LLM_BLOCK_TEXT && b->text &&
                            msg->role == CORRAL_LLM_ROLE_USER)
                                corral_chat_view_add_restored_user_message (view, b->text);
                        else if (b->type == CORRAL_LLM_BLOCK_TEXT && b->text)
                                corral_chat_view_add_restored_reply (view, b->text);
                        else if (b->type == CORRAL_LLM_BLOCK_TOOL_USE && b->id) {
                                tool = replay_tool (b, g_hash_table_lookup (results, b->id));
                                corral_chat_view_add_restored_tool (view, tool);
                        }
                }
        }
}
