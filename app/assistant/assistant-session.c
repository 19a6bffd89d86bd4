/* assistant-session.c — CorralAssistantSession: what a session holds, its signals and its settings.
 * The task loop itself is in assistant-loop.c.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "assistant-prompt.h"

#include <glib/gi18n-lib.h>

enum {
        SIGNAL_TEXT_DELTA,
        SIGNAL_STREAM_RESTARTED,
        SIGNAL_TOOL_STARTED,
        SIGNAL_TOOL_FINISHED,
        SIGNAL_APPROVAL_REQUESTED,
        SIGNAL_NOTICE,
        SIGNAL_HELP_REQUESTED,
        N_SIGNALS
};

static guint signals[N_SIGNALS];

G_DEFINE_FINAL_TYPE (CorralAssistantSession, corral_assistant_session, G_TYPE_OBJECT)

static void
corral_assistant_session_dispose (GObject *object)
{
        CorralAssistantSession *self = CORRAL_ASSISTANT_SESSION (object);

        g_clear_object (&self->provider);
        g_clear_object (&self->client);
        g_clear_object (&self->mcp);
        g_clear_object (&self->computer);
        G_OBJECT_CLASS (corral_assistant_session_parent_class)->dispose (object);
}

static void
corral_assistant_session_finalize (GObject *object)
{
        CorralAssistantSession *self = CORRAL_ASSISTANT_SESSION (object);

        g_clear_pointer (&self->conv, corral_llm_conversation_free);
        g_clear_pointer (&self->store, assistant_store_free);
        g_clear_pointer (&self->shares, g_ptr_array_unref);
        g_clear_pointer (&self->task_rules, g_ptr_array_unref);
        g_strfreev (self->credential_names);
        g_free (self->vm_name);
        g_free (self->vm_dir);
        G_OBJECT_CLASS (corral_assistant_session_parent_class)->finalize (object);
}

static void
corral_assistant_session_class_init (CorralAssistantSessionClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_assistant_session_dispose;
        object_class->finalize = corral_assistant_session_finalize;
        signals[SIGNAL_TEXT_DELTA] =
                g_signal_new ("text-delta", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_STREAM_RESTARTED] =
                g_signal_new ("stream-restarted", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_TOOL_STARTED] =
                g_signal_new ("tool-started", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                              NULL, NULL, G_TYPE_NONE, 1, CORRAL_TYPE_ASSISTANT_TOOL_CARD);
        signals[SIGNAL_TOOL_FINISHED] =
                g_signal_new ("tool-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 1, CORRAL_TYPE_ASSISTANT_TOOL_CARD);
        signals[SIGNAL_APPROVAL_REQUESTED] =
                g_signal_new ("approval-requested", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 1, CORRAL_TYPE_ASSISTANT_APPROVAL);
        signals[SIGNAL_NOTICE] =
                g_signal_new ("notice", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_HELP_REQUESTED] =
                g_signal_new ("help-requested", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                              NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
corral_assistant_session_init (CorralAssistantSession *self)
{
        self->max_steps = CORRAL_ASSISTANT_DEFAULT_MAX_STEPS;
        self->shell_default_timeout_s = 120;
        self->shell_max_timeout_s = 1800;
        self->shell_head_tail = 8 * 1024;
        self->task_rules = g_ptr_array_new_with_free_func (g_free);
}

static CorralAssistantSession *
session_new (CorralLlmProvider *provider, CorralAgentClient *client, const char *model)
{
        CorralAssistantSession *self = g_object_new (CORRAL_TYPE_ASSISTANT_SESSION, NULL);

        self->provider = g_object_ref (provider);
        self->client = g_object_ref (client);
        self->conv = corral_llm_conversation_new (model, CORRAL_ASSISTANT_DEFAULT_MAX_TOKENS);
        return self;
}

CorralAssistantSession *
corral_assistant_session_new (CorralLlmProvider *provider,
                              CorralAgentClient *client,
                              const char *model)
{
        CorralAssistantSession *self;

        g_return_val_if_fail (CORRAL_IS_LLM_PROVIDER (provider), NULL);
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (client), NULL);
        g_return_val_if_fail (model != NULL, NULL);
        self = session_new (provider, client, model);
        self->store = assistant_store_new ();
        return self;
}

CorralAssistantSession *
corral_assistant_session_resume (const char *id,
                                 CorralLlmProvider *provider,
                                 CorralAgentClient *client,
                                 const char *model,
                                 GError **error)
{
        g_autoptr (CorralAssistantSession) self = NULL;
        AssistantStore *store;

        g_return_val_if_fail (CORRAL_IS_LLM_PROVIDER (provider), NULL);
        g_return_val_if_fail (CORRAL_IS_AGENT_CLIENT (client), NULL);
        g_return_val_if_fail (model != NULL, NULL);
        if (!(store = assistant_store_open (id, error)))
                return NULL;
        self = session_new (provider, client, model);
        self->store = store;
        if (!assistant_store_replay (store, self->conv, &self->task_number, error))
                return NULL;
        return g_steal_pointer (&self);
}

const char *
corral_assistant_session_get_id (CorralAssistantSession *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), NULL);
        return assistant_store_get_id (self->store);
}

const char *
corral_assistant_session_get_dir (CorralAssistantSession *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), NULL);
        return assistant_store_get_dir (self->store);
}

const CorralLlmConversation *
corral_assistant_session_get_conversation (CorralAssistantSession *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), NULL);
        return self->conv;
}

void
corral_assistant_session_set_vm (CorralAssistantSession *self, const char *name, const char *vm_dir)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_return_if_fail ((name == NULL) == (vm_dir == NULL));
        g_free (self->vm_name);
        g_free (self->vm_dir);
        self->vm_name = g_strdup (name);
        self->vm_dir = g_strdup (vm_dir);
}

const char *
corral_assistant_session_get_vm_dir (CorralAssistantSession *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), NULL);
        return self->vm_dir;
}

static CorralShare *
share_copy (const CorralShare *s)
{
        CorralShare *copy = g_new0 (CorralShare, 1);

        copy->name = g_strdup (s->name);
        copy->path = g_strdup (s->path);
        copy->mode = s->mode;
        copy->protect = g_strdupv (s->protect);
        return copy;
}

void
corral_assistant_session_set_shares (CorralAssistantSession *self, GPtrArray *shares)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_clear_pointer (&self->shares, g_ptr_array_unref);
        if (!shares)
                return;
        self->shares = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_share_free);
        for (guint i = 0; i < shares->len; i++)
                g_ptr_array_add (self->shares, share_copy (shares->pdata[i]));
}

void
corral_assistant_session_set_credential_names (CorralAssistantSession *self,
                                               const char *const *names)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_strfreev (self->credential_names);
        self->credential_names = g_strdupv ((char **) names);
}

void
corral_assistant_session_set_mcp_manager (CorralAssistantSession *self, CorralMcpManager *manager)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_set_object (&self->mcp, manager);
}

void
corral_assistant_session_set_computer (CorralAssistantSession *self, CorralComputer *computer)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_set_object (&self->computer, computer);
}

void
corral_assistant_session_set_max_steps (CorralAssistantSession *self, guint max_steps)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_return_if_fail (max_steps > 0);
        self->max_steps = max_steps;
}

void
corral_assistant_session_set_unconfined_commands (CorralAssistantSession *self, gboolean unconfined)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        self->unconfined_commands = unconfined;
}

gboolean
corral_assistant_session_get_unconfined_commands (CorralAssistantSession *self)
{
        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), FALSE);
        return self->unconfined_commands;
}

void
corral_assistant_session_set_shell_limits (CorralAssistantSession *self,
                                           guint default_timeout_s,
                                           guint max_timeout_s,
                                           gsize output_head_tail)
{
        g_return_if_fail (CORRAL_IS_ASSISTANT_SESSION (self));
        g_return_if_fail (default_timeout_s > 0 && default_timeout_s <= max_timeout_s);
        g_return_if_fail (output_head_tail > 0 && output_head_tail <= 1024 * 1024);
        self->shell_default_timeout_s = default_timeout_s;
        self->shell_max_timeout_s = max_timeout_s;
        self->shell_head_tail = output_head_tail;
}

char *
corral_assistant_session_build_system_prompt (CorralAssistantSession *self)
{
        g_autoptr (CorralEgressPolicy) policy = NULL;
        g_autoptr (GPtrArray) mcp_names = g_ptr_array_new ();
        g_autoptr (GPtrArray) undone = NULL;
        AssistantPromptInfo info = { 0 };

        g_return_val_if_fail (CORRAL_IS_ASSISTANT_SESSION (self), NULL);
        if (self->vm_dir)
                policy = assistant_prompt_load_policy (self->vm_dir);
        for (guint i = 0; self->mcp && i < corral_mcp_manager_get_tools (self->mcp)->len; i++)
                g_ptr_array_add (mcp_names,
                                 ((CorralMcpExposedTool *) corral_mcp_manager_get_tools (self->mcp)
                                          ->pdata[i])
                                         ->name);
        g_ptr_array_add (mcp_names, NULL);
        info.vm_name = self->vm_name;
        info.shares = self->shares;
        info.policy = policy;
        info.credential_names = (const char *const *) self->credential_names;
        info.mcp_tools = (const char *const *) mcp_names->pdata;
        if (self->vm_dir) {
                undone = assistant_prompt_undone (self->vm_dir, 50);
                g_ptr_array_add (undone, NULL);
                info.undone = (const char *const *) undone->pdata;
        }
        return assistant_prompt_build (&info);
}

/* For the other parts of the loop ---------------------------------------------------------------- */

gboolean
assistant_session_emit_approval (CorralAssistantSession *self, CorralAssistantApproval *approval)
{
        if (!g_signal_has_handler_pending (self, signals[SIGNAL_APPROVAL_REQUESTED], 0, FALSE))
                return FALSE;
        g_signal_emit (self, signals[SIGNAL_APPROVAL_REQUESTED], 0, approval);
        return TRUE;
}

void
assistant_session_emit_text (CorralAssistantSession *self, const char *text)
{
        g_signal_emit (self, signals[SIGNAL_TEXT_DELTA], 0, text);
}

void
assistant_session_emit_restarted (CorralAssistantSession *self)
{
        g_signal_emit (self, signals[SIGNAL_STREAM_RESTARTED], 0);
}

void
assistant_session_emit_card (CorralAssistantSession *self,
                             CorralAssistantToolCard *card,
                             gboolean finished)
{
        g_signal_emit (self, signals[finished ? SIGNAL_TOOL_FINISHED : SIGNAL_TOOL_STARTED], 0,
                       card);
}

void
assistant_session_emit_notice (CorralAssistantSession *self, const char *text)
{
        g_signal_emit (self, signals[SIGNAL_NOTICE], 0, text);
}

void
assistant_session_emit_help (CorralAssistantSession *self, const char *request)
{
        g_signal_emit (self, signals[SIGNAL_HELP_REQUESTED], 0, request);
}

gboolean
assistant_session_has_help_handler (CorralAssistantSession *self)
{
        return g_signal_has_handler_pending (self, signals[SIGNAL_HELP_REQUESTED], 0, FALSE);
}
